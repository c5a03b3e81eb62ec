// What the policy losses' CUDA implementations share: torch's rules at the kinks in
// float32 (oracle/core/torch_rules.h), the masked sums their metrics are made of, the
// final scaling of d L / d x by agg_loss's W, and (host side) reading a case's policy
// loss inputs into a system's memory and packing a Result as the oracle's entries do.
#pragma once

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "oracle/core/case.h"
#include "oracle/core/errors.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::cuda {

// std::max / std::min exactly (the oracle's choice for torch.max / torch.min of two
// tensors): the first argument wins a comparison with NaN.
__host__ __device__ inline float StdMax(float a, float b) { return (a < b) ? b : a; }
__host__ __device__ inline float StdMin(float a, float b) { return (b < a) ? b : a; }
__host__ __device__ inline float StdClamp(float x, float lo, float hi) { return StdMin(StdMax(x, lo), hi); }
// torch.clamp with scalar bounds passes the gradient strictly inside them only.
__host__ __device__ inline float ClampPasses(float x, float lo, float hi) { return (x > lo && x < hi) ? 1.0f : 0.0f; }
// torch.maximum / torch.minimum split a tie's gradient equally.
__host__ __device__ inline float MaxShareA(float a, float b) { return a > b ? 1.0f : (a == b ? 0.5f : 0.0f); }
__host__ __device__ inline float MinShareA(float a, float b) { return a < b ? 1.0f : (a == b ? 0.5f : 0.0f); }

// verl's masked_mean from its two sums, in float32 as verl computes it.
inline float MaskedMeanOf(float masked_sum, float mask_sum) { return masked_sum / (mask_sum + kMaskedMeanEps); }

// (k, d L_k / d x_k) -> factor * W_k * d L_k / d x_k: the gradient of factor * agg_loss(L).
struct TimesAggWeight {
  AggWeight w;
  float factor;
  __host__ __device__ float operator()(const thrust::tuple<int64_t, float>& kd) const {
    return factor * w(thrust::get<0>(kd)) * thrust::get<1>(kd);
  }
};

// grad[k] = factor * W_k * grad[k] in place: grad holds d L / d x on entry.
template <class Policy>
void ScaleByAggWeight(Policy&& policy, const AggPlan& plan, const float* mask, float* grad, int64_t rows, int64_t cols,
                      AggMode mode, float factor = 1.0f) {
  auto kd = thrust::make_zip_iterator(
      thrust::make_tuple(thrust::counting_iterator<int64_t>(0), static_cast<const float*>(grad)));
  thrust::transform(policy, kd, kd + rows * cols, grad, TimesAggWeight{AggWeightOf(plan, mask, cols, mode), factor});
}

// ---- host side: the registry entries ----

// A policy loss's inputs (oracle::PolicyLossInputs) in the memory of a system.
struct PolicyLossBuffers {
  PolicyLossBuffers(System system, const oracle::PolicyLossInputs& in)
      : old_log_prob(system, ToFloat(in.old_log_prob)),
        log_prob(system, ToFloat(in.log_prob)),
        advantages(system, ToFloat(in.advantages)),
        mask(system, ToFloat(in.response_mask)),
        rows(in.response_mask.rows()),
        cols(in.response_mask.cols()) {
    if (in.rollout_is_weights) weights.emplace(system, ToFloat(*in.rollout_is_weights));
  }
  SystemBuffer<float> old_log_prob, log_prob, advantages, mask;
  std::optional<SystemBuffer<float>> weights;
  int64_t rows, cols;
};

// verl's dual-clip assertion in compute_policy_loss_vanilla (as the oracle raises it).
inline void CheckDualClip(double clip_ratio_c) {
  if (!(clip_ratio_c > 1.0))
    throw VerlError("AssertionError",
                    "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get "
                    "the value: " +
                        std::to_string(clip_ratio_c) + ".");
}

// oracle::PackPolicyLoss's layout without `boundary`: threshold decisions are the
// judge's, taken from the oracle alone.
inline Result PackPolicyLoss(float loss, const SystemBuffer<float>& grad, const std::vector<int64_t>& shape,
                             std::map<std::string, double> metrics, DType dtype) {
  Result r;
  r.outputs["pg_loss"] = Array::Scalar(static_cast<double>(loss), dtype);
  r.grads["log_prob"] = FromFloat(grad.ToHost(), shape, dtype);
  r.metrics = std::move(metrics);
  return r;
}

}  // namespace verlconf::cuda
