// The optimal-token-baseline estimators on CCCL, float32
// (oracle/advantage/optimal_token_baseline.h), as templates over the Thrust execution
// policy (cuda_impl/core/system.cuh).
//
//   B_{g,t} = sum_i G_{i,t} W_{i,t} / (sum_i W_{i,t} + eps),  W = cumsum_t(w m)
//
// G is the masked reward-to-go (a reverse row scan, written to returns), W a forward
// row scan, written to advantages, which the last pass overwrites. The baseline's sums
// run across rows, so the last pass is a row map whose rows are (group, tile of
// positions): each thread takes one position of one group, sums its members' terms in
// element order, then writes their advantages. No (position, group) table and no sort:
// a group's members come from the host (groups.cuh), and every sum has a fixed order,
// so the results are bitwise reproducible. Three passes: the two scans cannot share one
// (they walk a row in opposite directions), and the baseline needs W complete.
#pragma once

#include <thrust/tuple.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/returns.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

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

// The forward scan's terms: (w m, m), and with the valid-token count (the multi-turn
// key's packing) 1 where m != 0. Its running values are W, and at the row's end its mask
// sum (oracle::RowSums) and count of valid tokens. (No wider than needed: a row scan
// waits on memory, and a wider element holds fewer rows in flight.)
using OtbScan = thrust::tuple<float, float>;
using TirScan = thrust::tuple<float, float, float>;

template <class Element>
struct OtbScanAt {
  OtbWeight w;
  int64_t cols;
  __host__ __device__ Element operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float m = w.mask[k];
    if constexpr (std::is_same_v<Element, TirScan>) {
      return TirScan(w(k), m, m != 0.0f ? 1.0f : 0.0f);
    } else {
      return OtbScan(w(k), m);
    }
  }
};

// The forward scan over the weights of the batch: per token `out(i, t, acc)`.
template <class Element, class Policy, class Out>
void CumulativeW(Policy& policy, const float* old_log_probs, const float* sum_pi_squared, const float* rho,
                 const float* mask, int64_t rows, int64_t cols, Out out, const Footprint& out_writes) {
  Footprint f = out_writes;
  f.Reads<float>(rows * cols, rho ? 4 : 3);
  RowScan(policy, rows, cols, /*reverse=*/false, Element(), TuplePlus(),
          OtbScanAt<Element>{OtbWeight{old_log_probs, sum_pi_squared, rho, mask}, cols}, out, f);
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

// Never zeroed: past every position.
constexpr RowIndex kNoTail = std::numeric_limits<RowIndex>::max();

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

// zero_from[i] for every row (kNoTail unless handle_zero_tail picks it), on the host
// from the rows' lengths; `eligible` (valid-token counts) may be null, `members` is per
// group.
inline std::vector<RowIndex> ZeroTail(const HostGroups& g, const std::vector<float>& length, const float* eligible,
                                      const std::vector<float>& members, int64_t cols) {
  const size_t groups = static_cast<size_t>(g.groups());
  std::vector<float> longest(groups), top_count(groups), second(groups);
  const MemberLength len{length.data(), eligible};
  for (size_t k = 0; k < groups; ++k) {
    float m = len(g.members[static_cast<size_t>(g.start[k])]);
    for (RowIndex p = g.start[k] + 1; p < g.start[k + 1]; ++p) m = MaxF()(m, len(g.members[static_cast<size_t>(p)]));
    longest[k] = m;
  }
  const TailTerms terms{length.data(), eligible, longest.data(), g.group_of.data()};
  for (size_t k = 0; k < groups; ++k) {
    thrust::tuple<float, float> acc = terms(g.members[static_cast<size_t>(g.start[k])]);
    for (RowIndex p = g.start[k] + 1; p < g.start[k + 1]; ++p)
      acc = CountAndMax()(acc, terms(g.members[static_cast<size_t>(p)]));
    top_count[k] = thrust::get<0>(acc);
    second[k] = thrust::get<1>(acc);
  }
  const ZeroFrom from{length.data(),    eligible,      members.data(),   longest.data(),
                      top_count.data(), second.data(), g.group_of.data()};
  std::vector<RowIndex> zero_from(length.size());
  for (size_t i = 0; i < zero_from.size(); ++i) {
    const int64_t z = from(static_cast<int64_t>(i));
    zero_from[i] = z >= cols ? kNoTail : static_cast<RowIndex>(z);
  }
  return zero_from;
}

// The group pass's plan, as one host copy: [start (groups + 1) | members | zero_from
// (per row)].
struct GroupPlan {
  const RowIndex* start;
  const RowIndex* members;
  const RowIndex* zero_from;
};

inline std::vector<RowIndex> PackPlan(const std::vector<RowIndex>& start, const std::vector<RowIndex>& members,
                                      const std::vector<RowIndex>& zero_from) {
  std::vector<RowIndex> plan(start);
  plan.insert(plan.end(), members.begin(), members.end());
  plan.insert(plan.end(), zero_from.begin(), zero_from.end());
  return plan;
}

// The row map of a group pass: row r is group r / chunks, tile r % chunks of `chunk`
// positions.
struct GroupTiles {
  int64_t cols, chunk, chunks;
  static GroupTiles Of(int64_t cols) {
    const int64_t chunk = std::min<int64_t>(cols, kRowThreads);
    return GroupTiles{cols, chunk, (cols + chunk - 1) / chunk};
  }
  __host__ __device__ int64_t Group(int64_t r) const { return r / chunks; }
  __host__ __device__ int64_t Position(int64_t r, int64_t j) const { return (r % chunks) * chunk + j; }
};

// ---- the plain key -----------------------------------------------------------------

// The forward scan's output: W at every token, and the row's length at its end.
struct OtbScanOut {
  float* w;
  float* length;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t, const OtbScan& acc) const {
    w[i * cols + t] = thrust::get<0>(acc);
    if (t == cols - 1) length[i] = thrust::get<1>(acc);
  }
};

