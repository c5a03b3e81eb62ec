// A small LibTorch implementation of some of verl's functions, the way a C++ framework
// would write them: forward with ATen ops, gradients from torch autograd. Each reads its
// config completed with verl's defaults (WithVerlDefaults), so no default is restated here. It is what
// example_vanilla checks against verl's goldens, and what gradient_libtorch_test holds
// the oracle's analytic gradients against.
#pragma once

#include <string>
#include <vector>

#include "tools/torch_api/verlconf_torch.h"

namespace verlconf::torch_api::example {

// Planted bugs, for the tests and for `example_vanilla --bug=...`.
enum class Bug {
  kNone,
  kNoLogRatioClamp,  // vanilla: exp(log_prob - old_log_prob) without verl's clamp to [-20, 20]
  kWrongSign,        // vanilla: pg_losses = +A * ratio (a sign slip)
  kNativeClamp,      // vanilla: at::clamp, which in LibTorch 1.13 passes the gradient at its bounds
};

// verl's compute_policy_loss_vanilla ("vanilla"), followed by agg_loss:
// outputs pg_loss, grads log_prob, metrics actor/pg_clipfrac, actor/ppo_kl,
// actor/pg_clipfrac_lower. Throws VerlError("AssertionError") for clip_ratio_c <= 1.
TorchResult VanillaPolicyLoss(const TensorMap& inputs, const Config& config, Bug bug = Bug::kNone);

// verl's other policy losses of log_prob, each after verl 0.9.1's function in
// core_algos.py: compute_policy_loss_<name> for "gspo", "sapo", "gpg", "cispo", "dro",
// "geo_mean", "dppo_tv", "dppo_kl", "clip_cov", "kl_cov", "bypass_mode", and the
// registry names "compute_policy_loss_reinforce" and "compute_policy_loss" (the
// deprecated one) ("vanilla" is VanillaPolicyLoss). Outputs pg_loss, grads log_prob
// (autograd, with verl's stop-gradients), metrics as verl returns them (gpg: none; dro
// and reinforce: ppo_kl only; compute_policy_loss: its tuple's pg_clipfrac, ppo_kl,
// pg_clipfrac_lower; bypass_mode: its loss's plus the rollout_corr/ ones its config
// turns on). clip_cov and kl_cov take verl's pick of tokens as the input cov_selected
// (without it: verl's errors, else Unsupported). bypass_mode computes its IS weights
// and rejection mask with ATen under no_grad (constants to autograd) and ignores its
// rollout_is_weights input, as verl does. Throws VerlError where verl raises (dro
// without a positive dro_beta, a non-positive clip_cov_ratio / kl_cov_ratio,
// clip_ratio_c <= 1, bypass_mode's invalid loss_type, thresholds, empty mask or
// all-zero IcePop weights); std::invalid_argument for any other name.
TorchResult FamilyPolicyLoss(const TensorMap& inputs, const Config& config, const std::string& name);

// verl's compute_value_loss: outputs vf_loss, grads vpreds, metric vf_clipfrac.
TorchResult ValueLoss(const TensorMap& inputs, const Config& config);

// verl's compute_entropy_loss: outputs entropy_loss, grads logits (B x T x V).
TorchResult EntropyLoss(const TensorMap& inputs, const Config& config);

// The KL loss term the actor adds (verl/workers/utils/losses.py ppo_loss with
// use_kl_loss): kl_loss_coef * agg_loss(kl_penalty(log_prob, ref_log_prob,
// kl_loss_type)). Outputs kl_term, grads log_prob, metric kl_loss (before the coef).
// VerlError("NotImplementedError") for "full", as verl.
TorchResult ActorKlLoss(const TensorMap& inputs, const Config& config);

// Every policy loss this file implements (registry names, family "policy_loss").
const std::vector<std::string>& PolicyLossNames();

// verl's agg_loss for one loss_agg_mode: outputs loss, grads loss_mat.
TorchResult AggLoss(const TensorMap& inputs, const Config& config, const std::string& mode);

// verl's kl_penalty for one name ("k1", "low_var_kl", "k3+", ...): outputs kl, grads
// logprob (of sum(kl)).
TorchResult KlPenalty(const TensorMap& inputs, const std::string& name);

// The same as a CandidateFn for CheckAgainstGolden.
CandidateFn VanillaCandidate(Bug bug = Bug::kNone);
CandidateFn PolicyLossCandidate(const std::string& name);  // any PolicyLossNames() entry
CandidateFn AggCandidate(const std::string& mode);
CandidateFn KlCandidate(const std::string& name);

}  // namespace verlconf::torch_api::example
