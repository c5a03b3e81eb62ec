// verl's per-session advantage for multi-output agent loops
// (verl/trainer/ppo/v1/utils.py compute_advantage_for_multi_trajectories). float64.
#pragma once

#include <string>

#include "oracle/advantage/grpo.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// An agent loop returns several outputs (rows) per session; verl keys each row as
// "{uid}_{session_id}_{turn}". For GRPO only the session's final output (largest turn;
// on a tie the first such row) enters the group statistics, and its advantage, read at
// its first valid token, is broadcast over every row of the session times that row's
// mask. A final output with no valid token reads position 0, i.e. 0, and its whole
// session gets 0 although its score counted in the group.
//
// `session` codes identify a session together with `index` (the uid); `turn` is the
// row's output index within its session. epsilon is verl's default: the dispatcher does
// not pass one.
Array multi_trajectory_grpo_advantage(const Array& rewards, const Array& mask, const Array& index, const Array& session,
                                      const Array& turn, const GrpoConfig& cfg);

}  // namespace verlconf::oracle
