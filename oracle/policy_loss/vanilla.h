// Policy losses of verl/trainer/ppo/core_algos.py, float64: the scalar loss, its
// gradient with respect to log_prob, and the metrics verl reports.
#pragma once

#include <map>
#include <string>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

struct PolicyLossInputs {
  const Array& old_log_prob;
  const Array& log_prob;
  const Array& advantages;
  const Array& response_mask;
  const Array* rollout_is_weights = nullptr;  // treated as constants (no gradient)
};

struct PolicyLossResult {
  double loss = 0.0;
  Array grad_log_prob;                          // d loss / d log_prob
  std::map<std::string, double> metrics;        // verl's names, e.g. "actor/pg_clipfrac"
  Array boundary;                               // tokens within float32 rounding of a decision (Result::boundary)
  AggregateMagnitude magnitude;                 // of the aggregation behind `loss` (Result::magnitude)
  std::map<std::string, Array> fraction_masks;  // where not the input mask (Result::fraction_masks)
};

// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct VanillaConfig {
  double clip_ratio_low = 0;
  double clip_ratio_high = 0;
  double clip_ratio_c = 0;  // dual-clip bound on negative advantages; verl asserts > 1
  std::string loss_agg_mode;
  GlobalBatchInfo global;
};

inline constexpr double kPolicyLogRatioClamp = 20.0;

// loss = agg_loss(losses) and d loss / d log_prob = agg weight * d losses / d log_prob:
// every loss that goes through agg_loss finishes this way (agg_loss is linear).
void Aggregate(const Array& losses, const Array& dlosses_dlogprob, const Array& mask, const std::string& mode,
               const GlobalBatchInfo& global, PolicyLossResult& out);

// verl: compute_policy_loss_vanilla ("vanilla"), PPO with asymmetric and dual clip.
//
//   d = clamp(log_prob - old_log_prob, -20, 20),   r = exp(d)
//   l1 = -A r,  l2 = -A clamp(r, 1 - eps_low, 1 + eps_high),  c1 = max(l1, l2)
//   c2 = min(-A c, c1)
//   L  = (A < 0 ? c2 : c1) * w        (w: rollout IS weights, if given)
//   loss = agg_loss(L, mask, mode)
// Metrics: pg_clipfrac = masked_mean(l2 > l1), ppo_kl = masked_mean(-d),
//          pg_clipfrac_lower = masked_mean((c1 > -A c) and A < 0).
// The gradient follows torch's conventions at the kinks: clamp passes the gradient
// only strictly inside its bounds, and max/min split it equally between tied
// arguments. So a ratio exactly on a clip bound gets half the naive gradient, and a
// log-ratio of exactly +-20 gets none.
PolicyLossResult policy_loss_vanilla(const PolicyLossInputs& in, const VanillaConfig& cfg);
// vanilla's dual-clip assertion (AssertionError unless clip_ratio_c > 1), its first act;
// also raised by every implementation of a loss that runs vanilla.
void CheckDualClip(double clip_ratio_c);

}  // namespace verlconf::oracle
