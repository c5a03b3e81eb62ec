// The policy losses of core_algos.py outside POLICY_LOSS_REGISTRY on CCCL in float32, as
// oracle/policy_loss/legacy.h states them: compute_policy_loss_reinforce here; the
// deprecated compute_policy_loss is vanilla.cuh's loss without IS weights or global
// batch arguments (its entry in spec_legacy.cu).
#pragma once

#include <cstdint>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"

namespace verlconf::cuda {

// A token as the fused pass takes it: L = -A * log_prob * w, d L / d log_prob = -A * w,
// and ppo_kl's term -(log_prob - rollout_log_prob) (no clamp).
__host__ __device__ inline AggTokenValues ReinforceTokenValues(float rollout_lp, float lp, float A, float w) {
  return {-A * lp * w, -A * w, {0.0f, -(lp - rollout_lp), 0.0f}};
}

// The token at flat index k as the fused pass takes it.
template <class WeightIt>
struct ReinforceFusedToken {
  const float* rollout_log_prob;
  const float* log_prob;
  const float* advantages;
  WeightIt weights;
  __host__ __device__ AggTokenValues operator()(int64_t k) const {
    return ReinforceTokenValues(rollout_log_prob[k], log_prob[k], advantages[k], weights[k]);
  }
};

// pg_loss, its gradient (into grad) and actor/ppo_kl; `weights` iterates the rollout IS
// weights (a constant 1 when there are none: -A * lp * 1 is -A * lp exactly). The mask's
// row sums where the mode needs them, then one fused row pass (agg_loss.cuh).
template <class Policy, class WeightIt>
PolicyLossScalars policy_loss_reinforce(Policy&& policy, [[maybe_unused]] System system, const float* rollout_log_prob,
                                        const float* log_prob, const float* advantages, WeightIt weights,
                                        const float* mask, float* grad, int64_t rows, int64_t cols, AggMode mode,
                                        const AggGlobal& global) {
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  const FusedAggScalars f = FusedAggPass(policy, plan, mask, grad, rows, cols, mode,
                                         ReinforceFusedToken<WeightIt>{rollout_log_prob, log_prob, advantages, weights},
                                         TokenReadsWith<WeightIt>(rows * cols, 3));
  PolicyLossScalars o;
  o.loss = f.loss;
  o.ppo_kl = MaskedMeanOf(f.metric_sum[1], f.mask_sum);
  return o;
}

}  // namespace verlconf::cuda
