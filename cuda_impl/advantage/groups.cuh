// Group bookkeeping of the group-relative estimators on CCCL (oracle/advantage/groups.h):
// verl groups sequences by prompt uid, here int64 codes in any order (singletons,
// interleaved, non-contiguous values).
//
// A batch has a few thousand rows, so everything row- or group-sized is done on the
// host: the codes come back (rows int64), the groups are numbered in first-appearance
// order with their members in element order (oracle::GroupBy's), and the group
// statistics are summed in double in that order from the rows' scores, which one row
// pass over the token matrix produced (RowPartials). The per-row values go back to the
// device (rows floats) for the one pass that writes the token outputs. Every sum has a
// fixed order, so the results are bitwise reproducible.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// Row and group indices (a batch has fewer than 2^31 rows).
using RowIndex = int32_t;

// The dense grouping of a batch's rows, on the host: group g's members are
// members[start[g] .. start[g + 1]), in element order; groups in first-appearance order.
struct HostGroups {
  std::vector<RowIndex> group_of;  // per row
  std::vector<RowIndex> start;     // groups + 1 offsets into members
  std::vector<RowIndex> members;
  std::vector<float> count;  // per group, as the estimators' float32 arithmetic takes it

  int64_t groups() const { return static_cast<int64_t>(count.size()); }
};

// The grouping of rows by equal keys, in first-appearance order with members in
// element order. An open-addressing table (a few nanoseconds a row: the host's share of
// a call must stay small beside its row passes), looked up only where the key changes
// from the previous row's, as it does once per group when a group's rows are
// consecutive (verl's rollout.n). `hash` gives 64 well-mixed bits of a key.
template <class Key, class Hash>
HostGroups GroupKeys(const std::vector<Key>& keys, Hash hash) {
  HostGroups g;
  const size_t rows = keys.size();
  int shift = 64 - 4;
  while ((size_t{1} << (64 - shift)) < 2 * rows) --shift;
  const size_t mask = (size_t{1} << (64 - shift)) - 1;
  std::vector<Key> table(mask + 1);
  std::vector<RowIndex> slot(mask + 1, -1);
  std::vector<RowIndex> size;
  g.group_of.resize(rows);
  for (size_t i = 0; i < rows; ++i) {
    const Key& key = keys[i];
    if (i > 0 && key == keys[i - 1]) {
      g.group_of[i] = g.group_of[i - 1];
    } else {
      size_t h = static_cast<size_t>(hash(key) >> shift);
      while (slot[h] >= 0 && !(table[h] == key)) h = (h + 1) & mask;
      if (slot[h] < 0) {
        table[h] = key;
        slot[h] = static_cast<RowIndex>(size.size());
        size.push_back(0);
      }
      g.group_of[i] = slot[h];
    }
    ++size[static_cast<size_t>(g.group_of[i])];
  }
  g.start.assign(size.size() + 1, 0);
  for (size_t k = 0; k < size.size(); ++k) g.start[k + 1] = g.start[k] + size[k];
  g.members.resize(rows);
  std::vector<RowIndex> fill(g.start.begin(), g.start.end() - 1);
  for (size_t i = 0; i < rows; ++i)
    g.members[static_cast<size_t>(fill[static_cast<size_t>(g.group_of[i])]++)] = static_cast<RowIndex>(i);
  g.count.resize(size.size());
  for (size_t k = 0; k < size.size(); ++k) g.count[k] = static_cast<float>(size[k]);
  return g;
}

// Fibonacci hashing: the product's high bits.
inline uint64_t MixCode(int64_t code) { return static_cast<uint64_t>(code) * 0x9E3779B97F4A7C15ull; }

// verl's grouping by uid (oracle::GroupBy) of host codes.
inline HostGroups GroupCodes(const std::vector<int64_t>& codes) { return GroupKeys(codes, MixCode); }

// RowPartials whose wait for the partials is spent on host_work() first: the host works
// while the device runs the row pass.
template <class Policy, class T, class Op, class TermFn, class HostWork>
std::vector<T> RowPartialsWhile(Policy& policy, int64_t rows, int64_t cols, T identity, Op op, TermFn term,
                                Footprint footprint, HostWork&& host_work) {
  PolicyScratch<T, Policy> partials(policy, rows);
  footprint.Writes<T>(rows);
  RowReduce(policy, rows, cols, identity, op, term, StoreRow<T>{partials.get()}, footprint);
  host_work();
  return ToHostVector(policy, static_cast<const T*>(partials.get()), rows);
}

