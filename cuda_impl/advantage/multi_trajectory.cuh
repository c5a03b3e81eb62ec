// verl's per-session advantage of multi-output agent loops on CCCL, float32
// (oracle/advantage/multi_trajectory.h, the GRPO branch of
// v1.utils.compute_advantage_for_multi_trajectories), as a template over the Thrust
// execution policy (cuda_impl/core/system.cuh).
//
// Sessions are the (uid, session) pairs in first-appearance order; each session's final
// output is its first row at the largest turn; GRPO runs over the final outputs grouped
// by uid; the final output's advantage at its first valid token is broadcast over the
// session's rows times their masks. One row pass gives every row's score and first
// valid token; the sessions, the GRPO and the broadcast values are row-sized work on
// the host; one row map writes the advantages.
#pragma once

#include <thrust/tuple.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/advantage/grpo.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// A row's score and its first valid token: (sum of r, key, mask at the key), the key t
// for a valid token and cols + t for the others, so the least key is the first valid
// token, or position 0 when the row has none (response_mask.argmax).
using ScoreAndFirst = thrust::tuple<float, int64_t, float>;

struct ScoreAndFirstAt {
  const float* rewards;
  const float* mask;
  int64_t cols;
  __host__ __device__ ScoreAndFirst operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float m = mask[k];
    return ScoreAndFirst(rewards[k], m != 0.0f ? t : cols + t, m);
  }
};

struct SumAndFirst {
  __host__ __device__ ScoreAndFirst operator()(const ScoreAndFirst& a, const ScoreAndFirst& b) const {
    const bool first = thrust::get<1>(a) <= thrust::get<1>(b);
    return ScoreAndFirst(thrust::get<0>(a) + thrust::get<0>(b), first ? thrust::get<1>(a) : thrust::get<1>(b),
                         first ? thrust::get<2>(a) : thrust::get<2>(b));
  }
};

// A session's key: (uid, session).
using SessionKey = std::pair<int64_t, int64_t>;

inline uint64_t MixSession(const SessionKey& key) {
  return MixCode(key.first) ^ (MixCode(key.second ^ 0x5851F42D4C957F2Dll) >> 17);
}

// verl: compute_advantage_for_multi_trajectories with adv_estimator "grpo".
template <class Policy>
void multi_trajectory_grpo_advantage(Policy&& policy, const float* rewards, const float* mask, const int64_t* index,
                                     const int64_t* session, const float* turn, int64_t rows, int64_t cols,
                                     float epsilon, bool norm_adv_by_std, float* advantages) {
  if (rows <= 0 || cols <= 0) return;
  const std::vector<int64_t> uid = ToHostVector(policy, index, rows), sid = ToHostVector(policy, session, rows);
  const std::vector<float> turns = ToHostVector(policy, turn, rows);

  // Sessions and their final outputs, worked out during the row pass: a later row
  // replaces the current one only with a strictly larger turn.
  HostGroups sessions;
  std::vector<RowIndex> final_row;
  const std::vector<ScoreAndFirst> row =
      RowPartialsWhile(policy, rows, cols, ScoreAndFirst(0.0f, 2 * cols, 0.0f), SumAndFirst(),
                       ScoreAndFirstAt{rewards, mask, cols}, Footprint().Reads<float>(rows * cols, 2), [&] {
                         std::vector<SessionKey> keys(static_cast<size_t>(rows));
                         for (size_t i = 0; i < keys.size(); ++i) keys[i] = SessionKey(uid[i], sid[i]);
                         sessions = GroupKeys(keys, MixSession);
                         final_row.resize(static_cast<size_t>(sessions.groups()));
                         for (size_t j = 0; j < final_row.size(); ++j) {
                           RowIndex f = sessions.members[static_cast<size_t>(sessions.start[j])];
                           for (RowIndex p = sessions.start[j] + 1; p < sessions.start[j + 1]; ++p) {
                             const RowIndex i = sessions.members[static_cast<size_t>(p)];
                             if (turns[static_cast<size_t>(f)] < turns[static_cast<size_t>(i)]) f = i;
                           }
                           final_row[j] = f;
                         }
                       });

  // GRPO over the final outputs, grouped by uid, read at their first valid token.
  std::vector<int64_t> final_uid(final_row.size());
  std::vector<float> final_score(final_row.size());
  for (size_t j = 0; j < final_row.size(); ++j) {
    final_uid[j] = uid[static_cast<size_t>(final_row[j])];
    final_score[j] = thrust::get<0>(row[static_cast<size_t>(final_row[j])]);
  }
  const std::vector<float> a = GrpoRowAdvantages(GroupCodes(final_uid), final_score, epsilon, norm_adv_by_std);
  std::vector<float> per_row(static_cast<size_t>(rows));
  for (size_t i = 0; i < per_row.size(); ++i) {
    const size_t j = static_cast<size_t>(sessions.group_of[i]);
    per_row[i] = a[j] * thrust::get<2>(row[static_cast<size_t>(final_row[j])]);
  }
  RowsTimesMask(policy, per_row, mask, rows, cols, advantages);
}

}  // namespace verlconf::cuda
