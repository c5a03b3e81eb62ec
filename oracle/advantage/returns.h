// The return-based estimators of verl/trainer/ppo/core_algos.py: GAE (with a critic)
// and REINFORCE++ (discounted returns), plus the masked reward-to-go that ReMax and the
// optimal-token-baseline estimators share. float64.
#pragma once

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// What every estimator returns: verl's (advantages, returns) pair. Outcome estimators
// return the same tensor twice.
struct AdvantageReturns {
  Array advantages;
  Array returns;
};

// G_t = sum_{s >= t} r_s m_s, accumulated from the last token backwards in the order of
// verl's flip().cumsum().flip(), so that float64 results agree bit for bit.
Array MaskedRewardToGo(const Array& rewards, const Array& mask);

// verl: compute_gae_advantage_return ("gae").
//
//   delta_t = r_t + gamma V_{t+1} - V_t,  A_t = delta_t + gamma lam A_{t+1}
//
// walked backwards, where an observation token (mask 0) passes V_{t+1} and A_{t+1}
// through unchanged. returns = A + V before whitening; advantages = masked_whiten(A)
// over the valid tokens, and *not* multiplied by the mask afterwards: padding and
// observation tokens carry (A_t - mean) / std, which is not 0.
AdvantageReturns gae_advantage_return(const Array& rewards, const Array& values, const Array& mask, double gamma,
                                      double lam);

// verl: compute_reinforce_plus_plus_outcome_advantage ("reinforce_plus_plus").
//
//   G_t = (r_t + gamma G_{t+1}) m_t, with G carried unchanged across observation tokens
//
// so a reward sitting on an observation token is lost. advantages =
// masked_whiten(G) * mask.
AdvantageReturns reinforce_plus_plus_advantage(const Array& rewards, const Array& mask, double gamma);

}  // namespace verlconf::oracle
