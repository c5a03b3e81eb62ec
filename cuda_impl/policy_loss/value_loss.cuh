// verl's compute_value_loss (the critic's clipped value loss) on CCCL in float32, as
// oracle/policy_loss/value_loss.h states it: one transform gives every token's
// max(l1, l2) and its d / d vpreds, one transform_reduce vf_clipfrac's sums, then
// 0.5 * agg_loss, with 0.5 * W scaling the gradient in place.
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

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

// (vpreds, returns, values) -> (max(l1, l2), d / d vpreds).
struct ValueLossFn {
  float c;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float, float>& in) const {
    const ValueTokenValue t = ValueToken(c, thrust::get<0>(in), thrust::get<1>(in), thrust::get<2>(in));
    return thrust::make_tuple(t.loss, t.dloss);
  }
};

// (vpreds, returns, values, mask) -> (masked [l2 > l1], mask).
struct ValueMetricFn {
  float c;
  __host__ __device__ thrust::tuple<float, float> operator()(
      const thrust::tuple<float, float, float, float>& in) const {
    const float m = thrust::get<3>(in);
    const ValueTokenValue t = ValueToken(c, thrust::get<0>(in), thrust::get<1>(in), thrust::get<2>(in));
    return thrust::make_tuple(MaskedTerm(t.clipped ? 1.0f : 0.0f, m), m);
  }
};

struct ValueLossOutputs {
  float loss;
  float vf_clipfrac;
};

// vf_loss, its gradient with respect to vpreds (into grad) and vf_clipfrac.
template <class Policy>
ValueLossOutputs compute_value_loss(Policy&& policy, System system, const float* vpreds, const float* returns,
                                    const float* values, const float* mask, float* grad, int64_t rows, int64_t cols,
                                    float cliprange_value, AggMode mode, const AggGlobal& global) {
  const int64_t n = rows * cols;
  SystemBuffer<float> losses(system, static_cast<size_t>(n)), row_sums(system, static_cast<size_t>(rows));
  auto in = thrust::make_zip_iterator(thrust::make_tuple(vpreds, returns, values));
  auto out = thrust::make_zip_iterator(thrust::make_tuple(losses.data(), grad));
  thrust::transform(policy, in, in + n, out, ValueLossFn{cliprange_value});

  auto mi = thrust::make_zip_iterator(thrust::make_tuple(vpreds, returns, values, mask));
  const thrust::tuple<float, float> sums =
      ChunkedTransformSum(policy, mi, n, ValueMetricFn{cliprange_value}, thrust::make_tuple(0.0f, 0.0f));

  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  ScaleByAggWeight(policy, plan, mask, grad, rows, cols, mode, 0.5f);
  ValueLossOutputs o;
  // Last: its scalar result waits for the stream, so the scratch may go.
  o.loss = 0.5f * agg_loss(policy, plan, losses.data(), mask, row_sums.data(), rows, cols, mode);
  o.vf_clipfrac = MaskedMeanOf(thrust::get<0>(sums), thrust::get<1>(sums));
  return o;
}

}  // namespace verlconf::cuda