// Position t of group g: B from the members' terms in element order, then every
// member's advantage (G - B) m over the W the scan left in `advantages` (each token is
// read and rewritten by this thread alone).
struct OtbGroupPass {
  const float* returns;
  float* advantages;
  const float* mask;
  GroupPlan plan;
  GroupTiles tiles;
  float epsilon;
  __host__ __device__ void operator()(int64_t r, int64_t j) const {
    const int64_t g = tiles.Group(r), t = tiles.Position(r, j), cols = tiles.cols;
    if (t >= cols) return;
    const RowIndex lo = plan.start[g], hi = plan.start[g + 1];
    const bool grouped = hi - lo > 1;
    float num = 0.0f, den = 0.0f;
    if (grouped) {
      const OtbTerms terms{returns, advantages, mask};
      for (RowIndex p = lo; p < hi; ++p) {
        const thrust::tuple<float, float> x = terms(plan.members[p] * cols + t);
        num += thrust::get<0>(x);
        den += thrust::get<1>(x);
      }
    }
    const float b = num / (den + epsilon);
    for (RowIndex p = lo; p < hi; ++p) {
      const RowIndex i = plan.members[p];
      const int64_t k = i * cols + t;
      const float bi = grouped && t < plan.zero_from[i] ? b : 0.0f;
      advantages[k] = (returns[k] - bi) * mask[k];
    }
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
  const std::vector<int64_t> codes = ToHostVector(policy, index, rows);
  MaskedRewardToGo(policy, rewards, mask, rows, cols, returns);
  PolicyScratch<float, P> length(policy, rows);
  CumulativeW<OtbScan>(policy, old_log_probs, sum_pi_squared, rho, mask, rows, cols,
                       OtbScanOut{advantages, length.get(), cols}, Footprint().Writes<float>(n).Writes<float>(rows));
  const HostGroups g = GroupCodes(codes);  // while the scans run
  std::vector<RowIndex> zero_from(static_cast<size_t>(rows), kNoTail);
  if (handle_zero_tail)
    zero_from =
        ZeroTail(g, ToHostVector(policy, static_cast<const float*>(length.get()), rows), nullptr, g.count, cols);
  const std::vector<RowIndex> host_plan = PackPlan(g.start, g.members, zero_from);
  PolicyScratch<RowIndex, P> plan(policy, static_cast<int64_t>(host_plan.size()));
  FromHostVector(policy, host_plan, plan.get());
  const GroupTiles tiles = GroupTiles::Of(cols);
  const RowIndex* p = plan.get();
  RowMap(policy, g.groups() * tiles.chunks, tiles.chunk,
         OtbGroupPass{returns, advantages, mask, GroupPlan{p, p + g.groups() + 1, p + g.groups() + 1 + rows}, tiles,
                      epsilon},
         Footprint().Reads<float>(n, 3).Reads<RowIndex>(static_cast<int64_t>(host_plan.size())).Writes<float>(n));
}

// ---- the multi-turn key: valid tokens packed to the left -----------------------------

// The forward scan's output: W at a valid token (0 elsewhere: the advantage of an
// invalid token), the valid token's position at its packed slot (its rank among the
// row's valid tokens), and at the row's end its length and count of valid tokens.
struct TirScanOut {
  float* w;
  RowIndex* position;
  float* length;
  float* valid;
  const float* mask;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t, const TirScan& acc) const {
    const int64_t k = i * cols + t;
    const bool kept = mask[k] != 0.0f;
    w[k] = kept ? thrust::get<0>(acc) : 0.0f;
    if (kept) position[i * cols + static_cast<int64_t>(thrust::get<2>(acc)) - 1] = static_cast<RowIndex>(t);
    if (t == cols - 1) {
      length[i] = thrust::get<1>(acc);
      valid[i] = thrust::get<2>(acc);
    }
  }
};

