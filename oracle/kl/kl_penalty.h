// kl_penalty of verl/trainer/ppo/core_algos.py: per-token KL estimators between the
// policy (logprob) and a reference (ref_logprob), float64, with d/d logprob.
//
// With d = logprob - ref_logprob (Schulman, "Approximating KL divergence"):
//   k1 ("kl")         d
//   abs               |d|
//   k2 ("mse")        d^2 / 2
//   k3 ("low_var_kl") exp(-d') + d' - 1 with d' = clamp(d, -20, 20), the result
//                     clamped to [-10, 10]  (verl writes it with kl = -d)
// A trailing "+" (e.g. "k3+") keeps the forward value but takes the gradient of k2:
// verl's straight-through construction  k2 - k2.detach() + value.detach().
#pragma once

#include <string>
#include <vector>

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// Every name verl 0.9.1's kl_penalty accepts, aliases and straight-through variants
// included, then the two it accepts only to raise NotImplementedError.
inline const std::vector<std::string> kKlPenaltyNames = {"kl",  "k1",  "abs",  "mse",  "k2",  "low_var_kl",  "k3",
                                                         "kl+", "k1+", "abs+", "mse+", "k2+", "low_var_kl+", "k3+"};
inline const std::vector<std::string> kKlPenaltyNotImplemented = {"full", "full+"};

struct KlEstimator {
  enum Kind { kK1, kAbs, kK2, kK3 } kind;
  bool straight_through;  // name ends with "+"
};

// Parses every name verl's kl_penalty accepts. "full" throws
// VerlError(NotImplementedError), as verl does; any other unknown name likewise.
KlEstimator ParseKlName(const std::string& name);

double kl_value(KlEstimator e, double logprob, double ref_logprob);
double kl_grad_logprob(KlEstimator e, double logprob, double ref_logprob);

Array kl_penalty(const Array& logprob, const Array& ref_logprob, const std::string& name);
// Gradient of sum(kl_penalty(...)) with respect to logprob.
Array kl_penalty_grad(const Array& logprob, const Array& ref_logprob, const std::string& name);

}  // namespace verlconf::oracle
