// Advantage estimators of verl/trainer/ppo/core_algos.py, float64.
//
// Inputs follow verl's layout: token_level_rewards and response_mask are B x T, the
// group index holds one int64 code per sequence (verl's string uids, encoded).
#pragma once

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct GrpoConfig {
  double epsilon = 0;
  bool norm_adv_by_std_in_grpo = false;
};

// verl: compute_grpo_outcome_advantage ("grpo"). Returns advantages (== returns).
//
//   s_i = sum_t r_{i,t}                  (every token, mask ignored)
//   A_i = (s_i - mean_g) / (std_g + eps)  std_g unbiased (n - 1); or s_i - mean_g (Dr.GRPO)
//   A_{i,t} = A_i * mask_{i,t}
//
// Singleton groups use mean 0 and std 1, and verl builds those as float32 tensors:
// for float64 inputs the singleton denominator is float32(1 + eps), not 1 + eps.
Array grpo_outcome_advantage(const Array& token_level_rewards, const Array& response_mask, const Array& index,
                             const GrpoConfig& cfg);

// verl: compute_grpo_vectorized_outcome_advantage ("grpo_vectorized").
//
// Same formula, but the group statistics come from verl.utils.groupwise.group_mean_std,
// which casts the scores to float32, accumulates in float32 in element order, and
// floors the variance at 0 before the square root. Only then does the float64
// difference s_i - mean_g happen, and std_g + eps is rounded to float32. This oracle
// reproduces that float32 arithmetic step by step, so float64 goldens match to 1e-10.
Array grpo_vectorized_outcome_advantage(const Array& token_level_rewards, const Array& response_mask,
                                        const Array& index, const GrpoConfig& cfg);

}  // namespace verlconf::oracle
