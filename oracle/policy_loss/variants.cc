// Mirrors verl 0.9.1 core_algos: compute_policy_loss_gspo, _sapo, _gpg, _cispo, _dro,
// _geo_mean, _dppo_tv, _dppo_kl. The gradient conventions are those of
// oracle/policy_loss/vanilla.cc: torch.clamp passes the gradient only strictly inside its
// bounds (a one-sided clamp: strictly on the open side), torch.maximum/minimum split
// it 0.5/0.5 on a tie, and a .detach()ed factor is a constant.
#include "oracle/policy_loss/variants.h"

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/core/torch_rules.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
namespace {

constexpr double kGspoLogRatioMax = 10.0;   // gspo's one-sided clamp of the log-ratio
constexpr double kGeoMeanIsLogEps = 1e-10;  // geo_mean: log(w + 1e-10)
constexpr double kDppoKlEps = 1e-8;         // dppo_kl: (1 - p_old + 1e-8) / (1 - p + 1e-8)

double Weight(const PolicyLossInputs& in, int64_t k) {
  return in.rollout_is_weights ? (*in.rollout_is_weights)[k] : 1.0;
}

// How far from a decision threshold a correct implementation may still decide either
// way: the rounding of the log-probabilities (relative to their size) and the libm's
// last-bit choices, for the case dtype (see vanilla.cc).
struct Near {
  double eps;
  explicit Near(DType d) : eps(d == DType::kFloat32 ? kEps32 : kEps64) {}
  double Margin(double scale) const { return kDecisionUlps * eps * (1.0 + scale); }
  bool operator()(double x, double bound, double scale) const {
    return std::fabs(x - bound) <= Margin(scale) * std::max(1.0, std::fabs(bound));
  }
};

// The common ending: aggregate the per-token losses and scale the per-token
// derivatives by the aggregation weights (agg_loss is linear in the loss matrix).
double RowSum(const Array& a, const Array& mask, int64_t i) {
  ExactSum s;
  for (int64_t t = 0; t < a.cols(); ++t) s.Add(a.at(i, t) * mask.at(i, t));
  return s.Value();
}

}  // namespace

namespace {
// The ending gspo and cispo share: aggregate, then verl's three metrics (neither has a
// dual clip, so pg_clipfrac_lower is 0).
PolicyLossResult ClipLossResult(const Array& losses, const Array& dloss, const Array& mask,
                                const PolicyLossFamilyConfig& cfg, const Array& clipped, const Array& neg_kl,
                                Array boundary) {
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/pg_clipfrac"] = masked_mean(clipped, mask);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.metrics["actor/pg_clipfrac_lower"] = 0.0;
  out.boundary = std::move(boundary);
  return out;
}
}  // namespace

