// The optimal-token-baseline estimators on CCCL, float32
// (oracle/advantage/optimal_token_baseline.h), as templates over the Thrust execution
// policy (cuda_impl/core/system.cuh).
//
//   B_{g,t} = sum_i G_{i,t} W_{i,t} / (sum_i W_{i,t} + eps),  W = cumsum_t(w m)
//
// G is the masked reward-to-go (a reverse scan), W a forward scan per row. The group
// sums per position are one reduce_by_key over (position, sorted row): key t G + g, the
// terms read through the sort's permutation, so a group's members are contiguous under
// every position.
#pragma once

#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/returns.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// w m with w = (1 - 2 pi + sum pi^2) rho^2, pi = exp(old_log_prob), rho = 1 when absent:
// verl's order of operations.
struct OtbWeight {
  const float* old_log_probs;
  const float* sum_pi_squared;
  const float* rho;  // null: no rollout IS weights
  const float* mask;
  __host__ __device__ float operator()(int64_t k) const {
    const float pi = expf(old_log_probs[k]);
    float v = 1.0f - 2.0f * pi + sum_pi_squared[k];
    if (rho) v *= rho[k] * rho[k];
    return v * mask[k];
  }
};

// OtbWeight at (i, t).
struct OtbWeightAt {
  OtbWeight w;
  int64_t cols;
  __host__ __device__ float operator()(int64_t i, int64_t t) const { return w(i * cols + t); }
};

// W_{i,t} = sum_{j <= t} w_{i,j} m_{i,j}: a forward row scan (bitwise reproducible).
template <class Policy>
void CumulativeW(Policy& policy, const float* old_log_probs, const float* sum_pi_squared, const float* rho,
                 const float* mask, int64_t rows, int64_t cols, float* w) {
  RowScan(policy, rows, cols, /*reverse=*/false, 0.0f, AddF(),
          OtbWeightAt{OtbWeight{old_log_probs, sum_pi_squared, rho, mask}, cols}, StoreFloat{w, cols},
          Footprint().Reads<float>(rows * cols, rho ? 4 : 3).Writes<float>(rows * cols));
}

// Flat position j = t rows + p (p a sorted position): the key t groups + g.
struct PositionGroupKey {
  const RowIndex* sorted_gid;
  int64_t rows, groups;
  __host__ __device__ int64_t operator()(int64_t j) const { return (j / rows) * groups + sorted_gid[j % rows]; }
};

// The token read at flat position j = t rows + p: row order[p], position t.
struct SortedTokenOf {
  const RowIndex* order;
  int64_t rows, cols;
  __host__ __device__ int64_t operator()(int64_t j) const {
    return static_cast<int64_t>(order[j % rows]) * cols + j / rows;
  }
};

// A token-indexed sequence of terms read in (position, sorted row) order.
template <class It>
auto BySortedToken(It token_terms, const RowIndex* order, int64_t rows, int64_t cols) {
  return thrust::make_permutation_iterator(
      token_terms,
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SortedTokenOf{order, rows, cols}));
}

// out_num[t G + g], out_den[t G + g] = sums over the group's members of the token
// arrays' terms at position t.
template <class Policy, class TermIt>
void SumPerPositionAndGroup(Policy& policy, const GroupIds<Policy>& g, int64_t cols, TermIt terms, float* out_num,
                            float* out_den) {
  const int64_t n = g.rows * cols;
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                              PositionGroupKey{g.sorted_gid.get(), g.rows, g.groups});
  thrust::reduce_by_key(policy, keys, keys + n, terms, thrust::make_discard_iterator(),
                        thrust::make_zip_iterator(thrust::make_tuple(out_num, out_den)), thrust::equal_to<int64_t>(),
                        TuplePlus());
}

// G W m and W m: the plain key's terms.
struct OtbTerms {
  const float* returns;
  const float* w;
  const float* mask;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float wm = w[k] * mask[k];
    return thrust::make_tuple(returns[k] * w[k] * mask[k], wm);
  }
};

// ---- handle_zero_tail --------------------------------------------------------------

// A member's length, or -inf when it is not a member (TIR's empty rows).
struct MemberLength {
  const float* length;
  const float* eligible;  // null: every row
  __host__ __device__ float operator()(int64_t i) const {
    return !eligible || eligible[i] > 0.0f ? length[i] : -INFINITY;
  }
};

