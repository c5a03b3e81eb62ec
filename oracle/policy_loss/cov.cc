// Mirrors verl 0.9.1 core_algos: compute_policy_loss_clip_cov, compute_policy_loss_kl_cov.
// Gradient conventions as in oracle/policy_loss/vanilla.cc: torch.clamp passes the gradient only
// strictly inside its bounds, torch.maximum splits it 0.5/0.5 on a tie, torch.abs has
// derivative sign(x) (0 at 0), and the pick (integer indexing) carries none.
#include "oracle/policy_loss/cov.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/core/torch_rules.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
namespace {

double Weight(const PolicyLossInputs& in, int64_t k) {
  return in.rollout_is_weights ? (*in.rollout_is_weights)[k] : 1.0;
}

double ValidCount(const Array& mask) {
  ExactSum n;
  for (int64_t k = 0; k < mask.size(); ++k) n.Add(mask[k]);
  return n.Value();
}

}  // namespace

int64_t clip_cov_pick_count(const PolicyLossInputs& in, const CovLossConfig& cfg) {
  // Python: max(int(clip_cov_ratio * response_mask.sum().item()), 1)
  return std::max<int64_t>(static_cast<int64_t>(cfg.clip_cov_ratio * ValidCount(in.response_mask)), 1);
}

int64_t kl_cov_pick_count(const PolicyLossInputs& in, const CovLossConfig& cfg) {
  int64_t n = 0;
  for (int64_t k = 0; k < in.response_mask.size(); ++k) n += in.response_mask[k] > 0 ? 1 : 0;
  if (n == 0) return 0;  // verl: k = min(ratio, 0) == 0 skips the pick
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * cfg.kl_cov_ratio));
}

Array clip_cov_candidates(const PolicyLossInputs& in, const CovLossConfig& cfg) {
  const Array& mask = in.response_mask;
  const double lo = 1.0 - cfg.clip_ratio_low, hi = 1.0 + cfg.clip_ratio_high;
  const double mean_a = masked_mean(in.advantages, mask);
  const double mean_lp = masked_mean(in.log_prob, mask);
  Array cand(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double r = std::exp(in.log_prob[k] - in.old_log_prob[k]);
    const bool clipped = -A * Clamp(r, lo, hi) > -A * r;
    const double cov = (A - mean_a) * (in.log_prob[k] - mean_lp);
    cand[k] = (mask[k] > 0 && !clipped && cov > cfg.clip_cov_lb && cov < cfg.clip_cov_ub) ? 1.0 : 0.0;
  }
  return cand;
}

Array clip_cov_default_selection(const PolicyLossInputs& in, const CovLossConfig& cfg) {
  Array sel = clip_cov_candidates(in, cfg);
  int64_t left = clip_cov_pick_count(in, cfg);
  for (int64_t k = 0; k < sel.size(); ++k) {
    if (sel[k] == 0.0) continue;
    if (left > 0) {
      --left;
    } else {
      sel[k] = 0.0;
    }
  }
  return sel;
}

Array kl_cov_covariance(const PolicyLossInputs& in) {
  const Array& mask = in.response_mask;
  ExactSum sa, sl;
  double n = 0;
  for (int64_t k = 0; k < mask.size(); ++k)
    if (mask[k] > 0) {
      sa.Add(in.advantages[k]);
      sl.Add(in.log_prob[k]);
      n += 1;
    }
  Array cov(mask.shape, mask.dtype);
  if (n == 0) return cov;
  const double ma = sa.Value() / n, ml = sl.Value() / n;
  for (int64_t k = 0; k < mask.size(); ++k)
    cov[k] = mask[k] > 0 ? (in.advantages[k] - ma) * (in.log_prob[k] - ml) : 0.0;
  return cov;
}

