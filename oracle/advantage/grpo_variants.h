// GRPO's relatives in verl/trainer/ppo/core_algos.py: Pass@k GRPO and GDPO. float64,
// replaying verl's float32 steps where verl takes them.
#pragma once

#include "oracle/advantage/grpo.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// verl: compute_grpo_passk_outcome_advantage ("grpo_passk"). Per group only the best
// response gets a non-zero advantage:
//   A_best = (r_max - r_2nd) / (std_g + eps)   (or r_max - r_2nd without std)
// The flag comes from config.norm_adv_by_std_in_grpo; verl ignores the function's own
// norm_adv_by_std_in_grpo argument. Groups of one raise ValueError. With a tied
// maximum the advantage is 0 whichever tied index torch.topk picks.
// Pass@k's refusal, before any work: ValueError for a group of one.
void CheckPassAtKGroups(const Array& index);
Array grpo_passk_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, double epsilon,
                                   bool norm_adv_by_std_in_grpo);

// verl: compute_gdpo_outcome_advantage ("gdpo").
//   A = masked_whiten(sum_k w_k GRPO_k) * mask
// With reward components (B x K: verl's per-key non_tensor_batch scores) each GRPO_k
// runs on a float32 score tensor whatever the input dtype: verl builds it with
// torch.zeros_like(..., dtype=float32). The scalars (s - mean) / (std + eps) are then
// float32, while `* response_mask` and the weighted sum happen in the mask's dtype with
// the weights rounded to float32 (verl's torch.tensor(weights, dtype=float32)).
// Without components it is GRPO of token_level_rewards, whitened.
Array gdpo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, const Array* components,
                             const Array* weights, const GrpoConfig& cfg);
// What gdpo whitens: sum_k w_k GRPO_k, before masked_whiten.
Array gdpo_weighted_sum(const Array& rewards, const Array& mask, const Array& index, const Array* components,
                        const Array* weights, const GrpoConfig& cfg);

}  // namespace verlconf::oracle
