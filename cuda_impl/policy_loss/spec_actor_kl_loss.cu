// The CUDA entry of actor_kl_loss (family policy_loss), Case in and Result out with the
// output, grad and metric of oracle/policy_loss/spec_actor_kl_loss.cc, in the cuda and
// cuda-host slots.
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/actor_kl_loss.cuh"
#include "oracle/kl/kl_penalty.h"

namespace verlconf::cuda {
namespace {

Result RunActorKlLoss(System system, const Case& c) {
  const Array& lp = c.Input("log_prob");
  const Array& ref = c.Input("ref_log_prob");
  const Array& mask = c.Input("response_mask");
  // The oracle's order of refusals: the kl type (verl raises for "full"), then agg_loss.
  const oracle::KlEstimator e = oracle::ParseKlName(c.config.String("kl_loss_type"));
  const double coef = c.config.Double("kl_loss_coef");
  const AggArgs agg = ReadAggArgs(c.config);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> d_lp(system, ToFloat(lp)), d_ref(system, ToFloat(ref)), d_mask(system, ToFloat(mask));
  SystemBuffer<float> d_grad(system, lp.data.size());
  ActorKlLoss out;
  RunEntry(system, [&](auto&& policy) {
    out =
        actor_kl_loss(policy, system, d_lp.data(), d_ref.data(), d_mask.data(), rows, cols, static_cast<KlKind>(e.kind),
                      e.straight_through, static_cast<float>(coef), agg.mode, agg.global, d_grad.data());
  });
  Result r;
  r.outputs["kl_term"] = Array::Scalar(static_cast<double>(out.term), c.dtype);
  r.grads["log_prob"] = FromFloat(d_grad.ToHost(), lp.shape, c.dtype);
  r.metrics["kl_loss"] = static_cast<double>(out.kl_loss);
  return r;
}

const bool registered = RegisterCudaEntry("policy_loss", "actor_kl_loss", RunActorKlLoss);

}  // namespace
}  // namespace verlconf::cuda