Array kl_cov_default_selection(const PolicyLossInputs& in, const CovLossConfig& cfg) {
  const Array& mask = in.response_mask;
  const Array cov = kl_cov_covariance(in);
  std::vector<int64_t> valid;
  for (int64_t k = 0; k < mask.size(); ++k)
    if (mask[k] > 0) valid.push_back(k);
  const int64_t kk = kl_cov_pick_count(in, cfg);
  // Largest first; ties towards the lower row-major index (a stable sort keeps it).
  std::stable_sort(valid.begin(), valid.end(), [&](int64_t a, int64_t b) { return cov[a] > cov[b]; });
  Array sel(mask.shape, mask.dtype);
  for (int64_t j = 0; j < kk && j < static_cast<int64_t>(valid.size()); ++j) sel[valid[static_cast<size_t>(j)]] = 1.0;
  return sel;
}

std::vector<Array> kl_cov_tied_selections(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& sel,
                                          size_t max, bool* more) {
  *more = false;
  const Array& mask = in.response_mask;
  const Array cov = kl_cov_covariance(in);
  const double eps = mask.dtype == DType::kFloat32 ? kEps32 : kEps64;
  std::vector<int64_t> valid;
  ExactSum sa, sl, abs_a, abs_l;
  for (int64_t k = 0; k < mask.size(); ++k)
    if (mask[k] > 0) {
      valid.push_back(k);
      sa.Add(in.advantages[k]);
      sl.Add(in.log_prob[k]);
      abs_a.Add(std::fabs(in.advantages[k]));
      abs_l.Add(std::fabs(in.log_prob[k]));
    }
  const int64_t kk = kl_cov_pick_count(in, cfg);
  const auto n = static_cast<int64_t>(valid.size());
  if (kk <= 0 || kk >= n) return {};
  const double ma = sa.Value() / n, ml = sl.Value() / n;
  const double ma_abs = abs_a.Value() / n, ml_abs = abs_l.Value() / n;
  // The rounding of one covariance: each centred factor is off by the rounding of its
  // terms and of the mean (bounded by the mean magnitude), times the other factor.
  auto margin = [&](int64_t k) {
    const double a = in.advantages[k], l = in.log_prob[k];
    return kDecisionUlps * eps *
           (std::fabs(a - ma) * (std::fabs(l) + ml_abs) + std::fabs(l - ml) * (std::fabs(a) + ma_abs));
  };
  int64_t last_in = -1, first_out = -1;  // the smallest picked, the largest left out
  for (int64_t k : valid) {
    if (sel[k] != 0.0 && (last_in < 0 || cov[k] < cov[last_in])) last_in = k;
    if (sel[k] == 0.0 && (first_out < 0 || cov[k] > cov[first_out])) first_out = k;
  }
  if (last_in < 0 || first_out < 0) return {};
  if (cov[last_in] - cov[first_out] > margin(last_in) + margin(first_out)) return {};
  std::vector<int64_t> tied, kept;  // the tied set; the picked tokens outside it
  int64_t picked_tied = 0;
  for (int64_t k : valid) {
    const bool in_pick = sel[k] != 0.0;
    const bool near = in_pick ? cov[k] - cov[first_out] <= margin(k) + margin(first_out)
                              : cov[last_in] - cov[k] <= margin(k) + margin(last_in);
    if (near) {
      tied.push_back(k);
      picked_tied += in_pick ? 1 : 0;
    } else if (in_pick) {
      kept.push_back(k);
    }
  }
  // Every choice of picked_tied of the tied tokens, in lexicographic order, but sel's own.
  std::vector<Array> out;
  std::vector<size_t> choice(static_cast<size_t>(picked_tied));
  for (size_t i = 0; i < choice.size(); ++i) choice[i] = i;
  for (;;) {
    Array alt(mask.shape, mask.dtype);
    for (int64_t k : kept) alt[k] = 1.0;
    for (size_t i : choice) alt[tied[i]] = 1.0;
    if (alt.data != sel.data) {
      if (out.size() == max) {
        *more = true;
        return out;
      }
      out.push_back(std::move(alt));
    }
    // The next combination.
    int64_t i = picked_tied - 1;
    while (i >= 0 && choice[static_cast<size_t>(i)] == tied.size() - static_cast<size_t>(picked_tied - i)) --i;
    if (i < 0) return out;
    ++choice[static_cast<size_t>(i)];
    for (auto j = static_cast<size_t>(i) + 1; j < choice.size(); ++j) choice[j] = choice[j - 1] + 1;
  }
}

