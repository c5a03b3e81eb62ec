// The baseline-subtracting outcome estimators on CCCL, float32
// (oracle/advantage/baselines.h): one score per sequence (the whole row's reward sum),
// minus a baseline from its prompt group, broadcast over the response mask. Templates
// over the Thrust execution policy (cuda_impl/core/system.cuh).
//
// Each is one row pass for the scores (RowPartials), the group sums and the per-row
// values on the host (groups.cuh), and one row map writing the advantages; remax is a
// single reverse row scan writing both of its outputs.
#pragma once

#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/returns.cuh"
#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

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

// f(s_i, sum_g, n_g) for every row, on the host.
template <class F>
std::vector<float> GroupMeanValues(const HostGroups& g, const std::vector<float>& s, F f) {
  const GroupStats stats = GroupMeanStd(g, s);
  const GroupedRow<F> row{s.data(), stats.sum.data(), g.count.data(), g.group_of.data(), f};
  std::vector<float> a(s.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = row(static_cast<int64_t>(i));
  return a;
}

// The shape every group-mean estimator shares: the scores (one row pass), the per-row
// values on the host, broadcast times the mask into out (one row map).
template <class Policy, class F>
void GroupMeanEstimator(Policy& policy, const float* rewards, const float* mask, const int64_t* index, int64_t rows,
                        int64_t cols, F f, float* out) {
  HostGroups g;
  const std::vector<float> s = RowSums(policy, rewards, rows, cols, index, &g);
  RowsTimesMask(policy, GroupMeanValues(g, s, f), mask, rows, cols, out);
}

// verl: compute_reinforce_plus_plus_baseline_outcome_advantage.
// masked_whiten((s_i - mean_g) m) * m over the whole batch's valid tokens: the scores
// and the mask counts in one row pass, the whitening's statistics from them (or from
// its two statistics passes where the mask holds values other than 0 and 1), one row
// map.
template <class Policy>
void reinforce_plus_plus_baseline_advantage(Policy&& policy, const float* rewards, const float* mask,
                                            const int64_t* index, int64_t rows, int64_t cols, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  std::vector<float> s;
  const std::vector<MaskCounts> counts = RowMaskCounts(policy, rewards, mask, rows, cols, &s, index, &g);
  WhitenRowsTimesMask(policy, GroupMeanValues(g, s, CenteredOnGroupMean()), counts, mask, rows, cols, advantages);
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

// (r_{i,t}, m_{i,t}): a row's score and length |y_i| (the mask summed over every token).
struct RewardAndMaskAt {
  const float* rewards;
  const float* mask;
  int64_t cols;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return thrust::make_tuple(rewards[k], mask[k]);
  }
};

// verl: compute_opo_outcome_advantage.
template <class Policy>
void opo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index, int64_t rows,
                           int64_t cols, float* advantages) {
  using Pair = thrust::tuple<float, float>;
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  const std::vector<Pair> row =
      RowPartialsGrouping(policy, rows, cols, Pair(0.0f, 0.0f), TuplePlus(), RewardAndMaskAt{rewards, mask, cols},
                          Footprint().Reads<float>(rows * cols, 2), index, &g);
  std::vector<float> s(row.size()), len(row.size());
  for (size_t i = 0; i < row.size(); ++i) s[i] = thrust::get<0>(row[i]), len[i] = thrust::get<1>(row[i]);
  const OpoTerms terms{s.data(), len.data()};
  std::vector<float> num(static_cast<size_t>(g.groups())), den(num.size());
  for (size_t k = 0; k < num.size(); ++k) {
    double sum_num = 0.0, sum_den = 0.0;
    for (RowIndex p = g.start[k]; p < g.start[k + 1]; ++p) {
      const Pair t = terms(g.members[static_cast<size_t>(p)]);
      sum_num += thrust::get<0>(t);
      sum_den += thrust::get<1>(t);
    }
    num[k] = static_cast<float>(sum_num);
    den[k] = static_cast<float>(sum_den);
  }
  const OpoRow opo{s.data(), num.data(), den.data(), g.count.data(), g.group_of.data()};
  std::vector<float> a(s.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = opo(static_cast<int64_t>(i));
  RowsTimesMask(policy, a, mask, rows, cols, advantages);
}

// returns_{i,t} - b_i m_{i,t}.
struct RemaxToken {
  __host__ __device__ float operator()(float ret, float baseline, float m) const { return ret - baseline * m; }
};

// The scan's reward-to-go is the return; the advantage subtracts the row's baseline.
struct RemaxOut {
  float* advantages;
  float* returns;
  const float* baselines;
  const float* mask;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t, float g) const {
    const int64_t k = i * cols + t;
    returns[k] = g;
    advantages[k] = RemaxToken()(g, baselines[i], mask[k]);
  }
};

// verl: compute_remax_outcome_advantage. returns = masked reward-to-go; advantages =
// returns - b_i m: one reverse row scan writing both.
template <class Policy>
void remax_outcome_advantage(Policy&& policy, const float* rewards, const float* reward_baselines, const float* mask,
                             int64_t rows, int64_t cols, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  RowScan(policy, rows, cols, /*reverse=*/true, 0.0f, AddF(), MaskedRewardAt{rewards, mask, cols},
          RemaxOut{advantages, returns, reward_baselines, mask, cols},
          Footprint().Reads<float>(n, 2).Reads<float>(rows).Writes<float>(n, 2));
}

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
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  const std::vector<float> s = RowSums(policy, rewards, rows, cols, index, &g);
  const int64_t nonzero = std::count_if(s.begin(), s.end(), [](float v) { return v != 0.0f; });
  RowsTimesMask(policy, GroupMeanValues(g, s, GpgRow{GpgAlpha(rows, nonzero), f_norm}), mask, rows, cols, advantages);
}

}  // namespace verlconf::cuda
