// The critic's clipped value loss's CUDA entry (cuda and cuda-host slots), with the
// output, gradient and metric of oracle/policy_loss/spec_value_loss.cc.
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/value_loss.cuh"

namespace verlconf::cuda {
namespace {

Result RunValueLoss(System system, const Case& c) {
  const double cliprange_value = c.config.Double("cliprange_value");
  const AggArgs agg = ReadAggArgs(c.config);
  const Array& mask = c.Input("response_mask");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> vpreds(system, ToFloat(c.Input("vpreds"))), returns(system, ToFloat(c.Input("returns"))),
      values(system, ToFloat(c.Input("values"))), d_mask(system, ToFloat(mask));
  SystemBuffer<float> grad(system, static_cast<size_t>(rows * cols));
  ValueLossOutputs o{};
  RunEntry(system, [&](auto&& policy) {
    o = compute_value_loss(policy, system, vpreds.data(), returns.data(), values.data(), d_mask.data(), grad.data(),
                           rows, cols, static_cast<float>(cliprange_value), agg.mode, agg.global);
  });
  Result r;
  r.outputs["vf_loss"] = Array::Scalar(static_cast<double>(o.loss), c.dtype);
  r.grads["vpreds"] = FromFloat(grad.ToHost(), mask.shape, c.dtype);
  r.metrics["vf_clipfrac"] = o.vf_clipfrac;
  return r;
}

const bool registered = RegisterCudaEntry("policy_loss", "compute_value_loss", RunValueLoss);

}  // namespace
}  // namespace verlconf::cuda