// (1 at the group's longest length, the length if shorter, else -inf).
struct TailTerms {
  const float* length;
  const float* eligible;
  const float* longest;
  const RowIndex* group_of;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t i) const {
    const float l = MemberLength{length, eligible}(i);
    const float top = longest[group_of[i]];
    if (l == -INFINITY) return thrust::make_tuple(0.0f, -INFINITY);
    return l == top ? thrust::make_tuple(1.0f, -INFINITY) : thrust::make_tuple(0.0f, l);
  }
};

struct CountAndMax {
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& a,
                                                             const thrust::tuple<float, float>& b) const {
    return thrust::make_tuple(thrust::get<0>(a) + thrust::get<0>(b), fmaxf(thrust::get<1>(a), thrust::get<1>(b)));
  }
};

constexpr int64_t kNoTail = std::numeric_limits<int64_t>::max();

// The position from which a row's baseline is zeroed: the second-longest length when
// the row is alone at its group's longest (of a group of two or more members), else
// never.
struct ZeroFrom {
  const float* length;
  const float* eligible;
  const float* members;  // per group
  const float* longest;
  const float* top_count;
  const float* second;
  const RowIndex* group_of;
  __host__ __device__ int64_t operator()(int64_t i) const {
    const RowIndex g = group_of[i];
    const bool member = !eligible || eligible[i] > 0.0f;
    if (!member || !(members[g] > 1.0f) || top_count[g] != 1.0f || length[i] != longest[g]) return kNoTail;
    return static_cast<int64_t>(second[g]);
  }
};

// zero_from[i] for every row (kNoTail unless handle_zero_tail picks it).
template <class Policy>
void ZeroTail(Policy& policy, const GroupIds<Policy>& g, const float* length, const float* eligible,
              const float* members, int64_t* zero_from) {
  using P = Policy;
  PolicyScratch<float, P> longest(policy, g.rows), top_count(policy, g.rows), second(policy, g.rows);
  auto len = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), MemberLength{length, eligible});
  GroupReduce(policy, g, len, longest.get(), MaxF());
  auto terms = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                               TailTerms{length, eligible, longest.get(), g.group_of.get()});
  GroupReduce(policy, g, terms, thrust::make_zip_iterator(thrust::make_tuple(top_count.get(), second.get())),
              CountAndMax());
  thrust::transform(
      policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(g.rows), zero_from,
      ZeroFrom{length, eligible, members, longest.get(), top_count.get(), second.get(), g.group_of.get()});
}

// ---- the plain key -----------------------------------------------------------------

struct OtbAdvantage {
  const float* returns;
  const float* mask;
  const float* num;  // [t G + g]
  const float* den;
  const float* count;
  const RowIndex* group_of;
  const int64_t* zero_from;
  int64_t cols, groups;
  float epsilon;
  __host__ __device__ float operator()(int64_t k) const {
    const int64_t i = k / cols, t = k % cols;
    const RowIndex g = group_of[i];
    float b = 0.0f;
    if (count[g] > 1.0f && t < zero_from[i]) {
      const int64_t at = t * groups + g;
      b = num[at] / (den[at] + epsilon);
    }
    return (returns[k] - b) * mask[k];
  }
};

// verl: compute_optimal_token_baseline_advantage. rho may be null.
template <class Policy>
void optimal_token_baseline_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                      const float* old_log_probs, const float* sum_pi_squared, const float* rho,
                                      int64_t rows, int64_t cols, bool handle_zero_tail, float epsilon,
                                      float* advantages, float* returns) {
  using P = std::remove_reference_t<Policy>;
  const int64_t n = rows * cols;
  if (n <= 0) return;
  MaskedRewardToGo(policy, rewards, mask, rows, cols, returns);
  PolicyScratch<float, P> w(policy, n);
  CumulativeW(policy, old_log_probs, sum_pi_squared, rho, mask, rows, cols, w.get());
  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> num(policy, cols * g.groups), den(policy, cols * g.groups), length(policy, rows);
  PolicyScratch<int64_t, P> zero_from(policy, rows);
  auto token_terms =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), OtbTerms{returns, w.get(), mask});
  SumPerPositionAndGroup(policy, g, cols, BySortedToken(token_terms, g.order.get(), rows, cols), num.get(), den.get());
  if (handle_zero_tail) {
    RowSums(policy, mask, rows, cols, length.get());
    ZeroTail(policy, g, length.get(), nullptr, g.count.get(), zero_from.get());
  } else {
    thrust::fill(policy, zero_from.get(), zero_from.get() + rows, kNoTail);
  }
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), advantages,
                    OtbAdvantage{returns, mask, num.get(), den.get(), g.count.get(), g.group_of.get(), zero_from.get(),
                                 cols, g.groups, epsilon});
}

// ---- the multi-turn key: valid tokens packed to the left -----------------------------

