// verl's compute_policy_loss_vanilla ("vanilla": PPO with asymmetric and dual clip) on
// CCCL in float32, as oracle/policy_loss/vanilla.h states it: one transform gives every
// token's loss and d loss / d log_prob, one transform_reduce the metrics' masked sums,
// then agg_loss and its W scale the gradient in place.
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
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

// (old_log_prob, log_prob, advantages, weight) -> (L, d L / d log_prob).
struct VanillaLossFn {
  VanillaParams p;
  __host__ __device__ thrust::tuple<float, float> operator()(
      const thrust::tuple<float, float, float, float>& in) const {
    const VanillaTokenValue v =
        VanillaToken(p, thrust::get<0>(in), thrust::get<1>(in), thrust::get<2>(in), thrust::get<3>(in));
    return thrust::make_tuple(v.loss, v.dloss);
  }
};

// (old_log_prob, log_prob, advantages, mask) -> the masked terms of pg_clipfrac, ppo_kl,
// pg_clipfrac_lower, and the mask (the means' denominator).
struct VanillaMetricFn {
  VanillaParams p;
  __host__ __device__ thrust::tuple<float, float, float, float> operator()(
      const thrust::tuple<float, float, float, float>& in) const {
    const float m = thrust::get<3>(in);
    const VanillaTokenValue v = VanillaToken(p, thrust::get<0>(in), thrust::get<1>(in), thrust::get<2>(in), 1.0f);
    return thrust::make_tuple(MaskedTerm(v.clipped ? 1.0f : 0.0f, m), MaskedTerm(v.neg_kl, m),
                              MaskedTerm(v.clipped_lower ? 1.0f : 0.0f, m), m);
  }
};

// pg_loss, its gradient (into grad, rows x cols) and the metrics. `weights` iterates the
// rollout IS weights (a constant 1 when there are none).
template <class Policy, class WeightIt>
PolicyLossScalars policy_loss_vanilla(Policy&& policy, System system, const float* old_log_prob, const float* log_prob,
                                      const float* advantages, WeightIt weights, const float* mask, float* grad,
                                      int64_t rows, int64_t cols, const VanillaParams& p, AggMode mode,
                                      const AggGlobal& global) {
  const int64_t n = rows * cols;
  SystemBuffer<float> losses(system, static_cast<size_t>(n)), row_sums(system, static_cast<size_t>(rows));
  auto in = thrust::make_zip_iterator(thrust::make_tuple(old_log_prob, log_prob, advantages, weights));
  auto out = thrust::make_zip_iterator(thrust::make_tuple(losses.data(), grad));
  thrust::transform(policy, in, in + n, out, VanillaLossFn{p});

  // The metrics re-derive each token's decisions (the same VanillaToken) instead of
  // storing clip flags: 16 bytes read per token rather than 8 written and 12 read back.
  auto mi = thrust::make_zip_iterator(thrust::make_tuple(old_log_prob, log_prob, advantages, mask));
  const thrust::tuple<float, float, float, float> sums =
      ChunkedTransformSum(policy, mi, n, VanillaMetricFn{p}, thrust::make_tuple(0.0f, 0.0f, 0.0f, 0.0f));

  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  ScaleByAggWeight(policy, plan, mask, grad, rows, cols, mode);
  PolicyLossScalars o;
  // Last: its scalar result waits for the stream, so the scratch may go.
  o.loss = agg_loss(policy, plan, losses.data(), mask, row_sums.data(), rows, cols, mode);
  const float mask_sum = thrust::get<3>(sums);
  o.pg_clipfrac = MaskedMeanOf(thrust::get<0>(sums), mask_sum);
  o.ppo_kl = MaskedMeanOf(thrust::get<1>(sums), mask_sum);
  o.pg_clipfrac_lower = MaskedMeanOf(thrust::get<2>(sums), mask_sum);
  return o;
}

}  // namespace verlconf::cuda
