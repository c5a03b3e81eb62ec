// GRPO on CCCL, float32 (oracle/advantage/grpo.h): verl's
// compute_grpo_outcome_advantage and compute_grpo_vectorized_outcome_advantage, as
// templates over the Thrust execution policy (cuda_impl/core/system.cuh).
//
//   s_i = sum_t r_{i,t}                   (every token, mask ignored)
//   A_i = (s_i - mean_g) / (std_g + eps)   std_g unbiased; or s_i - mean_g (Dr.GRPO)
//   A_{i,t} = A_i * mask_{i,t}
//
// A singleton uses mean 0 and std 1 (verl's float32 tensors), so its denominator is
// float32(1 + eps). In float32 the two keys are the same arithmetic: the vectorized
// one's variance floor at 0 cannot bind on a sum of squares.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// A_i of each row from its score and its group's statistics.
struct GrpoRow {
  const float* s;
  const float* mean;
  const float* std_dev;
  const float* count;
  const RowIndex* group_of;
  float epsilon;
  bool norm_adv_by_std;
  __host__ __device__ float operator()(int64_t i) const {
    const RowIndex g = group_of[i];
    const bool grouped = count[g] > 1.0f;
    const float centered = s[i] - (grouped ? mean[g] : 0.0f);
    const float denom = grouped ? std_dev[g] + epsilon : 1.0f + epsilon;
    return norm_adv_by_std ? centered / denom : centered;
  }
};

// Per-row GRPO advantages of the scores s under the grouping g, on the host.
inline std::vector<float> GrpoRowAdvantages(const HostGroups& g, const std::vector<float>& s, float epsilon,
                                            bool norm_adv_by_std) {
  const GroupStats stats = GroupMeanStd(g, s);
  const GrpoRow row{s.data(),          stats.mean.data(), stats.std_dev.data(), g.count.data(),
                    g.group_of.data(), epsilon,           norm_adv_by_std};
  std::vector<float> a(s.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = row(static_cast<int64_t>(i));
  return a;
}

// verl: compute_grpo_outcome_advantage. advantages (== returns) is rows x cols: the
// scores in one row pass, the group statistics on the host, one row map.
template <class Policy>
void grpo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                            int64_t rows, int64_t cols, float epsilon, bool norm_adv_by_std, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  const std::vector<float> s = RowSums(policy, rewards, rows, cols, index, &g);
  RowsTimesMask(policy, GrpoRowAdvantages(g, s, epsilon, norm_adv_by_std), mask, rows, cols, advantages);
}

// verl: compute_grpo_vectorized_outcome_advantage (group_mean_std's float32 statistics,
// which in float32 are GRPO's).
template <class Policy>
void grpo_vectorized_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                       int64_t rows, int64_t cols, float epsilon, bool norm_adv_by_std,
                                       float* advantages) {
  grpo_outcome_advantage(policy, rewards, mask, index, rows, cols, epsilon, norm_adv_by_std, advantages);
}

}  // namespace verlconf::cuda
