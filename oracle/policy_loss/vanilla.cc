// Mirrors verl 0.9.1 core_algos.compute_policy_loss_vanilla.
#include "oracle/policy_loss/vanilla.h"

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/torch_rules.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

void Aggregate(const Array& losses, const Array& dlosses_dlogprob, const Array& mask, const std::string& mode,
               const GlobalBatchInfo& global, PolicyLossResult& out) {
  out.loss = agg_loss(losses, mask, mode, global);
  out.magnitude = agg_loss_magnitude(losses, mask, mode, global);
  const Array w = agg_loss_weights(mask, mode, global);
  out.grad_log_prob = Array(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) out.grad_log_prob[k] = w[k] * dlosses_dlogprob[k];
}

void CheckDualClip(double clip_ratio_c) {
  if (!(clip_ratio_c > 1.0))
    throw VerlError("AssertionError",
                    "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get "
                    "the value: " +
                        std::to_string(clip_ratio_c) + ".");
}

PolicyLossResult policy_loss_vanilla(const PolicyLossInputs& in, const VanillaConfig& cfg) {
  CheckDualClip(cfg.clip_ratio_c);
  const Array& mask = in.response_mask;
  const double lo = 1.0 - cfg.clip_ratio_low;
  const double hi = 1.0 + cfg.clip_ratio_high;
  const double c = cfg.clip_ratio_c;

  Array losses(mask.shape, mask.dtype);
  Array dloss_dlogp(mask.shape, mask.dtype);  // d L_{i,t} / d log_prob_{i,t}
  Array neg_kl(mask.shape, mask.dtype), clipped(mask.shape, mask.dtype), clipped_lower(mask.shape, mask.dtype);
  Array boundary(mask.shape, mask.dtype);
  const double eps = mask.dtype == DType::kFloat32 ? kEps32 : kEps64;
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double raw = in.log_prob[k] - in.old_log_prob[k];
    const double d = Clamp(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
    const double r = std::exp(d);
    const double l1 = -A * r;
    const double l2 = -A * Clamp(r, lo, hi);
    const double c1 = std::max(l1, l2);
    const double l3 = -A * c;
    const double c2 = std::min(l3, c1);
    const bool negative = A < 0;
    const double w = in.rollout_is_weights ? (*in.rollout_is_weights)[k] : 1.0;
    losses[k] = (negative ? c2 : c1) * w;
    neg_kl[k] = -d;
    // The log-ratio is rounded (absolute error ~ eps * |log_prob|) and exp turns that
    // into a relative error of the ratio, to which each libm adds its own last-bit
    // choices (numpy's exp and torch's differ by an ulp at some points): a bound closer
    // than that may be decided either way by a correct implementation.
    const double margin = kDecisionUlps * eps * (1.0 + std::fabs(in.log_prob[k]) + std::fabs(in.old_log_prob[k]));
    const auto near = [&](double x, double bound) { return std::fabs(x - bound) <= margin * std::fabs(bound); };
    boundary[k] = (near(r, lo) || near(r, hi) || near(r, c) || near(raw, kPolicyLogRatioClamp) ||
                   near(raw, -kPolicyLogRatioClamp))
                      ? 1.0
                      : 0.0;
    clipped[k] = l2 > l1 ? 1.0 : 0.0;
    clipped_lower[k] = (c1 > l3 && negative) ? 1.0 : 0.0;

    // Chain rule back to the ratio, then through exp and the log-ratio clamp.
    const double dc1_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
    const double dsel_dr = negative ? MinShareA(c1, l3) * dc1_dr : dc1_dr;
    dloss_dlogp[k] = w * dsel_dr * r * ClampPasses(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
  }

  PolicyLossResult out;
  Aggregate(losses, dloss_dlogp, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/pg_clipfrac"] = masked_mean(clipped, mask);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.metrics["actor/pg_clipfrac_lower"] = masked_mean(clipped_lower, mask);
  out.boundary = std::move(boundary);
  return out;
}

}  // namespace verlconf::oracle
