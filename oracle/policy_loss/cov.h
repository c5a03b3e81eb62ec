// The covariance-selected policy losses of verl/trainer/ppo/core_algos.py, float64:
// clip_cov and kl_cov (Cui et al., "The Entropy Mechanism of RL for Reasoning LMs").
//
// Both pick tokens by the centred covariance cov = (A - mean A)(log_prob - mean
// log_prob). verl makes the pick with torch: clip_cov draws a random subset
// (torch.randperm on the global generator), kl_cov takes torch.topk, whose order among
// tied covariances is torch's. Neither can be reproduced bit for bit without torch, so
// the pick is an input here (`selected`, a 0/1 B x T mask; the golden fixtures hold
// verl's own pick as inputs/cov_selected). Given the pick, the loss is a deterministic
// function of log_prob and its gradient is the derivative with the pick held fixed (verl
// picks with integer indexing, which carries no gradient).
//
// Without a recorded pick (property tests), the *_default_selection functions pick
// deterministically: clip_cov the first candidates in row-major order (the identity
// permutation, one of verl's equally likely draws); kl_cov the k largest covariances,
// ties broken towards the lower row-major index.
#pragma once

#include <string>
#include <vector>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/tensor.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::oracle {

// ActorConfig / ActorConfig.policy_loss keys (verl.workers.config.actor.PolicyLossConfig).
// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct CovLossConfig {
  double clip_ratio_low = 0;   // clip_cov: clip_ratio_low, or clip_ratio when None
  double clip_ratio_high = 0;  // clip_cov: clip_ratio_high, or clip_ratio when None
  double clip_cov_ratio = 0;
  double clip_cov_lb = 0;
  double clip_cov_ub = 0;
  double kl_cov_ratio = 0;
  double ppo_kl_coef = 0;  // PolicyLossConfig's (the function's own default 1.0 never applies)
  std::string loss_agg_mode;
  GlobalBatchInfo global;
};

// verl: compute_policy_loss_clip_cov ("clip_cov"). r = exp(log_prob - old_log_prob),
// unclamped; L = max(-A r, -A clamp(r, 1 - eps_low, 1 + eps_high)) * (1 - sel) * w (no
// dual clip), aggregated. Metrics: pg_clipfrac = masked_mean(sel) (the share of tokens
// the pick zeroed, not of tokens clipped), ppo_kl = masked_mean(-(log_prob -
// old_log_prob)). AssertionError unless clip_cov_ratio > 0.
// The losses' first checks, as verl asserts them: the pick ratio > 0 (AssertionError),
// then a recorded pick (cov_selected) that is 0/1, of the mask's shape, on valid tokens
// only (BadInput: the capture's contract, not verl's).
void CheckClipCovRatio(double clip_cov_ratio);
void CheckKlCovRatio(double kl_cov_ratio);
void CheckCovSelection(const Array& selected, const Array& mask);
PolicyLossResult policy_loss_clip_cov(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& selected);

// verl: compute_policy_loss_kl_cov ("kl_cov"). L = (-A r + sel * ppo_kl_coef |log_prob -
// old_log_prob|) * w, aggregated; d|x|/dx = sign(x) (0 at 0, as torch's abs). Metric:
// ppo_kl = masked_mean(|log_prob - old_log_prob|) (absolute, unlike the other losses).
// AssertionError unless kl_cov_ratio > 0.
PolicyLossResult policy_loss_kl_cov(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& selected);

// clip_cov's candidates: valid tokens that PPO's clip left alone (not -A clip(r) > -A r)
// with lb < (A - masked_mean A)(log_prob - masked_mean log_prob) < ub; verl zeroes
// min(max(int(clip_cov_ratio * sum(mask)), 1), #candidates) of them.
Array clip_cov_candidates(const PolicyLossInputs& in, const CovLossConfig& cfg);
Array clip_cov_default_selection(const PolicyLossInputs& in, const CovLossConfig& cfg);
// kl_cov: over the n valid tokens, cov with plain means; k = max(1, int(n * kl_cov_ratio))
// (none when n = 0).
Array kl_cov_covariance(const PolicyLossInputs& in);  // 0 on masked tokens
Array kl_cov_default_selection(const PolicyLossInputs& in, const CovLossConfig& cfg);
// The other picks kl_cov may equally make: where the covariances at the pick's edge (the
// last picked and the first left out) are apart by no more than their rounding in the
// case's dtype, torch.topk's choice among them is decided by that rounding, or, for an
// exact tie, by torch's own order (two valid tokens always tie: each covariance is
// (A_0 - A_1)(l_0 - l_1) / 4). Each other choice of as many tokens from that tied set is
// returned, the rest of `sel` kept, at most `max` of them; `*more` is set when there
// are more than that.
std::vector<Array> kl_cov_tied_selections(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& sel,
                                          size_t max, bool* more);
// How many tokens verl picks (clip_cov: at most; kl_cov: exactly).
int64_t clip_cov_pick_count(const PolicyLossInputs& in, const CovLossConfig& cfg);
int64_t kl_cov_pick_count(const PolicyLossInputs& in, const CovLossConfig& cfg);

}  // namespace verlconf::oracle
