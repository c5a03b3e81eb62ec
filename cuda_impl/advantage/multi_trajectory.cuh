// verl's per-session advantage of multi-output agent loops on CCCL, float32
// (oracle/advantage/multi_trajectory.h, the GRPO branch of
// v1.utils.compute_advantage_for_multi_trajectories), as a template over the Thrust
// execution policy (cuda_impl/core/system.cuh).
//
// Sessions are the (uid, session) pairs, made dense by a stable sort of the pairs with
// their rows; each session's final output is its first row at the largest turn (a
// reduce_by_key over the session's rows in element order); GRPO runs over the final
// outputs grouped by uid; the final output's advantage at its first valid token is
// broadcast over the session's rows times their masks.
#pragma once

#include <thrust/copy.h>
#include <thrust/functional.h>
#include <thrust/gather.h>
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

#include <cstdint>
#include <type_traits>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/grpo.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// 1 where a sorted (uid, session) pair starts a new session.
struct NewSessionFlag {
  const int64_t* uid;
  const int64_t* session;
  __host__ __device__ RowIndex operator()(int64_t p) const {
    return p > 0 && (uid[p] != uid[p - 1] || session[p] != session[p - 1]) ? 1 : 0;
  }
};

using TurnRow = thrust::tuple<float, RowIndex>;

// The final output of a session: the larger turn; on a tie, the earlier row (a later
// row replaces the current one only with a strictly larger turn).
struct FinalOutput {
  __host__ __device__ TurnRow operator()(const TurnRow& a, const TurnRow& b) const {
    const float ta = thrust::get<0>(a), tb = thrust::get<0>(b);
    if (tb > ta) return b;
    if (ta > tb) return a;
    return thrust::get<1>(a) <= thrust::get<1>(b) ? a : b;
  }
};

// t where the token is valid, else cols: the row's minimum is its first valid token.
struct ValidPosition {
  const float* mask;
  int64_t cols;
  __host__ __device__ int64_t operator()(int64_t k) const { return mask[k] != 0.0f ? k % cols : cols; }
};

struct MinI64 {
  __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};

// A_j m at the final output's first valid token (response_mask.argmax: position 0 when
// the row has none, where A_j m = A_j * 0).
struct SessionScore {
  const float* a;
  const RowIndex* final_row;
  const int64_t* first;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t j) const {
    const int64_t i = final_row[j];
    const int64_t t = first[i] < cols ? first[i] : 0;
    return a[j] * mask[i * cols + t];
  }
};

struct SessionTimesMask {
  const float* score;
  const RowIndex* session_of;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t k) const { return score[session_of[k / cols]] * mask[k]; }
};

// verl: compute_advantage_for_multi_trajectories with adv_estimator "grpo".
template <class Policy>
void multi_trajectory_grpo_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                     const int64_t* session, const float* turn, int64_t rows, int64_t cols,
                                     float epsilon, bool norm_adv_by_std, float* advantages) {
  using P = std::remove_reference_t<Policy>;
  const int64_t n = rows * cols;
  if (n <= 0) return;
  // Dense sessions.
  PolicyScratch<int64_t, P> su(policy, rows), ss(policy, rows);
  PolicyScratch<RowIndex, P> order(policy, rows), sorted_sid(policy, rows), session_of(policy, rows),
      final_row(policy, rows);
  thrust::copy(policy, index, index + rows, su.get());
  thrust::copy(policy, session, session + rows, ss.get());
  thrust::sequence(policy, order.get(), order.get() + rows, RowIndex{0});
  auto pairs = thrust::make_zip_iterator(thrust::make_tuple(su.get(), ss.get()));
  thrust::stable_sort_by_key(policy, pairs, pairs + rows, order.get());
  auto flags =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), NewSessionFlag{su.get(), ss.get()});
  thrust::inclusive_scan(policy, flags, flags + rows, sorted_sid.get());
  thrust::scatter(policy, sorted_sid.get(), sorted_sid.get() + rows, order.get(), session_of.get());
  auto candidates =
      thrust::make_zip_iterator(thrust::make_tuple(thrust::make_permutation_iterator(turn, order.get()), order.get()));
  const auto ends = thrust::reduce_by_key(
      policy, sorted_sid.get(), sorted_sid.get() + rows, candidates, thrust::make_discard_iterator(),
      thrust::make_zip_iterator(thrust::make_tuple(thrust::make_discard_iterator(), final_row.get())),
      thrust::equal_to<RowIndex>(), FinalOutput());
  const int64_t sessions = thrust::get<1>(ends.second.get_iterator_tuple()) - final_row.get();

  // GRPO over the final outputs, grouped by uid.
  PolicyScratch<float, P> s(policy, rows), fs(policy, sessions), a(policy, sessions), score(policy, sessions);
  PolicyScratch<int64_t, P> fu(policy, sessions), first(policy, rows);
  RowSums(policy, rewards, rows, cols, s.get());
  thrust::gather(policy, final_row.get(), final_row.get() + sessions, s.get(), fs.get());
  thrust::gather(policy, final_row.get(), final_row.get() + sessions, index, fu.get());
  GroupIds<P> g(policy, sessions);
  GroupBy(policy, fu.get(), g);
  GrpoRowAdvantages(policy, g, fs.get(), epsilon, norm_adv_by_std, a.get());

  // Read at the first valid token, broadcast over the session.
  auto row_keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentOf{cols});
  auto positions = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), ValidPosition{mask, cols});
  thrust::reduce_by_key(policy, row_keys, row_keys + n, positions, thrust::make_discard_iterator(), first.get(),
                        thrust::equal_to<int64_t>(), MinI64());
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(sessions),
                    score.get(), SessionScore{a.get(), final_row.get(), first.get(), mask, cols});
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), advantages,
                    SessionTimesMask{score.get(), session_of.get(), mask, cols});
}

}  // namespace verlconf::cuda