PolicyLossResult policy_loss_gspo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                  const PolicyLossDetached* frozen, PolicyLossDetached* detached) {
  const Array& mask = in.response_mask;
  const int64_t B = mask.rows(), T = mask.cols();
  const double lo = 1.0 - cfg.clip_ratio_low, hi = 1.0 + cfg.clip_ratio_high;
  const Near near(mask.dtype);
  Array nak(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) nak[k] = in.log_prob[k] - in.old_log_prob[k];
  // sg[ mean over the row's valid tokens of the log-ratio ]; the length is clamped at 1,
  // so a fully masked row gets 0 (ratio 1).
  std::vector<double> seq(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) {
    ExactSum n;
    for (int64_t t = 0; t < T; ++t) n.Add(mask.at(i, t));
    seq[static_cast<size_t>(i)] = RowSum(nak, mask, i) / std::max(n.Value(), 1.0);
  }
  const std::vector<double>& s = frozen ? frozen->seq_log_ratio : seq;
  const Array& sg_lp = frozen ? frozen->log_prob : in.log_prob;
  if (detached) {
    detached->seq_log_ratio = seq;
    detached->log_prob = in.log_prob;
  }

  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), clipped(mask.shape, mask.dtype),
      boundary(mask.shape, mask.dtype), neg_kl(mask.shape, mask.dtype);
  for (int64_t i = 0; i < B; ++i) {
    double scale = 0.0;  // the rounding of the row mean grows with the row's log-probabilities
    for (int64_t t = 0; t < T; ++t)
      scale += mask.at(i, t) * (std::fabs(in.log_prob.at(i, t)) + std::fabs(in.old_log_prob.at(i, t)));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t k = i * T + t;
      const double A = in.advantages[k];
      // verl: log_prob - log_prob.detach() + seq.detach(); the first difference is 0
      // in the forward pass and carries the gradient.
      const double x = (in.log_prob[k] - sg_lp[k]) + s[static_cast<size_t>(i)];
      const double lx = std::min(x, kGspoLogRatioMax);
      const double r = std::exp(lx);
      const double l1 = -A * r, l2 = -A * Clamp(r, lo, hi);
      const double w = Weight(in, k);
      losses[k] = std::max(l1, l2) * w;
      clipped[k] = l2 > l1 ? 1.0 : 0.0;
      neg_kl[k] = -nak[k];
      boundary[k] = (near(r, lo, scale) || near(r, hi, scale) || near(x, kGspoLogRatioMax, scale)) ? 1.0 : 0.0;
      const double dc_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
      dloss[k] = w * dc_dr * r * (x < kGspoLogRatioMax ? 1.0 : 0.0);
    }
  }
  return ClipLossResult(losses, dloss, mask, cfg, clipped, neg_kl, std::move(boundary));
}

PolicyLossResult policy_loss_sapo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                  const PolicyLossDetached*, PolicyLossDetached*) {
  const Array& mask = in.response_mask;
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), neg_kl(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double raw = in.log_prob[k] - in.old_log_prob[k];
    const double d = Clamp(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
    const double r = std::exp(d);
    const double tau = A > 0 ? cfg.tau_pos : cfg.tau_neg;
    const double sig = 1.0 / (1.0 + std::exp(-(tau * (r - 1.0))));
    const double gate = sig * (4.0 / tau);
    const double w = Weight(in, k);
    losses[k] = -gate * A * w;
    neg_kl[k] = -d;
    // Back through the gate: (4 / tau) * sigmoid' * tau, then exp and the +-20 clamp.
    dloss[k] = -A * w * (4.0 / tau) * (sig * (1.0 - sig)) * tau * r *
               ClampPasses(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
  }
  PolicyLossResult out;
  // verl hard-codes the mode here: loss_agg_mode is accepted and ignored.
  Aggregate(losses, dloss, mask, "seq-mean-token-mean", cfg.global, out);
  out.metrics["actor/pg_clipfrac"] = 0.0;
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.metrics["actor/pg_clipfrac_lower"] = 0.0;
  return out;
}

PolicyLossResult policy_loss_gpg(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                 const PolicyLossDetached*, PolicyLossDetached*) {
  const Array& mask = in.response_mask;
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double w = Weight(in, k);
    losses[k] = -in.log_prob[k] * in.advantages[k] * w;
    dloss[k] = -in.advantages[k] * w;
  }
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  return out;  // verl returns an empty metrics dict
}

PolicyLossResult policy_loss_cispo(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                   const PolicyLossDetached* frozen, PolicyLossDetached* detached) {
  const Array& mask = in.response_mask;
  const double lo = 1.0 - cfg.clip_ratio_low, hi = 1.0 + cfg.clip_ratio_high;
  const Near near(mask.dtype);
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), neg_kl(mask.shape, mask.dtype),
      clipped(mask.shape, mask.dtype), cr_now(mask.shape, mask.dtype), boundary(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double raw = in.log_prob[k] - in.old_log_prob[k];
    const double d = Clamp(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
    const double r = std::exp(d);
    cr_now[k] = Clamp(r, lo, hi);
    const double cr = frozen ? frozen->clipped_ratio[k] : cr_now[k];
    const double w = Weight(in, k);
    losses[k] = -cr * A * in.log_prob[k] * w;
    dloss[k] = -cr * A * w;  // the clipped ratio is detached: a constant weight
    neg_kl[k] = -d;
    clipped[k] = r != cr_now[k] ? 1.0 : 0.0;
    const double scale = std::fabs(in.log_prob[k]) + std::fabs(in.old_log_prob[k]);
    boundary[k] = (near(r, lo, scale) || near(r, hi, scale)) ? 1.0 : 0.0;
  }
  if (detached) detached->clipped_ratio = cr_now;
  return ClipLossResult(losses, dloss, mask, cfg, clipped, neg_kl, std::move(boundary));
}