// RowPartials, and with `codes` (rows of them in the policy's memory) the grouping of
// the codes into *g, worked out during the row pass.
template <class Policy, class T, class Op, class TermFn>
std::vector<T> RowPartialsGrouping(Policy& policy, int64_t rows, int64_t cols, T identity, Op op, TermFn term,
                                   const Footprint& footprint, const int64_t* codes, HostGroups* g) {
  if (!codes) return RowPartials(policy, rows, cols, identity, op, term, footprint);
  const std::vector<int64_t> host_codes = ToHostVector(policy, codes, rows);
  return RowPartialsWhile(policy, rows, cols, identity, op, term, footprint, [&] { *g = GroupCodes(host_codes); });
}

// ---- the row passes ------------------------------------------------------------------

// x_{i,t}: a row sum's term over every token (verl sums the whole row, not the mask).
struct TokenAt {
  const float* x;
  int64_t cols;
  __host__ __device__ float operator()(int64_t i, int64_t t) const { return x[i * cols + t]; }
};

// s_i = sum_t x_{i,t} of every row (oracle::RowSums), on the host: one row pass (and
// the grouping of `codes` into *g when given, RowPartialsGrouping).
template <class Policy>
std::vector<float> RowSums(Policy& policy, const float* x, int64_t rows, int64_t cols, const int64_t* codes = nullptr,
                           HostGroups* g = nullptr) {
  return RowPartialsGrouping(policy, rows, cols, 0.0f, TuplePlus(), TokenAt{x, cols},
                             Footprint().Reads<float>(rows * cols), codes, g);
}

// A_{i,t} = a_i * mask_{i,t} (oracle::RowsTimesMask): a plain product, so that a NaN
// row value stays NaN under mask 0 as in verl.
struct RowTimesMask {
  const float* per_row;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t k) const { return per_row[k / cols] * mask[k]; }
};

// out[k] = f(k) at every token: a flat-index token functor as a RowMap.
template <class F>
struct WriteToken {
  F f;
  float* out;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    out[k] = f(k);
  }
};

// The per-row values a_i (host) broadcast times the mask into out: one row map that
// reads the mask and writes out once.
template <class Policy>
void RowsTimesMask(Policy& policy, const std::vector<float>& per_row, const float* mask, int64_t rows, int64_t cols,
                   float* out) {
  PolicyScratch<float, std::remove_reference_t<Policy>> a(policy, rows);
  FromHostVector(policy, per_row, a.get());
  RowMap(policy, rows, cols, WriteToken<RowTimesMask>{RowTimesMask{a.get(), mask, cols}, out, cols},
         Footprint().Reads<float>(rows * cols).Reads<float>(rows).Writes<float>(rows * cols));
}

// ---- group statistics on the host ----------------------------------------------------

// Per group: the sum of the scores (summed in double in element order, then rounded),
// the mean and the unbiased standard deviation in float32 as torch.mean and torch.std
// of the group's stacked float32 scores give them: the mean rounded once, the
// deviations taken from that float32 mean and their squares summed in double. A
// singleton's std is 0/0 = NaN, which the estimators replace by their own rule.
struct GroupStats {
  std::vector<float> sum, mean, std_dev;
};

inline GroupStats GroupMeanStd(const HostGroups& g, const std::vector<float>& s) {
  const size_t groups = static_cast<size_t>(g.groups());
  GroupStats out;
  out.sum.resize(groups);
  out.mean.resize(groups);
  out.std_dev.resize(groups);
  for (size_t k = 0; k < groups; ++k) {
    const RowIndex lo = g.start[k], hi = g.start[k + 1];
    const double n = static_cast<double>(hi - lo);
    double sum = 0.0;
    for (RowIndex p = lo; p < hi; ++p) sum += s[static_cast<size_t>(g.members[static_cast<size_t>(p)])];
    const float mean = static_cast<float>(sum / n);
    double sq = 0.0;
    for (RowIndex p = lo; p < hi; ++p) {
      const double c = static_cast<double>(s[static_cast<size_t>(g.members[static_cast<size_t>(p)])]) - mean;
      sq += c * c;
    }
    out.sum[k] = static_cast<float>(sum);
    out.mean[k] = mean;
    out.std_dev[k] = static_cast<float>(std::sqrt(sq / (n - 1.0)));
  }
  return out;
}

// The larger of two floats (fmaxf: a NaN loses to a number).
struct MaxF {
  __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace verlconf::cuda
