// GRPO's relatives on CCCL, float32 (oracle/advantage/grpo_variants.h): Pass@k GRPO
// and GDPO, as templates over the Thrust execution policy (cuda_impl/core/system.cuh).
#pragma once

#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
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
  using P = std::remove_reference_t<Policy>;
  if (rows <= 0 || cols <= 0) return;
  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> s(policy, rows), a(policy, rows), mean(policy, rows), std_dev(policy, rows),
      group_max(policy, rows), top_count(policy, rows), below(policy, rows);
  PolicyScratch<RowIndex, P> best(policy, rows);
  RowSums(policy, rewards, rows, cols, s.get());
  GroupMeanStd(policy, g, s.get(), mean.get(), std_dev.get());
  GroupReduce(policy, g, s.get(), group_max.get(), MaxF());
  auto terms = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                               PasskRow{s.get(), group_max.get(), g.group_of.get()});
  GroupReduce(policy, g, terms, thrust::make_zip_iterator(thrust::make_tuple(top_count.get(), below.get(), best.get())),
              PasskCombine());
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows), a.get(),
                    PasskAdvantage{group_max.get(), top_count.get(), below.get(), best.get(), std_dev.get(),
                                   g.group_of.get(), epsilon, norm_adv_by_std});
  RowsTimesMask(policy, a.get(), mask, rows, cols, advantages);
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
// score tensors); without them, GRPO of the reward rows. Then masked_whiten(v m) * m.
template <class Policy>
void gdpo_outcome_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                            int64_t rows, int64_t cols, const float* components, int64_t k_count,
                            const std::vector<float>& weights, float epsilon, bool norm_adv_by_std, float* advantages) {
  using P = std::remove_reference_t<Policy>;
  if (rows <= 0 || cols <= 0) return;
  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> s(policy, rows), a(policy, rows), v(policy, rows);
  if (!components) {
    RowSums(policy, rewards, rows, cols, s.get());
    GrpoRowAdvantages(policy, g, s.get(), epsilon, norm_adv_by_std, v.get());
  } else {
    for (int64_t k = 0; k < k_count; ++k) {
      thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows),
                        s.get(), Column{components, k_count, k});
      GrpoRowAdvantages(policy, g, s.get(), epsilon, norm_adv_by_std, a.get());
      thrust::transform(policy, v.get(), v.get() + rows, a.get(), v.get(),
                        AddWeighted{weights[static_cast<size_t>(k)], k == 0});
    }
    if (k_count == 0) thrust::fill(policy, v.get(), v.get() + rows, 0.0f);
  }
  RowsTimesMask(policy, v.get(), mask, rows, cols, advantages);
  WhitenInPlace(policy, advantages, mask, rows * cols, /*times_mask=*/true);
}

}  // namespace verlconf::cuda
