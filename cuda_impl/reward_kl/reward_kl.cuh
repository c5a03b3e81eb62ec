// Reward-side KL on CCCL, float32 (oracle/reward_kl/reward_kl.h): verl's
// ray_trainer.apply_kl_penalty and core_algos.compute_rewards, as templates over the
// Thrust execution policy (cuda_impl/core/system.cuh). The KL coefficient controllers
// are scalar updates and stay on the host (oracle::kl_controller_update). Each function
// is one row pass (cuda_impl/core/rows.cuh).
#pragma once

#include <thrust/tuple.h>

#include <cstdint>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/kl/kl_penalty.cuh"

namespace verlconf::cuda {

// scores - (old_log_prob - ref_log_prob) * kl_ratio.
struct RewardMinusK1 {
  float kl_ratio;
  __host__ __device__ float operator()(const thrust::tuple<float, float, float>& in) const {
    return thrust::get<0>(in) - (thrust::get<1>(in) - thrust::get<2>(in)) * kl_ratio;
  }
};

// Tokens per row of the row map over a flat array (its last row may be short).
constexpr int64_t kFlatCols = 8 * kRowThreads;

// out = RewardMinusK1 of every token, flat index k = i kFlatCols + t.
struct RewardMinusK1At {
  const float* scores;
  const float* old_log_prob;
  const float* ref_log_prob;
  float* out;
  int64_t n;
  float kl_ratio;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * kFlatCols + t;
    if (k < n) out[k] = RewardMinusK1{kl_ratio}(thrust::make_tuple(scores[k], old_log_prob[k], ref_log_prob[k]));
  }
};

// verl: core_algos.compute_rewards, on every token (no mask, always k1).
template <class Policy>
void compute_rewards(Policy&& policy, const float* scores, const float* old_log_prob, const float* ref_log_prob,
                     int64_t n, float kl_ratio, float* out) {
  if (n <= 0) return;
  RowMap(policy, (n + kFlatCols - 1) / kFlatCols, kFlatCols,
         RewardMinusK1At{scores, old_log_prob, ref_log_prob, out, n, kl_ratio},
         Footprint().Reads<float>(n, 3).Writes<float>(n));
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

// Token (i, t): writes its penalized reward and returns its row terms.
struct KlPenaltyToken {
  const float* scores;
  const float* old_log_probs;
  const float* ref_log_prob;
  const float* mask;
  float* token_level_rewards;
  int64_t cols;
  KlKind kind;
  float beta;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float old_lp = old_log_probs[k], ref = ref_log_prob[k], m = mask[k];
    token_level_rewards[k] = KlPenalizedReward{kind, beta}(thrust::make_tuple(scores[k], old_lp, ref, m));
    return KlRowTerms{kind}(thrust::make_tuple(old_lp, ref, m));
  }
};

// verl: ray_trainer.apply_kl_penalty, up to the controller update. Writes
// token_level_rewards = scores - beta kld and returns current_kl = mean over rows of
// masked_mean(kld, mask, axis=-1) (a fully masked row contributes 0 and counts): one
// row pass writing the rewards and each row's sums, the row means and their mean on the
// host (in double, in row order).
template <class Policy>
float apply_kl_penalty(Policy&& policy, const float* scores, const float* old_log_probs, const float* ref_log_prob,
                       const float* mask, int64_t rows, int64_t cols, KlKind kind, float beta,
                       float* token_level_rewards) {
  using Pair = thrust::tuple<float, float>;
  const int64_t n = rows * cols;
  if (rows <= 0) return 0.0f;
  const std::vector<Pair> row =
      RowPartials(policy, rows, cols, Pair(0.0f, 0.0f), TuplePlus(),
                  KlPenaltyToken{scores, old_log_probs, ref_log_prob, mask, token_level_rewards, cols, kind, beta},
                  Footprint().Reads<float>(n, 4).Writes<float>(n));
  double total = 0.0;
  for (const Pair& r : row) total += RowMaskedMean()(thrust::get<0>(r), thrust::get<1>(r));
  return static_cast<float>(total / static_cast<double>(rows));
}

}  // namespace verlconf::cuda
