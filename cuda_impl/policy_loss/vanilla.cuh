// verl's compute_policy_loss_vanilla ("vanilla": PPO with asymmetric and dual clip) on
// CCCL in float32, as oracle/policy_loss/vanilla.h states it: the mask's row sums where
// the mode needs them, then one row pass (agg_loss.cuh FusedAggPass) that reads each
// token's inputs once, writes d loss / d log_prob scaled by agg_loss's W, and sums the
// rows' loss and metric terms.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"

namespace verlconf::cuda {

constexpr float kPolicyLogRatioClamp = 20.0f;

// The clip bounds as torch sees them: Python floats cast to the tensor's float32.
struct VanillaParams {
  float lo;  // 1 - clip_ratio_low
  float hi;  // 1 + clip_ratio_high
  float c;   // clip_ratio_c
};

inline VanillaParams MakeVanillaParams(double clip_ratio_low, double clip_ratio_high, double clip_ratio_c) {
  return {static_cast<float>(1.0 - clip_ratio_low), static_cast<float>(1.0 + clip_ratio_high),
          static_cast<float>(clip_ratio_c)};
}

struct VanillaTokenValue {
  float loss, dloss;   // L (times the IS weight) and d L / d log_prob
  float neg_kl;        // -clamped log-ratio (ppo_kl's term)
  bool clipped;        // l2 > l1 (pg_clipfrac)
  bool clipped_lower;  // dual clip active (pg_clipfrac_lower)
};

// One token, the oracle's formula in float32 (torch's tie and clamp rules at the kinks).
__host__ __device__ inline VanillaTokenValue VanillaToken(const VanillaParams& p, float old_lp, float lp, float A,
                                                          float w) {
  VanillaTokenValue v;
  const float raw = lp - old_lp;
  const float d = StdClamp(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
  const float r = expf(d);
  const float l1 = -A * r;
  const float l2 = -A * StdClamp(r, p.lo, p.hi);
  const float c1 = StdMax(l1, l2);
  const float l3 = -A * p.c;
  const float c2 = StdMin(l3, c1);
  const bool negative = A < 0.0f;
  v.loss = (negative ? c2 : c1) * w;
  v.neg_kl = -d;
  v.clipped = l2 > l1;
  v.clipped_lower = c1 > l3 && negative;
  const float dc1_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, p.lo, p.hi);
  const float dsel_dr = negative ? MinShareA(c1, l3) * dc1_dr : dc1_dr;
  v.dloss = w * dsel_dr * r * ClampPasses(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
  return v;
}

// A token as the fused pass takes it: L (times the IS weight), d L / d log_prob, and the
// metric terms (pg_clipfrac's, ppo_kl's, pg_clipfrac_lower's).
__host__ __device__ inline AggTokenValues VanillaTokenValues(const VanillaParams& p, float old_lp, float lp, float A,
                                                             float w) {
  const VanillaTokenValue v = VanillaToken(p, old_lp, lp, A, w);
  return {v.loss, v.dloss, {v.clipped ? 1.0f : 0.0f, v.neg_kl, v.clipped_lower ? 1.0f : 0.0f}};
}

// The token at flat index k as the fused pass takes it.
template <class WeightIt>
struct VanillaFusedToken {
  VanillaParams p;
  const float* old_log_prob;
  const float* log_prob;
  const float* advantages;
  WeightIt weights;
  __host__ __device__ AggTokenValues operator()(int64_t k) const {
    return VanillaTokenValues(p, old_log_prob[k], log_prob[k], advantages[k], weights[k]);
  }
};

// pg_loss, its gradient (into grad, rows x cols) and the metrics. `weights` iterates the
// rollout IS weights (a constant 1 when there are none).
template <class Policy, class WeightIt>
PolicyLossScalars policy_loss_vanilla(Policy&& policy, [[maybe_unused]] System system, const float* old_log_prob,
                                      const float* log_prob, const float* advantages, WeightIt weights,
                                      const float* mask, float* grad, int64_t rows, int64_t cols,
                                      const VanillaParams& p, AggMode mode, const AggGlobal& global) {
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  const FusedAggScalars f = FusedAggPass(policy, plan, mask, grad, rows, cols, mode,
                                         VanillaFusedToken<WeightIt>{p, old_log_prob, log_prob, advantages, weights},
                                         TokenReadsWith<WeightIt>(rows * cols, 3));
  PolicyLossScalars o;
  o.loss = f.loss;
  o.pg_clipfrac = MaskedMeanOf(f.metric_sum[0], f.mask_sum);
  o.ppo_kl = MaskedMeanOf(f.metric_sum[1], f.mask_sum);
  o.pg_clipfrac_lower = MaskedMeanOf(f.metric_sum[2], f.mask_sum);
  return o;
}

}  // namespace verlconf::cuda
