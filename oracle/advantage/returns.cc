// Mirrors verl 0.9.1 core_algos.compute_gae_advantage_return and
// compute_reinforce_plus_plus_outcome_advantage.
#include "oracle/advantage/returns.h"

#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

Array MaskedRewardToGo(const Array& rewards, const Array& mask) {
  Array g(rewards.shape, rewards.dtype);
  for (int64_t i = 0; i < rewards.rows(); ++i) {
    double acc = 0.0;  // a plain running sum: verl's cumsum is sequential, and cancellation
                       // between rewards of opposite sign must round the way verl's does
    for (int64_t t = rewards.cols() - 1; t >= 0; --t) {
      acc += rewards.at(i, t) * mask.at(i, t);
      g.at(i, t) = acc;
    }
  }
  return g;
}

AdvantageReturns gae_advantage_return(const Array& rewards, const Array& values, const Array& mask, double gamma,
                                      double lam) {
  Array a(rewards.shape, rewards.dtype);
  // verl writes `gamma * lam * lastgaelam` as Python floats first: the product gamma*lam
  // is rounded once before it meets the tensor.
  const double gamma_lam = gamma * lam;
  for (int64_t i = 0; i < rewards.rows(); ++i) {
    double next_value = 0.0, last = 0.0;
    for (int64_t t = rewards.cols() - 1; t >= 0; --t) {
      const double m = mask.at(i, t), v = values.at(i, t);
      const double delta = rewards.at(i, t) + gamma * next_value - v;
      const double fresh = delta + gamma_lam * last;
      // An observation token neither updates the bootstrap value nor the running
      // advantage; the blend is verl's, so it is written the same way.
      next_value = v * m + (1.0 - m) * next_value;
      last = fresh * m + (1.0 - m) * last;
      a.at(i, t) = last;
    }
  }
  AdvantageReturns out;
  out.returns = Array(a.shape, a.dtype);
  for (int64_t k = 0; k < a.size(); ++k) out.returns[k] = a[k] + values[k];
  out.advantages = masked_whiten(a, mask, /*shift_mean=*/true);
  return out;
}

AdvantageReturns reinforce_plus_plus_advantage(const Array& rewards, const Array& mask, double gamma) {
  Array g(rewards.shape, rewards.dtype);
  for (int64_t i = 0; i < rewards.rows(); ++i) {
    double running = 0.0;
    for (int64_t t = rewards.cols() - 1; t >= 0; --t) {
      const double m = mask.at(i, t);
      const double fresh = rewards.at(i, t) + gamma * running;
      g.at(i, t) = fresh * m;
      running = fresh * m + running * (1.0 - m);
    }
  }
  AdvantageReturns out;
  out.advantages = masked_whiten(g, mask, /*shift_mean=*/true);
  for (int64_t k = 0; k < g.size(); ++k) out.advantages[k] *= mask[k];
  out.returns = std::move(g);
  return out;
}

}  // namespace verlconf::oracle