// G W and W of a valid token (the packed rows' values; the mask is already in W).
struct TirTerms {
  const float* returns;
  const float* w;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    return thrust::make_tuple(returns[k] * w[k], w[k]);
  }
};

// Packed position k of group g: as OtbGroupPass over the members that have a k-th
// valid token, read through its position.
struct TirGroupPass {
  const float* returns;
  float* advantages;
  const float* mask;
  const RowIndex* position;
  const float* valid;
  GroupPlan plan;  // members: the rows with a valid token
  GroupTiles tiles;
  float epsilon;
  __host__ __device__ void operator()(int64_t r, int64_t j) const {
    const int64_t g = tiles.Group(r), k = tiles.Position(r, j), cols = tiles.cols;
    if (k >= cols) return;
    const RowIndex lo = plan.start[g], hi = plan.start[g + 1];
    const bool grouped = hi - lo > 1;
    const float kf = static_cast<float>(k);
    float num = 0.0f, den = 0.0f;
    if (grouped) {
      const TirTerms terms{returns, advantages};
      for (RowIndex p = lo; p < hi; ++p) {
        const RowIndex i = plan.members[p];
        if (!(kf < valid[i])) continue;  // packed rows are 0 past their length
        const thrust::tuple<float, float> x = terms(i * cols + position[i * cols + k]);
        num += thrust::get<0>(x);
        den += thrust::get<1>(x);
      }
    }
    const float b = num / (den + epsilon);
    for (RowIndex p = lo; p < hi; ++p) {
      const RowIndex i = plan.members[p];
      if (!(kf < valid[i])) continue;
      const int64_t q = i * cols + position[i * cols + k];
      const float bi = grouped && k < plan.zero_from[i] ? b : 0.0f;
      advantages[q] = (returns[q] - bi) * mask[q];
    }
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
  const std::vector<int64_t> codes = ToHostVector(policy, index, rows);
  MaskedRewardToGo(policy, rewards, mask, rows, cols, returns);
  // A group's k-th packed tokens sit at a different position in every member, known only
  // once the member's row has been scanned: the one token-sized scratch, the positions.
  PolicyScratch<RowIndex, P> position(policy, n);
  PolicyScratch<float, P> row_values(policy, 2 * rows);
  float* length = row_values.get();
  float* valid = row_values.get() + rows;
  CumulativeW<TirScan>(policy, old_log_probs, sum_pi_squared, rho, mask, rows, cols,
                       TirScanOut{advantages, position.get(), length, valid, mask, cols},
                       Footprint().Writes<float>(n).Writes<RowIndex>(n).Writes<float>(2 * rows));
  const HostGroups g = GroupCodes(codes);  // while the scans run
  const std::vector<float> host_rows = ToHostVector(policy, static_cast<const float*>(row_values.get()), 2 * rows);
  const std::vector<float> host_length(host_rows.begin(), host_rows.begin() + rows);
  const float* host_valid = host_rows.data() + rows;

  // The groups without their empty rows.
  std::vector<RowIndex> start(g.start.size(), 0), members;
  std::vector<float> count(static_cast<size_t>(g.groups()));
  for (size_t k = 0; k < count.size(); ++k) {
    for (RowIndex p = g.start[k]; p < g.start[k + 1]; ++p) {
      const RowIndex i = g.members[static_cast<size_t>(p)];
      if (host_valid[i] > 0.0f) members.push_back(i);
    }
    start[k + 1] = static_cast<RowIndex>(members.size());
    count[k] = static_cast<float>(start[k + 1] - start[k]);
  }
  std::vector<RowIndex> zero_from(static_cast<size_t>(rows), kNoTail);
  if (handle_zero_tail) zero_from = ZeroTail(g, host_length, host_valid, count, cols);
  const std::vector<RowIndex> host_plan = PackPlan(start, members, zero_from);
  PolicyScratch<RowIndex, P> plan(policy, static_cast<int64_t>(host_plan.size()));
  FromHostVector(policy, host_plan, plan.get());
  const GroupTiles tiles = GroupTiles::Of(cols);
  const RowIndex* p = plan.get();
  const int64_t eligible = static_cast<int64_t>(members.size());
  RowMap(policy, g.groups() * tiles.chunks, tiles.chunk,
         TirGroupPass{returns, advantages, mask, position.get(), valid,
                      GroupPlan{p, p + g.groups() + 1, p + g.groups() + 1 + eligible}, tiles, epsilon},
         Footprint()
             .Reads<float>(n, 3)
             .Reads<RowIndex>(n)
             .Reads<float>(rows)
             .Reads<RowIndex>(static_cast<int64_t>(host_plan.size()))
             .Writes<float>(n));
}

}  // namespace verlconf::cuda
