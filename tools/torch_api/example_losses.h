// A small LibTorch implementation of some of verl's functions, the way a C++ framework
// would write them: forward with ATen ops, gradients from torch autograd. It is what
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

// verl's other registered policy losses, each after verl 0.9.1's
// compute_policy_loss_<name> in core_algos.py: "gspo", "sapo", "gpg", "cispo", "dro",
// "geo_mean", "dppo_tv", "dppo_kl" ("vanilla" is VanillaPolicyLoss). Outputs pg_loss,
// grads log_prob (autograd, with verl's stop-gradients), metrics as verl returns them
// (gpg: none; dro: ppo_kl only). Throws VerlError("ValueError") for dro without a
// positive dro_beta, as verl does; std::invalid_argument for any other name.
TorchResult FamilyPolicyLoss(const TensorMap& inputs, const Config& config, const std::string& name);

// Every policy loss this file implements (registry names, family "policy_loss"):
// "vanilla" and the FamilyPolicyLoss names.
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
