// Group bookkeeping of the group-relative estimators on CCCL (oracle/advantage/groups.h):
// verl groups sequences by prompt uid, here int64 codes in any order (singletons,
// interleaved, non-contiguous values). The codes are mapped to dense group ids on the
// policy's system by a stable sort of (code, row), so that members keep element order
// within their group; per-group statistics are then reduce_by_key over the sorted rows
// (read through a permutation iterator) and gathered back per row through group_of.
#pragma once

#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// Row and group indices (a batch has fewer than 2^31 rows).
using RowIndex = int32_t;

// 1 where a sorted code starts a new group, 0 elsewhere (the first position is 0, so an
// inclusive scan numbers the groups from 0).
struct NewGroupFlag {
  const int64_t* sorted_codes;
  __host__ __device__ RowIndex operator()(int64_t p) const {
    return p > 0 && sorted_codes[p] != sorted_codes[p - 1] ? 1 : 0;
  }
};

// The dense grouping of `rows` sequences: order[p] is the row at sorted position p
// (groups contiguous, element order within a group), sorted_gid[p] its group,
// group_of[row] the same per row, count[g] the group's size. Scratch from the policy.
template <class Policy>
struct GroupIds {
  GroupIds(Policy& policy, int64_t n)
      : rows(n),
        sorted_codes(policy, n),
        order(policy, n),
        sorted_gid(policy, n),
        group_of(policy, n),
        count(policy, n) {}
  int64_t rows;
  int64_t groups = 0;
  PolicyScratch<int64_t, Policy> sorted_codes;
  PolicyScratch<RowIndex, Policy> order;
  PolicyScratch<RowIndex, Policy> sorted_gid;
  PolicyScratch<RowIndex, Policy> group_of;
  PolicyScratch<float, Policy> count;

  // Iterates a row-indexed sequence in sorted order.
  template <class It>
  auto Sorted(It per_row) const {
    return thrust::make_permutation_iterator(per_row, order.get());
  }
  // Iterates a group-indexed sequence per row.
  template <class It>
  auto PerRow(It per_group) const {
    return thrust::make_permutation_iterator(per_group, group_of.get());
  }
};

// verl's grouping by uid (oracle::GroupBy), on the policy's system.
template <class Policy>
void GroupBy(Policy& policy, const int64_t* codes, GroupIds<Policy>& g) {
  const int64_t n = g.rows;
  if (n <= 0) return;
  thrust::copy(policy, codes, codes + n, g.sorted_codes.get());
  thrust::sequence(policy, g.order.get(), g.order.get() + n, RowIndex{0});
  thrust::stable_sort_by_key(policy, g.sorted_codes.get(), g.sorted_codes.get() + n, g.order.get());
  auto flags =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), NewGroupFlag{g.sorted_codes.get()});
  thrust::inclusive_scan(policy, flags, flags + n, g.sorted_gid.get());
  const auto ends =
      thrust::reduce_by_key(policy, g.sorted_gid.get(), g.sorted_gid.get() + n, thrust::constant_iterator<float>(1.0f),
                            thrust::make_discard_iterator(), g.count.get());
  g.groups = ends.second - g.count.get();
  thrust::scatter(policy, g.sorted_gid.get(), g.sorted_gid.get() + n, g.order.get(), g.group_of.get());
}

// The larger of two floats (fmaxf: a NaN loses to a number).
struct MaxF {
  __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// out[g] = op-reduction of per_row[i] over the members i of each group g, in element
// order (floats or tuples of floats with TuplePlus, or any associative op).
template <class Policy, class It, class Out, class Op = TuplePlus>
void GroupReduce(Policy& policy, const GroupIds<Policy>& g, It per_row, Out out, Op op = Op()) {
  if (g.rows <= 0) return;
  thrust::reduce_by_key(policy, g.sorted_gid.get(), g.sorted_gid.get() + g.rows, g.Sorted(per_row),
                        thrust::make_discard_iterator(), out, thrust::equal_to<RowIndex>(), op);
}

// s_i = sum_t m_{i,t} over every token of each row (oracle::RowSums), one segment per row.
template <class Policy, class It>
void RowSums(Policy& policy, It m, int64_t rows, int64_t cols, float* out) {
  if (rows <= 0) return;
  if (cols <= 0) {
    thrust::fill(policy, out, out + rows, 0.0f);
    return;
  }
  SegmentSums(policy, m, rows * cols, cols, out);
}

// A_{i,t} = a_i * mask_{i,t} (oracle::RowsTimesMask): a plain product, so that a NaN
// row value stays NaN under mask 0 as in verl.
struct RowTimesMask {
  const float* per_row;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t k) const { return per_row[k / cols] * mask[k]; }
};

template <class Policy>
void RowsTimesMask(Policy& policy, const float* per_row, const float* mask, int64_t rows, int64_t cols, float* out) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), out,
                    RowTimesMask{per_row, mask, cols});
}

// (s_i - mean_{g(i)})^2: the squares of an unbiased group std (oracle::GroupStd).
struct CenteredSquare {
  const float* s;
  const float* group_mean;
  const RowIndex* group_of;
  __host__ __device__ float operator()(int64_t i) const {
    const float c = s[i] - group_mean[group_of[i]];
    return c * c;
  }
};

// mean_g = sum / n over each group's members (the group sums in `mean` on entry).
struct DivideByCount {
  __host__ __device__ float operator()(float sum, float n) const { return sum / n; }
};

// sqrt(sum of squares / (n - 1)): torch.std's Bessel-corrected deviation.
struct UnbiasedStd {
  __host__ __device__ float operator()(float sq, float n) const { return sqrtf(sq / (n - 1.0f)); }
};

// Per-group mean and unbiased standard deviation (torch.mean and torch.std of the
// group's stacked scores): mean[g], std[g] for every group; a singleton's std is
// 0/0 = NaN, which the estimators replace by their own singleton rule.
template <class Policy>
void GroupMeanStd(Policy& policy, const GroupIds<Policy>& g, const float* s, float* mean, float* std_dev) {
  if (g.rows <= 0) return;
  GroupReduce(policy, g, s, mean);
  thrust::transform(policy, mean, mean + g.groups, g.count.get(), mean, DivideByCount());
  auto sq =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), CenteredSquare{s, mean, g.group_of.get()});
  GroupReduce(policy, g, sq, std_dev);
  thrust::transform(policy, std_dev, std_dev + g.groups, g.count.get(), std_dev, UnbiasedStd());
}

}  // namespace verlconf::cuda
