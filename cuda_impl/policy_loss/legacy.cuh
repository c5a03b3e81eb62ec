// The policy losses of core_algos.py outside POLICY_LOSS_REGISTRY on CCCL in float32, as
// oracle/policy_loss/legacy.h states them: compute_policy_loss_reinforce here; the
// deprecated compute_policy_loss is vanilla.cuh's loss without IS weights or global
// batch arguments (its entry in spec_legacy.cu).
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <cstdint>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"

namespace verlconf::cuda {

// (log_prob, advantages, weight) -> (L = -A * log_prob * w, d L / d log_prob = -A * w).
struct ReinforceLossFn {
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float, float>& in) const {
    const float lp = thrust::get<0>(in), A = thrust::get<1>(in), w = thrust::get<2>(in);
    return thrust::make_tuple(-A * lp * w, -A * w);
  }
};

// (rollout_log_prob, log_prob, mask) -> (masked -(log_prob - rollout_log_prob), mask):
// ppo_kl's sums, no clamp.
struct ReinforceMetricFn {
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float, float>& in) const {
    const float m = thrust::get<2>(in);
    return thrust::make_tuple(MaskedTerm(-(thrust::get<1>(in) - thrust::get<0>(in)), m), m);
  }
};

// pg_loss, its gradient (into grad) and actor/ppo_kl; `weights` iterates the rollout IS
// weights (a constant 1 when there are none: -A * lp * 1 is -A * lp exactly).
template <class Policy, class WeightIt>
PolicyLossScalars policy_loss_reinforce(Policy&& policy, System system, const float* rollout_log_prob,
                                        const float* log_prob, const float* advantages, WeightIt weights,
                                        const float* mask, float* grad, int64_t rows, int64_t cols, AggMode mode,
                                        const AggGlobal& global) {
  const int64_t n = rows * cols;
  SystemBuffer<float> losses(system, static_cast<size_t>(n)), row_sums(system, static_cast<size_t>(rows));
  auto in = thrust::make_zip_iterator(thrust::make_tuple(log_prob, advantages, weights));
  auto out = thrust::make_zip_iterator(thrust::make_tuple(losses.data(), grad));
  thrust::transform(policy, in, in + n, out, ReinforceLossFn{});

  auto mi = thrust::make_zip_iterator(thrust::make_tuple(rollout_log_prob, log_prob, mask));
  const thrust::tuple<float, float> sums =
      ChunkedTransformSum(policy, mi, n, ReinforceMetricFn{}, thrust::make_tuple(0.0f, 0.0f));

  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  ScaleByAggWeight(policy, plan, mask, grad, rows, cols, mode);
  PolicyLossScalars o;
  // Last: its scalar result waits for the stream, so the scratch may go.
  o.loss = agg_loss(policy, plan, losses.data(), mask, row_sums.data(), rows, cols, mode);
  o.ppo_kl = MaskedMeanOf(thrust::get<0>(sums), thrust::get<1>(sums));
  return o;
}

}  // namespace verlconf::cuda
