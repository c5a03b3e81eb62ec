// The "vanilla" policy loss's CUDA entry (cuda and cuda-host slots), with the outputs,
// gradient and metrics of oracle/policy_loss/spec_vanilla.cc.
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::cuda {
namespace {

Result RunVanilla(System system, const Case& c) {
  const oracle::VanillaConfig cfg = oracle::ReadVanillaConfig(c.config);
  // verl's order: the dual-clip assertion, then agg_loss's arguments.
  oracle::CheckDualClip(cfg.clip_ratio_c);
  const AggArgs agg = CheckedAggArgs(cfg.loss_agg_mode, cfg.global);
  const VanillaParams p = MakeVanillaParams(cfg.clip_ratio_low, cfg.clip_ratio_high, cfg.clip_ratio_c);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return WithWeights(in, [&](auto weights) {
      return policy_loss_vanilla(policy, system, in.old_log_prob, in.log_prob, in.advantages, weights, in.mask, g,
                                 in.rows, in.cols, p, agg.mode, agg.global);
    });
  });
}

const bool registered = RegisterCudaEntry("policy_loss", "vanilla", RunVanilla);

}  // namespace
}  // namespace verlconf::cuda