double CheckDroBeta(const std::optional<double>& dro_beta) {
  if (!dro_beta || !(*dro_beta > 0))
    throw VerlError("ValueError", "policy_loss.dro_beta must be a positive value when using DRO");
  return *dro_beta;
}

PolicyLossResult policy_loss_dro(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                 const PolicyLossDetached*, PolicyLossDetached*) {
  const double beta = CheckDroBeta(cfg.dro_beta);
  const Array& mask = in.response_mask;
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), neg_lr(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double lr = in.log_prob[k] - in.old_log_prob[k];
    const double w = Weight(in, k);
    losses[k] = -(in.log_prob[k] * A - 0.5 * beta * (lr * lr)) * w;
    dloss[k] = -(A - 0.5 * beta * (2.0 * lr)) * w;
    neg_lr[k] = -lr;
  }
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_lr, mask);
  return out;
}

PolicyLossResult policy_loss_geo_mean(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                      const PolicyLossDetached*, PolicyLossDetached*) {
  const Array& mask = in.response_mask;
  const int64_t B = mask.rows(), T = mask.cols();
  const double lo = -cfg.clip_ratio_low, hi = cfg.clip_ratio_high;
  const Near near(mask.dtype);
  Array neg_kl(mask.shape, mask.dtype), clip_hi(mask.shape, mask.dtype), clip_lo(mask.shape, mask.dtype),
      boundary(mask.shape, mask.dtype), clipped_lr(mask.shape, mask.dtype), dm(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double nak = in.log_prob[k] - in.old_log_prob[k];  // no +-20 clamp here
    const double nc = Clamp(nak, lo, hi);
    const double sg = Sign(A);
    const double a = sg * nak, b = sg * nc;
    clipped_lr[k] = sg * std::min(a, b);
    // d m / d nak: the outer sign times the share torch.min routes to each argument,
    // each of which carries the sign again (and the clamp's pass-through).
    dm[k] = sg * (MinShareA(a, b) * sg + MinShareA(b, a) * sg * ClampPasses(nak, lo, hi));
    neg_kl[k] = -nak;
    const bool clipped = nak != nc;
    clip_hi[k] = clipped && A > 0 ? 1.0 : 0.0;
    clip_lo[k] = clipped && A < 0 ? 1.0 : 0.0;
    const double scale = std::fabs(in.log_prob[k]) + std::fabs(in.old_log_prob[k]);
    boundary[k] = (near(nak, lo, scale) || near(nak, hi, scale)) ? 1.0 : 0.0;
  }
  ExactSum total;
  std::vector<double> row_factor(static_cast<size_t>(B));  // d loss / d (row exponent sum)
  for (int64_t i = 0; i < B; ++i) {
    ExactSum n;
    for (int64_t t = 0; t < T; ++t) n.Add(mask.at(i, t));
    const double denom = n.Value() + kMaskedMeanEps;
    const double ratio = std::exp(RowSum(clipped_lr, mask, i) / denom);
    const double adv = RowSum(in.advantages, mask, i) / denom;
    double seq_w = 1.0;
    if (in.rollout_is_weights) {
      ExactSum lw;
      for (int64_t t = 0; t < T; ++t)
        lw.Add(std::log(in.rollout_is_weights->at(i, t) + kGeoMeanIsLogEps) * mask.at(i, t));
      seq_w = std::exp(lw.Value() / denom);
    }
    total.Add(-adv * ratio * seq_w);
    // torch.mean over B rows, then * seq_w, * (-adv), through exp, / denom.
    row_factor[static_cast<size_t>(i)] = (1.0 / static_cast<double>(B)) * seq_w * -adv * ratio / denom;
  }
  PolicyLossResult out;
  out.loss = total.Value() / static_cast<double>(B);
  out.grad_log_prob = Array(mask.shape, mask.dtype);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t < T; ++t)
      out.grad_log_prob.at(i, t) = row_factor[static_cast<size_t>(i)] * mask.at(i, t) * dm.at(i, t);
  out.metrics["actor/pg_clipfrac"] = masked_mean(clip_hi, mask);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.metrics["actor/pg_clipfrac_lower"] = masked_mean(clip_lo, mask);
  out.boundary = std::move(boundary);
  return out;
}

