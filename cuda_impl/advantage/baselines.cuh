// The baseline-subtracting outcome estimators on CCCL, float32
// (oracle/advantage/baselines.h): one score per sequence (the whole row's reward sum),
// minus a baseline from its prompt group, broadcast over the response mask. Templates
// over the Thrust execution policy (cuda_impl/core/system.cuh).
#pragma once

#include <thrust/count.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/returns.cuh"
#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// Per-row value of an estimator from the row's score, its group's sum and size.
template <class F>
struct GroupedRow {
  const float* s;
  const float* group_sum;
  const float* count;
  const RowIndex* group_of;
  F f;
  __host__ __device__ float operator()(int64_t i) const {
    const RowIndex g = group_of[i];
    return f(s[i], group_sum[g], count[g]);
  }
};

// s_i - mean_g, mean 0 for a singleton (reinforce_plus_plus_baseline, gpg's centring).
struct CenteredOnGroupMean {
  __host__ __device__ float operator()(float s, float sum, float n) const { return n > 1.0f ? s - sum / n : s; }
};

// rloo's loop: s n/(n-1) - mean n/(n-1) for n > 1 (verl's operation order), the score
// itself for a singleton.
struct RlooLoop {
  __host__ __device__ float operator()(float s, float sum, float n) const {
    if (!(n > 1.0f)) return s;
    const float mean = sum / n;
    return s * n / (n - 1.0f) - mean * n / (n - 1.0f);
  }
};

// rloo_vectorized: (n s - sum) / max(n - 1, 1) * [n > 1].
struct RlooVectorized {
  __host__ __device__ float operator()(float s, float sum, float n) const {
    return (n * s - sum) / fmaxf(n - 1.0f, 1.0f) * (n > 1.0f ? 1.0f : 0.0f);
  }
};

// gpg: alpha (s - mean_g) / f_norm, mean 0 for a singleton.
struct GpgRow {
  float alpha, f_norm;
  __host__ __device__ float operator()(float s, float sum, float n) const {
    return alpha * CenteredOnGroupMean()(s, sum, n) / f_norm;
  }
};

// Per-row values f(s_i, sum_g, n_g) of the scores of a batch, then broadcast times the
// mask into out: the shape every group-mean estimator shares.
template <class Policy, class F>
void GroupMeanEstimator(Policy& policy, const float* rewards, const float* mask, const int64_t* index, int64_t rows,
                        int64_t cols, F f, float* out, const float* s_given = nullptr) {
  using P = std::remove_reference_t<Policy>;
  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> s(policy, rows), a(policy, rows), sum(policy, rows);
  const float* scores = s_given;
  if (!scores) {
    RowSums(policy, rewards, rows, cols, s.get());
    scores = s.get();
  }
  GroupReduce(policy, g, scores, sum.get());
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows), a.get(),
                    GroupedRow<F>{scores, sum.get(), g.count.get(), g.group_of.get(), f});
  RowsTimesMask(policy, a.get(), mask, rows, cols, out);
}

// verl: compute_reinforce_plus_plus_baseline_outcome_advantage.
// masked_whiten((s_i - mean_g) m) * m over the whole batch's valid tokens.
template <class Policy>
void reinforce_plus_plus_baseline_advantage(Policy&& policy, const float* rewards, const float* mask,
                                            const int64_t* index, int64_t rows, int64_t cols, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  GroupMeanEstimator(policy, rewards, mask, index, rows, cols, CenteredOnGroupMean(), advantages);
  WhitenInPlace(policy, advantages, mask, rows * cols, /*times_mask=*/true);
}

// verl: compute_rloo_outcome_advantage (the loop).
template <class Policy>
void rloo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                            int64_t rows, int64_t cols, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  GroupMeanEstimator(policy, rewards, mask, index, rows, cols, RlooLoop(), advantages);
}

// verl: compute_rloo_vectorized_outcome_advantage.
template <class Policy>
void rloo_vectorized_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                       int64_t rows, int64_t cols, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  GroupMeanEstimator(policy, rewards, mask, index, rows, cols, RlooVectorized(), advantages);
}

// (|y_i| s_i, |y_i|): the sums of opo's length-weighted baseline.
struct OpoTerms {
  const float* s;
  const float* len;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t i) const {
    return thrust::make_tuple(len[i] * s[i], len[i]);
  }
};

// s_i - b_g, b_g = sum |y| s / sum |y| for n > 1 (0/0 = NaN for a group of empty rows,
// as in verl), 0 for a singleton.
struct OpoRow {
  const float* s;
  const float* num;
  const float* den;
  const float* count;
  const RowIndex* group_of;
  __host__ __device__ float operator()(int64_t i) const {
    const RowIndex g = group_of[i];
    return s[i] - (count[g] > 1.0f ? num[g] / den[g] : 0.0f);
  }
};

// verl: compute_opo_outcome_advantage.
template <class Policy>
void opo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index, int64_t rows,
                           int64_t cols, float* advantages) {
  using P = std::remove_reference_t<Policy>;
  if (rows <= 0 || cols <= 0) return;
  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> s(policy, rows), len(policy, rows), a(policy, rows), num(policy, rows), den(policy, rows);
  RowSums(policy, rewards, rows, cols, s.get());
  RowSums(policy, mask, rows, cols, len.get());
  auto terms = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), OpoTerms{s.get(), len.get()});
  GroupReduce(policy, g, terms, thrust::make_zip_iterator(thrust::make_tuple(num.get(), den.get())));
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows), a.get(),
                    OpoRow{s.get(), num.get(), den.get(), g.count.get(), g.group_of.get()});
  RowsTimesMask(policy, a.get(), mask, rows, cols, advantages);
}

// returns_{i,t} - b_i m_{i,t}.
struct RemaxToken {
  const float* returns;
  const float* baselines;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t k) const { return returns[k] - baselines[k / cols] * mask[k]; }
};

// verl: compute_remax_outcome_advantage. returns = masked reward-to-go; advantages =
// returns - b_i m.
template <class Policy>
void remax_outcome_advantage(Policy&& policy, const float* rewards, const float* reward_baselines, const float* mask,
                             int64_t rows, int64_t cols, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  MaskedRewardToGo(policy, rewards, mask, rows, cols, returns);
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), advantages,
                    RemaxToken{returns, reward_baselines, mask, cols});
}

struct NonZero {
  __host__ __device__ bool operator()(float v) const { return v != 0.0f; }
};

// gpg's alpha as verl forms it: B / clamp(#nonzero, 1) as a float32 tensor, evaluated
// as reciprocal() * B (two float32 roundings).
inline float GpgAlpha(int64_t rows, int64_t nonzero) {
  const float reciprocal = 1.0f / static_cast<float>(std::max<int64_t>(nonzero, 1));
  return reciprocal * static_cast<float>(rows);
}

// verl: compute_gpg_outcome_advantage. alpha (s_i - mean_g) / f_norm; verl's alpha
// argument is overwritten, its group std never used.
template <class Policy>
void gpg_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index, int64_t rows,
                           int64_t cols, float f_norm, float* advantages) {
  using P = std::remove_reference_t<Policy>;
  if (rows <= 0 || cols <= 0) return;
  PolicyScratch<float, P> s(policy, rows);
  RowSums(policy, rewards, rows, cols, s.get());
  const int64_t nonzero = thrust::count_if(policy, s.get(), s.get() + rows, NonZero());
  GroupMeanEstimator(policy, rewards, mask, index, rows, cols, GpgRow{GpgAlpha(rows, nonzero), f_norm}, advantages,
                     s.get());
}

}  // namespace verlconf::cuda