struct IsValid {
  __host__ __device__ bool operator()(float m) const { return m != 0.0f; }
};

struct ValidOne {
  __host__ __device__ RowIndex operator()(float m) const { return m != 0.0f ? 1 : 0; }
};

struct ValidOneF {
  __host__ __device__ float operator()(float m) const { return m != 0.0f ? 1.0f : 0.0f; }
};

struct PositiveOne {
  __host__ __device__ float operator()(float v) const { return v > 0.0f ? 1.0f : 0.0f; }
};

// Where a valid token lands once its row is packed: row i, its rank among the row's
// valid tokens.
struct PackedSlot {
  const RowIndex* rank;
  int64_t cols;
  __host__ __device__ int64_t operator()(int64_t k) const { return (k / cols) * cols + rank[k]; }
};

// G W and W of a valid token (the packed rows' values; the mask is already in W).
struct TirTerms {
  const float* returns;
  const float* w;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    return thrust::make_tuple(returns[k] * w[k], w[k]);
  }
};

struct TirAdvantage {
  const float* returns;
  const float* mask;
  const RowIndex* rank;
  const float* num;  // [k G + g], k the packed position
  const float* den;
  const float* members;
  const RowIndex* group_of;
  const int64_t* zero_from;
  int64_t cols, groups;
  float epsilon;
  __host__ __device__ float operator()(int64_t k) const {
    const float m = mask[k];
    if (m == 0.0f) return 0.0f;
    const int64_t i = k / cols, r = rank[k];
    const RowIndex g = group_of[i];
    float b = 0.0f;
    if (members[g] > 1.0f && r < zero_from[i]) {
      const int64_t at = r * groups + g;
      b = num[at] / (den[at] + epsilon);
    }
    return (returns[k] - b) * m;
  }
};

// verl: compute_multi_turn_optimal_token_baseline_advantage. rho may be null. Rows
// without a valid token are left out of their groups (and get advantage 0).
template <class Policy>
void tir_optimal_token_baseline_advantage(Policy&& policy, const float* rewards, const float* mask,
                                          const int64_t* index, const float* old_log_probs, const float* sum_pi_squared,
                                          const float* rho, int64_t rows, int64_t cols, bool handle_zero_tail,
                                          float epsilon, float* advantages, float* returns) {
  using P = std::remove_reference_t<Policy>;
  const int64_t n = rows * cols;
  if (n <= 0) return;
  MaskedRewardToGo(policy, rewards, mask, rows, cols, returns);
  PolicyScratch<float, P> w(policy, n), packed_num(policy, n), packed_den(policy, n);
  PolicyScratch<RowIndex, P> rank(policy, n);
  CumulativeW(policy, old_log_probs, sum_pi_squared, rho, mask, rows, cols, w.get());
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentOf{cols});
  thrust::exclusive_scan_by_key(policy, keys, keys + n, thrust::make_transform_iterator(mask, ValidOne()), rank.get());
  auto packed = thrust::make_zip_iterator(thrust::make_tuple(packed_num.get(), packed_den.get()));
  thrust::fill(policy, packed, packed + n, thrust::make_tuple(0.0f, 0.0f));
  auto terms = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), TirTerms{returns, w.get()});
  auto slots = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), PackedSlot{rank.get(), cols});
  thrust::scatter_if(policy, terms, terms + n, slots, mask, packed, IsValid());

  GroupIds<P> g(policy, rows);
  GroupBy(policy, index, g);
  PolicyScratch<float, P> num(policy, cols * g.groups), den(policy, cols * g.groups), valid(policy, rows),
      members(policy, rows), length(policy, rows);
  PolicyScratch<int64_t, P> zero_from(policy, rows);
  RowSums(policy, thrust::make_transform_iterator(mask, ValidOneF()), rows, cols, valid.get());
  GroupReduce(policy, g, thrust::make_transform_iterator(valid.get(), PositiveOne()), members.get());
  SumPerPositionAndGroup(policy, g, cols, BySortedToken(packed, g.order.get(), rows, cols), num.get(), den.get());
  if (handle_zero_tail) {
    RowSums(policy, mask, rows, cols, length.get());
    ZeroTail(policy, g, length.get(), valid.get(), members.get(), zero_from.get());
  } else {
    thrust::fill(policy, zero_from.get(), zero_from.get() + rows, kNoTail);
  }
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), advantages,
                    TirAdvantage{returns, mask, rank.get(), num.get(), den.get(), members.get(), g.group_of.get(),
                                 zero_from.get(), cols, g.groups, epsilon});
}

}  // namespace verlconf::cuda
