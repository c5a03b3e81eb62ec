// The optimal-token-baseline estimators of verl/trainer/ppo/core_algos.py. float64.
//
// Per prompt group and token position t the baseline is a W-weighted mean of the
// group's returns,
//   B_t = sum_i G_{i,t} W_{i,t} / (sum_i W_{i,t} + epsilon),
//   W_{i,t} = sum_{j <= t} w_{i,j} m_{i,j},  w = (1 - 2 pi + sum pi^2) rho^2,
// with pi = exp(old_log_probs), rho the rollout IS weight (1 when absent) and G the
// masked reward-to-go. advantages = (G - B) * mask, returns = G. A singleton group has
// no baseline. With handle_zero_tail, a group's unique longest trajectory gets baseline
// 0 from the second-longest length on (ties for the longest: nothing is zeroed).
#pragma once

#include "oracle/advantage/returns.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct OtbConfig {
  bool handle_zero_tail = false;
  double epsilon = 0;
};

// verl: compute_optimal_token_baseline_advantage ("optimal_token_baseline"): positions
// are aligned as they stand, observation tokens included (they add nothing to W).
// Fully masked rows stay in their group (they count in N and in the longest /
// second-longest test).
// `cancellation`, when given, receives the rounding bound of the baselines in units of
// the dtype's eps: w = 1 - 2 pi + sum pi^2 cancels (pi near 1: 1 - 1.992 + 0.992), so
// each W carries eps times the size of its terms, and B_t moves by that over |sum_i W|:
// max over positions of sum_i |G_i - B| M_i / |sum_i W_i + epsilon|, M the running sum
// of |w|'s terms (and of |W| for the cumsum's own rounding).
AdvantageReturns optimal_token_baseline_advantage(const Array& rewards, const Array& mask, const Array& index,
                                                  const Array& old_log_probs, const Array& sum_pi_squared,
                                                  const Array* rollout_is_weights, const OtbConfig& cfg,
                                                  double* cancellation = nullptr);

// verl: compute_multi_turn_optimal_token_baseline_advantage
// ("tir_optimal_token_baseline"): each row's valid tokens are first packed to the left
// (observation tokens dropped), so B is indexed by the k-th valid token, not by the
// position; fully masked rows are left out of the groups.
AdvantageReturns tir_optimal_token_baseline_advantage(const Array& rewards, const Array& mask, const Array& index,
                                                      const Array& old_log_probs, const Array& sum_pi_squared,
                                                      const Array* rollout_is_weights, const OtbConfig& cfg,
                                                      double* cancellation = nullptr);

}  // namespace verlconf::oracle
