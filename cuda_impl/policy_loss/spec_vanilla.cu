// The "vanilla" policy loss's CUDA entry (cuda and cuda-host slots), with the outputs,
// gradient and metrics of oracle/policy_loss/spec_vanilla.cc.
#include <thrust/iterator/constant_iterator.h>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf::cuda {
namespace {

Result RunVanilla(System system, const Case& c) {
  const oracle::PolicyLossInputs in = oracle::ReadPolicyLossInputs(c);
  const oracle::VanillaConfig cfg = oracle::ReadVanillaConfig(c.config);
  // verl's order: the dual-clip assertion, then agg_loss's arguments.
  CheckDualClip(cfg.clip_ratio_c);
  oracle::CheckAggArguments(cfg.loss_agg_mode, cfg.global);
  const AggMode mode = ToAggMode(cfg.loss_agg_mode);
  const AggGlobal global = ToAggGlobal(cfg.global);
  const VanillaParams p = MakeVanillaParams(cfg.clip_ratio_low, cfg.clip_ratio_high, cfg.clip_ratio_c);
  PolicyLossBuffers b(system, in);
  SystemBuffer<float> grad(system, static_cast<size_t>(b.rows * b.cols));
  Workspace ws(system);
  StreamScope stream(system);
  VanillaOutputs o{};
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) {
    if (b.weights)
      o = policy_loss_vanilla(policy, system, b.old_log_prob.data(), b.log_prob.data(), b.advantages.data(),
                              static_cast<const float*>(b.weights->data()), b.mask.data(), grad.data(), b.rows, b.cols,
                              p, mode, global);
    else
      o = policy_loss_vanilla(policy, system, b.old_log_prob.data(), b.log_prob.data(), b.advantages.data(),
                              thrust::make_constant_iterator(1.0f), b.mask.data(), grad.data(), b.rows, b.cols, p, mode,
                              global);
  });
  return PackPolicyLoss(o.loss, grad, in.response_mask.shape,
                        {{"actor/pg_clipfrac", o.pg_clipfrac},
                         {"actor/ppo_kl", o.ppo_kl},
                         {"actor/pg_clipfrac_lower", o.pg_clipfrac_lower}},
                        c.dtype);
}

const bool registered = RegisterCudaEntry("policy_loss", "vanilla", RunVanilla);

}  // namespace
}  // namespace verlconf::cuda
