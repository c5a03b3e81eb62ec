// Reward-side KL of verl: the in-reward KL penalty (trainer/ppo/ray_trainer.py
// apply_kl_penalty), its older sibling core_algos.compute_rewards, and the KL
// coefficient controllers (core_algos.FixedKLController / AdaptiveKLController, built by
// get_kl_controller from algorithm.kl_ctrl). float64.
#pragma once

#include <string>

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// algorithm.kl_ctrl: type "fixed" or "adaptive", with verl's KLControlConfig defaults.
// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct KlControl {
  std::string type;
  double kl_coef = 0;
  double target_kl = 0;
  double horizon = 0;
};

// get_kl_controller(kl_ctrl).update(current_kl, n_steps); returns the coefficient after
// the update.
//   fixed:    unchanged
//   adaptive: coef * (1 + clip(current_kl / target_kl - 1, -0.2, 0.2) * n_steps / horizon)
// A type other than the two raises NotImplementedError; an adaptive horizon <= 0 fails
// get_kl_controller's assert (AssertionError); target_kl = 0 is a Python float division
// by zero (ZeroDivisionError). A NaN current_kl passes np.clip and poisons the
// coefficient for good.
double kl_controller_update(const KlControl& ctrl, double current_kl, double n_steps);

// verl: core_algos.compute_rewards. scores - (old_log_prob - ref_log_prob) * kl_ratio,
// on every token: no mask, always the k1 estimator.
Array compute_rewards(const Array& token_level_scores, const Array& old_log_prob, const Array& ref_log_prob,
                      double kl_ratio);

struct KlPenaltyResult {
  Array token_level_rewards;  // scores - beta * kl_penalty(old, ref) * mask
  double current_kl;          // metric actor/reward_kl_penalty
  double beta;                // metric actor/reward_kl_penalty_coeff: the coefficient *before* the update
  double next_coef;           // the controller's coefficient after update(current_kl, B)
};

// verl: ray_trainer.apply_kl_penalty.
//   kld = kl_penalty(old_log_probs, ref_log_prob, name) * mask
//   current_kl = mean over rows of masked_mean(kld, mask, axis=-1)
// The row means divide by (sum(mask) + 1e-8), so a fully masked row contributes 0 and
// still counts in the batch mean; the controller is then updated with n_steps = B.
KlPenaltyResult apply_kl_penalty(const Array& token_level_scores, const Array& old_log_probs, const Array& ref_log_prob,
                                 const Array& response_mask, const std::string& kl_penalty, const KlControl& ctrl);

}  // namespace verlconf::oracle
