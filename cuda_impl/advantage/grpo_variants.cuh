// GRPO's relatives on CCCL, float32 (oracle/advantage/grpo_variants.h): Pass@k GRPO
// and GDPO, as templates over the Thrust execution policy (cuda_impl/core/system.cuh).
// As GRPO: the scores in one row pass, everything per row or group on the host
// (groups.cuh), one row map writing the advantages.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/grpo.cuh"
#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// Per row against its group's maximum: (1 if at the maximum, the score if below it,
// else -inf, the row if at the maximum, else the largest index).
using PasskTerms = thrust::tuple<float, float, RowIndex>;

struct PasskRow {
  const float* s;
  const float* group_max;
  const RowIndex* group_of;
  __host__ __device__ PasskTerms operator()(int64_t i) const {
    const float m = group_max[group_of[i]];
    const bool top = s[i] == m;
    return PasskTerms(top ? 1.0f : 0.0f, top ? -INFINITY : s[i],
                      top ? static_cast<RowIndex>(i) : std::numeric_limits<RowIndex>::max());
  }
};

// (count at the maximum, largest score below it, first row at the maximum).
struct PasskCombine {
  __host__ __device__ PasskTerms operator()(const PasskTerms& a, const PasskTerms& b) const {
    const RowIndex ra = thrust::get<2>(a), rb = thrust::get<2>(b);
    return PasskTerms(thrust::get<0>(a) + thrust::get<0>(b), fmaxf(thrust::get<1>(a), thrust::get<1>(b)),
                      ra < rb ? ra : rb);
  }
};

// Only the group's best response (the first at the maximum) gets r_max - r_2nd (over
// std + eps); the second best is the maximum again when it is tied.
struct PasskAdvantage {
  const float* group_max;
  const float* top_count;
  const float* below;
  const RowIndex* best;
  const float* std_dev;
  const RowIndex* group_of;
  float epsilon;
  bool norm_adv_by_std;
  __host__ __device__ float operator()(int64_t i) const {
    const RowIndex g = group_of[i];
    if (best[g] != static_cast<RowIndex>(i)) return 0.0f;
    const float second = top_count[g] >= 2.0f ? group_max[g] : below[g];
    float a = group_max[g] - second;
    if (norm_adv_by_std) a /= std_dev[g] + epsilon;
    return a;
  }
};

// verl: compute_grpo_passk_outcome_advantage. Groups of one are the caller's check
// (verl's ValueError, raised before any work).
template <class Policy>
void grpo_passk_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                  int64_t rows, int64_t cols, float epsilon, bool norm_adv_by_std, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  const std::vector<float> s = RowSums(policy, rewards, rows, cols, index, &g);
  const GroupStats stats = GroupMeanStd(g, s);
  const size_t groups = static_cast<size_t>(g.groups());
  std::vector<float> group_max(groups), top_count(groups), below(groups);
  std::vector<RowIndex> best(groups);
  for (size_t k = 0; k < groups; ++k) {
    const RowIndex lo = g.start[k], hi = g.start[k + 1];
    float m = s[static_cast<size_t>(g.members[static_cast<size_t>(lo)])];
    for (RowIndex p = lo + 1; p < hi; ++p) m = MaxF()(m, s[static_cast<size_t>(g.members[static_cast<size_t>(p)])]);
    group_max[k] = m;
  }
  const PasskRow terms{s.data(), group_max.data(), g.group_of.data()};
  for (size_t k = 0; k < groups; ++k) {
    const RowIndex lo = g.start[k], hi = g.start[k + 1];
    PasskTerms acc = terms(g.members[static_cast<size_t>(lo)]);
    for (RowIndex p = lo + 1; p < hi; ++p) acc = PasskCombine()(acc, terms(g.members[static_cast<size_t>(p)]));
    top_count[k] = thrust::get<0>(acc);
    below[k] = thrust::get<1>(acc);
    best[k] = thrust::get<2>(acc);
  }
  const PasskAdvantage row{group_max.data(),     top_count.data(),  below.data(), best.data(),
                           stats.std_dev.data(), g.group_of.data(), epsilon,      norm_adv_by_std};
  std::vector<float> a(s.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = row(static_cast<int64_t>(i));
  RowsTimesMask(policy, a, mask, rows, cols, advantages);
}

// Column k of a rows x k_count matrix.
struct Column {
  const float* m;
  int64_t k_count, k;
  __host__ __device__ float operator()(int64_t i) const { return m[i * k_count + k]; }
};

// acc_i (+)= w a_i.
struct AddWeighted {
  float w;
  bool first;
  __host__ __device__ float operator()(float acc, float a) const { return first ? w * a : acc + w * a; }
};

// verl: compute_gdpo_outcome_advantage. With components (rows x k_count, and weights
// or 1): sum_k w_k GRPO(component k) per row (float32 GRPO, as verl runs it on float32
// score tensors); without them, GRPO of the reward rows. Then masked_whiten(v m) * m,
// whose statistics come from the rows' values and mask counts: one row pass over the
// mask (and the rewards without components), one row map (after the whitening's two
// statistics passes where the mask holds values other than 0 and 1).
template <class Policy>
void gdpo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                            int64_t rows, int64_t cols, const float* components, int64_t k_count,
                            const std::vector<float>& weights, float epsilon, bool norm_adv_by_std, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  HostGroups g;
  std::vector<float> s, v(static_cast<size_t>(rows), 0.0f);
  const std::vector<MaskCounts> counts =
      RowMaskCounts(policy, components ? nullptr : rewards, mask, rows, cols, &s, index, &g);
  if (!components) {
    v = GrpoRowAdvantages(g, s, epsilon, norm_adv_by_std);
  } else {
    const std::vector<float> c = ToHostVector(policy, components, rows * k_count);
    s.resize(static_cast<size_t>(rows));
    for (int64_t k = 0; k < k_count; ++k) {
      for (int64_t i = 0; i < rows; ++i) s[static_cast<size_t>(i)] = Column{c.data(), k_count, k}(i);
      const std::vector<float> a = GrpoRowAdvantages(g, s, epsilon, norm_adv_by_std);
      const AddWeighted add{weights[static_cast<size_t>(k)], k == 0};
      for (size_t i = 0; i < v.size(); ++i) v[i] = add(v[i], a[i]);
    }
  }
  WhitenRowsTimesMask(policy, v, counts, mask, rows, cols, advantages);
}

}  // namespace verlconf::cuda
