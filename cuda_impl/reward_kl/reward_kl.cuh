// Reward-side KL on CCCL, float32 (oracle/reward_kl/reward_kl.h): verl's
// ray_trainer.apply_kl_penalty and core_algos.compute_rewards, as templates over the
// Thrust execution policy (cuda_impl/core/system.cuh). The KL coefficient controllers
// are scalar updates and stay on the host (oracle::kl_controller_update).
#pragma once

#include <thrust/fill.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cstdint>
#include <type_traits>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/kl/kl_penalty.cuh"

namespace verlconf::cuda {

// scores - (old_log_prob - ref_log_prob) * kl_ratio.
struct RewardMinusK1 {
  float kl_ratio;
  __host__ __device__ float operator()(const thrust::tuple<float, float, float>& in) const {
    return thrust::get<0>(in) - (thrust::get<1>(in) - thrust::get<2>(in)) * kl_ratio;
  }
};

// verl: core_algos.compute_rewards, on every token (no mask, always k1).
template <class Policy>
void compute_rewards(Policy&& policy, const float* scores, const float* old_log_prob, const float* ref_log_prob,
                     int64_t n, float kl_ratio, float* out) {
  auto in = thrust::make_zip_iterator(thrust::make_tuple(scores, old_log_prob, ref_log_prob));
  thrust::transform(policy, in, in + n, out, RewardMinusK1{kl_ratio});
}

// kld = kl_penalty(old, ref) * mask, a plain product as verl's.
__host__ __device__ inline float MaskedKl(KlKind kind, float old_log_prob, float ref_log_prob, float m) {
  float value, grad;
  KlToken(kind, /*straight_through=*/false, old_log_prob, ref_log_prob, value, grad);
  return value * m;
}

// scores - beta kld.
struct KlPenalizedReward {
  KlKind kind;
  float beta;
  __host__ __device__ float operator()(const thrust::tuple<float, float, float, float>& in) const {
    return thrust::get<0>(in) - beta * MaskedKl(kind, thrust::get<1>(in), thrust::get<2>(in), thrust::get<3>(in));
  }
};

// (masked_sum term of kld, mask): a row's masked_mean sums.
struct KlRowTerms {
  KlKind kind;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float, float>& in) const {
    const float m = thrust::get<2>(in);
    return thrust::make_tuple(MaskedTerm(MaskedKl(kind, thrust::get<0>(in), thrust::get<1>(in), m), m), m);
  }
};

struct RowMaskedMean {
  __host__ __device__ float operator()(float sum, float mask_total) const {
    return sum / (mask_total + kMaskedMeanEps);
  }
};

// verl: ray_trainer.apply_kl_penalty, up to the controller update. Writes
// token_level_rewards = scores - beta kld and returns current_kl = mean over rows of
// masked_mean(kld, mask, axis=-1) (a fully masked row contributes 0 and counts).
template <class Policy>
float apply_kl_penalty(Policy&& policy, const float* scores, const float* old_log_probs, const float* ref_log_prob,
                       const float* mask, int64_t rows, int64_t cols, KlKind kind, float beta,
                       float* token_level_rewards) {
  using P = std::remove_reference_t<Policy>;
  const int64_t n = rows * cols;
  if (rows <= 0) return 0.0f;
  auto in = thrust::make_zip_iterator(thrust::make_tuple(scores, old_log_probs, ref_log_prob, mask));
  thrust::transform(policy, in, in + n, token_level_rewards, KlPenalizedReward{kind, beta});
  PolicyScratch<float, P> row_sum(policy, rows), row_mask(policy, rows);
  if (cols > 0) {
    auto terms = thrust::make_transform_iterator(
        thrust::make_zip_iterator(thrust::make_tuple(old_log_probs, ref_log_prob, mask)), KlRowTerms{kind});
    SegmentSums(policy, terms, n, cols, thrust::make_zip_iterator(thrust::make_tuple(row_sum.get(), row_mask.get())));
  } else {
    thrust::fill(policy, row_sum.get(), row_sum.get() + rows, 0.0f);
    thrust::fill(policy, row_mask.get(), row_mask.get() + rows, 0.0f);
  }
  thrust::transform(policy, row_sum.get(), row_sum.get() + rows, row_mask.get(), row_sum.get(), RowMaskedMean());
  return ChunkedSum(policy, row_sum.get(), rows, 0.0f) / static_cast<float>(rows);
}

}  // namespace verlconf::cuda