void CheckCovSelection(const Array& sel, const Array& mask) {
  if (sel.shape != mask.shape) throw BadInput("cov_selected: shape differs from response_mask");
  for (int64_t k = 0; k < sel.size(); ++k) {
    if (sel[k] != 0.0 && sel[k] != 1.0) throw BadInput("cov_selected: values must be 0 or 1");
    if (sel[k] == 1.0 && !(mask[k] > 0)) throw BadInput("cov_selected: picks a masked token");
  }
}

void CheckClipCovRatio(double clip_cov_ratio) {
  if (!(clip_cov_ratio > 0)) throw VerlError("AssertionError", "clip_ratio should be larger than 0.");
}

void CheckKlCovRatio(double kl_cov_ratio) {
  if (!(kl_cov_ratio > 0)) throw VerlError("AssertionError", "kl_cov_ratio should be larger than 0.");
}

PolicyLossResult policy_loss_clip_cov(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& selected) {
  CheckClipCovRatio(cfg.clip_cov_ratio);
  const Array& mask = in.response_mask;
  CheckCovSelection(selected, mask);
  const double lo = 1.0 - cfg.clip_ratio_low, hi = 1.0 + cfg.clip_ratio_high;
  const double eps = mask.dtype == DType::kFloat32 ? kEps32 : kEps64;
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), neg_kl(mask.shape, mask.dtype),
      boundary(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double d = in.log_prob[k] - in.old_log_prob[k];
    const double r = std::exp(d);
    const double l1 = -A * r, l2 = -A * Clamp(r, lo, hi);
    const double corr = 1.0 - selected[k];
    const double w = Weight(in, k);
    losses[k] = std::max(l1, l2) * corr * w;
    neg_kl[k] = -d;
    const double dc_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
    dloss[k] = w * corr * dc_dr * r;
    // The clip decision (l2 > l1) and the bounds of clamp, within rounding of the ratio.
    const double margin = kDecisionUlps * eps * (1.0 + std::fabs(in.log_prob[k]) + std::fabs(in.old_log_prob[k]));
    boundary[k] = (std::fabs(r - lo) <= margin * std::max(1.0, lo) || std::fabs(r - hi) <= margin * hi) ? 1.0 : 0.0;
  }
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/pg_clipfrac"] = masked_mean(selected, mask);
  out.metrics["actor/ppo_kl"] = masked_mean(neg_kl, mask);
  out.boundary = std::move(boundary);
  return out;
}

PolicyLossResult policy_loss_kl_cov(const PolicyLossInputs& in, const CovLossConfig& cfg, const Array& selected) {
  CheckKlCovRatio(cfg.kl_cov_ratio);
  const Array& mask = in.response_mask;
  CheckCovSelection(selected, mask);
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), abs_kl(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double d = in.log_prob[k] - in.old_log_prob[k];
    const double r = std::exp(d);
    const double w = Weight(in, k);
    const double s = selected[k];
    losses[k] = (s != 0.0 ? -A * r + cfg.ppo_kl_coef * std::fabs(d) : -A * r) * w;
    dloss[k] = w * (-A * r + s * cfg.ppo_kl_coef * Sign(d));
    abs_kl[k] = std::fabs(d);
  }
  PolicyLossResult out;
  Aggregate(losses, dloss, mask, cfg.loss_agg_mode, cfg.global, out);
  out.metrics["actor/ppo_kl"] = masked_mean(abs_kl, mask);
  out.boundary = Array(mask.shape, mask.dtype);
  return out;
}

}  // namespace verlconf::oracle
