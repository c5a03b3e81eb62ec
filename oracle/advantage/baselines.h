// Baseline-subtracting outcome estimators of verl/trainer/ppo/core_algos.py: one scalar
// score per sequence (s_i = sum_t r_{i,t} over the whole row, mask ignored, as in GRPO),
// minus a baseline built from the other members of its prompt group, broadcast over
// the response mask. float64.
#pragma once

#include "oracle/advantage/returns.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// verl: compute_reinforce_plus_plus_baseline_outcome_advantage. s_i - mean_g (mean 0 for
// a singleton), broadcast, then whitened over the whole batch's valid tokens and
// masked: masked_whiten((s_i - mean_g) m) * m. Long responses weigh more in the
// whitening statistics because every token counts once.
Array reinforce_plus_plus_baseline_advantage(const Array& rewards, const Array& mask, const Array& index);

// verl: compute_rloo_outcome_advantage ("rloo"), a Python loop.
//   A_i = s_i n/(n-1) - mean_g n/(n-1)  (= s_i - mean of the others), n > 1
//   A_i = s_i                            for a singleton: its raw score, no baseline.
Array rloo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index);

// verl: compute_rloo_vectorized_outcome_advantage ("rloo_vectorized").
//   A_i = (n s_i - sum_g) / max(n - 1, 1) * [n > 1]
// Same as the loop version for n > 1, but a singleton gets 0, not its score.
Array rloo_vectorized_outcome_advantage(const Array& rewards, const Array& mask, const Array& index);

// verl: compute_opo_outcome_advantage ("opo"). Length-weighted baseline
//   b_g = sum_i |y_i| s_i / sum_i |y_i|,  |y_i| = sum_t m_{i,t}
// (0 for a singleton). A group whose rows all have length 0 gets b_g = 0/0 = NaN, and
// NaN * mask 0 stays NaN on every token of those rows.
Array opo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index);

// verl: compute_remax_outcome_advantage ("remax"). returns = masked reward-to-go;
// advantages = returns - b_i m_{i,t} with b_i the greedy rollout's reward
// (reward_baselines, one per sequence).
AdvantageReturns remax_outcome_advantage(const Array& rewards, const Array& reward_baselines, const Array& mask);

// verl: compute_gpg_outcome_advantage ("gpg").
//   A_i = alpha (s_i - mean_g) / f_norm,  alpha = B / max(#{i: s_i != 0}, 1)
// verl overwrites its `alpha` argument with that ratio (so the argument has no effect),
// computes it as a float32 tensor, as torch's int / tensor: float32(1/m) * B rounded
// again, and never divides by the group std it computes. A singleton's mean is 0.
Array gpg_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, double f_norm);

}  // namespace verlconf::oracle
