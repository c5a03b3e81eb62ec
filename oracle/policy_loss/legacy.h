// Policy losses of core_algos.py outside POLICY_LOSS_REGISTRY, float64: REINFORCE with
// rollout IS weights, and the deprecated tuple-returning PPO loss.
#pragma once

#include "oracle/policy_loss/vanilla.h"

namespace verlconf::oracle {

// verl: core_algos.compute_policy_loss_reinforce (called by the "bypass_mode" loss).
//
//   L = -A * log_prob * w      (w: rollout IS weights, constants; 1 when absent)
//   loss = agg_loss(L, mask, mode, global_batch_info)
//   actor/ppo_kl = masked_mean(-(log_prob - rollout_log_prob))   (no clamp)
// in.old_log_prob holds verl's rollout_log_prob. Gradient: -A * w * agg weight.
PolicyLossResult policy_loss_reinforce(const PolicyLossInputs& in, const std::string& loss_agg_mode,
                                       const GlobalBatchInfo& global);

// verl: core_algos.compute_policy_loss (deprecated in favour of
// compute_policy_loss_vanilla): the same dual-clip PPO loss, without IS weights and
// without global_batch_info (agg_loss's defaults), with cliprange_low / cliprange_high
// falling back to cliprange. Metrics are the tuple's elements under the keys
// "pg_clipfrac", "ppo_kl", "pg_clipfrac_lower".
PolicyLossResult policy_loss_deprecated(const PolicyLossInputs& in, double cliprange_low, double cliprange_high,
                                        double clip_ratio_c, const std::string& loss_agg_mode);

}  // namespace verlconf::oracle
