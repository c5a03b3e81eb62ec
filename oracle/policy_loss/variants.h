// The policy losses of verl/trainer/ppo/core_algos.py beyond vanilla PPO, float64:
// gspo, sapo, gpg, cispo, dro, geo_mean, dppo_tv, dppo_kl. Each returns the scalar
// loss, the gradient with respect to log_prob as verl's autograd computes it, verl's
// metrics (verl's names) and the tokens at a rounding-level decision.
//
// Stop-gradients are the point of several of these losses: what verl wraps in
// .detach() is a constant to autograd, so the gradient is not the derivative of the
// loss's value. Each such loss records its detached quantities (`PolicyLossDetached`)
// and can be re-evaluated with them held fixed at another point; the derivative of
// that re-evaluation, at the point where they were recorded, is verl's gradient
// (properties/gradcheck_test.cc differentiates it numerically).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/tensor.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::oracle {

// What the losses read from verl's ActorConfig. Each loss reads only its own keys.
// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct PolicyLossFamilyConfig {
  double clip_ratio_low = 0;       // clip_ratio_low, or clip_ratio when None
  double clip_ratio_high = 0;      // clip_ratio_high, or clip_ratio when None
  double clip_ratio_c = 0;         // ActorConfig.clip_ratio_c (dppo: truncation bound)
  double tau_pos = 0;              // ActorConfig.tau_pos (sapo)
  double tau_neg = 0;              // ActorConfig.tau_neg (sapo)
  std::optional<double> dro_beta;  // ActorConfig.policy_loss.dro_beta (dro)
  std::string loss_agg_mode;
  GlobalBatchInfo global;
};

// The values verl detaches, as recorded at one evaluation.
struct PolicyLossDetached {
  std::vector<double> seq_log_ratio;  // gspo: per row, sg[mean_t (log_prob - old_log_prob)]
  Array log_prob;                     // gspo: sg[log_prob]
  Array clipped_ratio;                // cispo: sg[clamp(ratio, 1 - eps_low, 1 + eps_high)]
  Array truncated_ratio;              // dppo: sg[clamp(ratio, max=clip_ratio_c)]
  Array valid;                        // dppo: sg[divergence mask]
};

// `frozen`: evaluate with these detached values instead of recomputing them (null:
// verl's forward pass). `detached`: where to record the detached values (may be null).
using FamilyLossFn = PolicyLossResult (*)(const PolicyLossInputs&, const PolicyLossFamilyConfig&,
                                          const PolicyLossDetached* frozen, PolicyLossDetached* detached);

// verl: compute_policy_loss_gspo ("gspo"). Sequence-level ratio with verl's
// construction log s_{i,t} = log_prob - sg[log_prob] + sg[mean_t masked log-ratio],
// clamped above at 10 (no lower clamp, no +-20 clamp), then the PPO clip without dual
// clip. Value: every token of a row has the row's ratio; gradient: d s_{i,t}/d log_prob
// = s_{i,t} on that token only. pg_clipfrac_lower is 0.
PolicyLossResult policy_loss_gspo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                  const PolicyLossDetached* frozen = nullptr, PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_sapo ("sapo"). L = -A * sigmoid(tau (r - 1)) * 4 / tau,
// tau = tau_pos where A > 0 else tau_neg; always aggregated with seq-mean-token-mean,
// whatever loss_agg_mode says. Both clip fractions are 0.
PolicyLossResult policy_loss_sapo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                  const PolicyLossDetached* frozen = nullptr, PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_gpg ("gpg"). L = -log_prob * A; no metrics at all.
PolicyLossResult policy_loss_gpg(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                 const PolicyLossDetached* frozen = nullptr, PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_cispo ("cispo"). L = -sg[clamp(r, 1 - eps_low, 1 + eps_high)]
// * A * log_prob; gradient -clip(r) * A. pg_clipfrac = masked_mean(r != clip(r)).
PolicyLossResult policy_loss_cispo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                   const PolicyLossDetached* frozen = nullptr, PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_dro ("dro"). L = -(log_prob * A - beta/2 (log_prob -
// old_log_prob)^2), no clamp; ValueError unless dro_beta > 0. Only metric: ppo_kl.
// dro's refusal of its beta (ValueError unless set and > 0), before anything else; the beta.
double CheckDroBeta(const std::optional<double>& dro_beta);
PolicyLossResult policy_loss_dro(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                 const PolicyLossDetached* frozen = nullptr, PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_geo_mean ("geo_mean", GMPO). Per row: the token log-ratios
// (unclamped) clipped to [-eps_low, eps_high] on the side the advantage's sign selects,
// averaged over the row (denominator count + 1e-8), exponentiated; times minus the
// row's mean advantage (same denominator) and the geometric mean of the IS weights.
// The loss is the plain mean over all B rows (fully masked rows included): agg_loss,
// loss_agg_mode and global_batch_info play no part.
PolicyLossResult policy_loss_geo_mean(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                      const PolicyLossDetached* frozen = nullptr,
                                      PolicyLossDetached* detached = nullptr);

// verl: compute_policy_loss_dppo_tv / compute_policy_loss_dppo_kl ("dppo_tv",
// "dppo_kl"). L = -A * sg[min(r, clip_ratio_c)] * log_prob * sg[valid], where valid
// keeps a token whose probability moved less than the divergence threshold in the
// direction its advantage pushes (TV: p - p_old; KL: the binary KL of (p_old, p)).
// pg_clipfrac = masked_mean(1 - valid), pg_clipfrac_lower = masked_mean((r > c) * valid).
PolicyLossResult policy_loss_dppo_tv(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                     const PolicyLossDetached* frozen = nullptr,
                                     PolicyLossDetached* detached = nullptr);
PolicyLossResult policy_loss_dppo_kl(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                     const PolicyLossDetached* frozen = nullptr,
                                     PolicyLossDetached* detached = nullptr);

}  // namespace verlconf::oracle
