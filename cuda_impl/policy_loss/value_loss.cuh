// verl's compute_value_loss (the critic's clipped value loss) on CCCL in float32, as
// oracle/policy_loss/value_loss.h states it: 0.5 * agg_loss of max(l1, l2), its gradient
// 0.5 W d / d vpreds and vf_clipfrac's sums in one fused row pass (agg_loss.cuh) after
// the mask's row sums where the mode needs them.
#pragma once

#include <cstdint>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"

namespace verlconf::cuda {

struct ValueTokenValue {
  float loss, dloss;  // max(l1, l2) and its d / d vpreds
  bool clipped;       // l2 > l1
};

// One token: vc = max(min(v, V + c), V - c) (verl_F.clip_by_value), l1 = (v - R)^2,
// l2 = (vc - R)^2, with torch's tie rules for min / max.
__host__ __device__ inline ValueTokenValue ValueToken(float c, float v, float R, float V) {
  ValueTokenValue t;
  const float hi = V + c, lo = V - c;
  const float m = StdMin(v, hi);
  const float vc = StdMax(m, lo);
  const float dvc = MinShareA(v, hi) * MaxShareA(m, lo);
  const float l1 = (v - R) * (v - R);
  const float l2 = (vc - R) * (vc - R);
  t.loss = StdMax(l1, l2);
  const float s = MaxShareA(l1, l2);
  t.dloss = s * 2.0f * (v - R) + (1.0f - s) * 2.0f * (vc - R) * dvc;
  t.clipped = l2 > l1;
  return t;
}

// The token at flat index k as the fused pass takes it: max(l1, l2), its d / d vpreds,
// and vf_clipfrac's term.
struct ValueFusedToken {
  float c;
  const float* vpreds;
  const float* returns;
  const float* values;
  __host__ __device__ AggTokenValues operator()(int64_t k) const {
    const ValueTokenValue t = ValueToken(c, vpreds[k], returns[k], values[k]);
    return {t.loss, t.dloss, {t.clipped ? 1.0f : 0.0f, 0.0f, 0.0f}};
  }
};

struct ValueLossOutputs {
  float loss;
  float vf_clipfrac;
};

// vf_loss, its gradient with respect to vpreds (into grad) and vf_clipfrac.
template <class Policy>
ValueLossOutputs compute_value_loss(Policy&& policy, [[maybe_unused]] System system, const float* vpreds,
                                    const float* returns, const float* values, const float* mask, float* grad,
                                    int64_t rows, int64_t cols, float cliprange_value, AggMode mode,
                                    const AggGlobal& global) {
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  const FusedAggScalars f = FusedAggPass(policy, plan, mask, grad, rows, cols, mode,
                                         ValueFusedToken{cliprange_value, vpreds, returns, values},
                                         Footprint().Reads<float>(rows * cols, 3), 0.5f);
  ValueLossOutputs o;
  o.loss = 0.5f * f.loss;
  o.vf_clipfrac = MaskedMeanOf(f.metric_sum[0], f.mask_sum);
  return o;
}

}  // namespace verlconf::cuda