namespace {

enum class Divergence { kTv, kKl };

PolicyLossResult Dppo(Divergence div, const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                      const PolicyLossDetached* frozen, PolicyLossDetached* detached) {
  const Array& mask = in.response_mask;
  const double lo = cfg.clip_ratio_low, hi = cfg.clip_ratio_high, c = cfg.clip_ratio_c;
  const Near near(mask.dtype);
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), neg_kl(mask.shape, mask.dtype),
      invalid(mask.shape, mask.dtype), truncated(mask.shape, mask.dtype), tr_now(mask.shape, mask.dtype),
      valid_now(mask.shape, mask.dtype), boundary(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double lp = in.log_prob[k], olp = in.old_log_prob[k];
    const double raw = lp - olp;
    const double d = Clamp(raw, -kPolicyLogRatioClamp, kPolicyLogRatioClamp);
    const double r = std::exp(d);
    tr_now[k] = std::min(r, c);
    const double p = std::exp(lp), po = std::exp(olp);
    const double scale = std::fabs(lp) + std::fabs(olp);
    bool pos, neg;
    if (div == Divergence::kTv) {
      pos = (p - po) <= hi;
      neg = (p - po) >= -lo;
      boundary[k] = near(p - po, A > 0 ? hi : -lo, scale) ? 1.0 : 0.0;
    } else {
      // A probability above 1 (log_prob > 0) makes the log's argument negative: NaN,
      // and every comparison with NaN is false, as in torch.
      const double bkl = po * (olp - lp) + (1.0 - po) * std::log(((1.0 - po) + kDppoKlEps) / ((1.0 - p) + kDppoKlEps));
      pos = bkl <= hi || p <= po;
      neg = bkl <= lo || p >= po;
      boundary[k] = (near(bkl, A > 0 ? hi : lo, scale) || near(p, po, scale)) ? 1.0 : 0.0;
    }
    valid_now[k] = (A > 0 ? pos : neg) ? 1.0 : 0.0;
    if (near(r, c, scale)) boundary[k] = 1.0;
    const double tr = frozen ? frozen->truncated_ratio[k] : tr_now[k];
    const double v = frozen ? frozen->valid[k] : valid_now[k];
    const double w = Weight(in, k);
    losses[k] = -A * tr * lp * v * w;
    dloss[k] = -A * tr * v * w;  // both the truncated ratio and the mask are detached
    neg_kl[k] = -d;
    invalid[k] = 1.0 - valid_now[k];
    truncated[k] = (r > c ? 1.0 : 0.0) * valid_now[k];
  }
  if (detached) {
    detached->truncated_ratio = tr_now;
    detached->valid = valid_now;
  }
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/pg_clipfrac"] = masked_mean(invalid, mask);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.metrics["actor/pg_clipfrac_lower"] = masked_mean(truncated, mask);
  out.boundary = std::move(boundary);
  return out;
}

}  // namespace

PolicyLossResult policy_loss_dppo_tv(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                     const PolicyLossDetached* frozen, PolicyLossDetached* detached) {
  return Dppo(Divergence::kTv, in, cfg, frozen, detached);
}

PolicyLossResult policy_loss_dppo_kl(const PolicyLossInputs& in, const PolicyLossFamilyConfig& cfg,
                                     const PolicyLossDetached* frozen, PolicyLossDetached* detached) {
  return Dppo(Divergence::kKl, in, cfg, frozen, detached);
}

}  // namespace verlconf::oracle
