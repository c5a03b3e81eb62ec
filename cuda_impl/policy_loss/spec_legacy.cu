// CUDA entries (cuda and cuda-host slots) for compute_policy_loss_reinforce and the
// deprecated compute_policy_loss, with the outputs, gradient and metrics of
// oracle/policy_loss/spec_legacy.cc.
#include <string>

#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/legacy.cuh"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::cuda {
namespace {

Result RunReinforce(System system, const Case& c) {
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return WithWeights(in, [&](auto weights) {
      return policy_loss_reinforce(policy, system, in.old_log_prob, in.log_prob, in.advantages, weights, in.mask, g,
                                   in.rows, in.cols, agg.mode, agg.global);
    });
  });
}

// verl's compute_policy_loss: vanilla's dual-clip PPO without IS weights and with
// agg_loss's default global-batch arguments; the tuple's metrics under bare names.
Result RunDeprecated(System system, const Case& c) {
  // cliprange_low / cliprange_high: None = cliprange (verl's rule).
  const double clip = c.config.Double("cliprange");
  const double low = c.config.OptionalDouble("cliprange_low").value_or(clip);
  const double high = c.config.OptionalDouble("cliprange_high").value_or(clip);
  const double clip_ratio_c = c.config.Double("clip_ratio_c");
  const std::string mode = c.config.String("loss_agg_mode");
  oracle::CheckDualClip(clip_ratio_c);
  const AggArgs agg = CheckedAggArgs(mode, oracle::GlobalBatchInfo{});  // agg_loss's keyword defaults
  const VanillaParams p = MakeVanillaParams(low, high, clip_ratio_c);
  const PolicyLossTensors t(system, c, /*with_weights=*/false);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_vanilla(policy, system, in.old_log_prob, in.log_prob, in.advantages,
                               thrust::make_constant_iterator(1.0f), in.mask, g, in.rows, in.cols, p, agg.mode,
                               agg.global);
  });
}

const bool registered = [] {
  RegisterCudaEntry("policy_loss", "compute_policy_loss_reinforce", RunReinforce);
  RegisterCudaEntry("policy_loss", "compute_policy_loss", RunDeprecated);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
