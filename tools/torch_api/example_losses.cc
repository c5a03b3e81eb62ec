// verl 0.9.1's policy losses (vanilla, gspo, sapo, gpg, cispo, dro, geo_mean, dppo_tv,
// dppo_kl, clip_cov, kl_cov, bypass_mode with its rollout correction), the other
// losses of core_algos.py (compute_value_loss,
// compute_policy_loss_reinforce, the deprecated compute_policy_loss,
// compute_entropy_loss), the actor's KL loss term, agg_loss and kl_penalty with ATen
// ops, step by step as verl builds them (every .detach() where verl has one); gradients
// from torch autograd.
#include "tools/torch_api/example_losses.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <variant>

#include "oracle/core/errors.h"

namespace verlconf::torch_api::example {
namespace {

// torch.clamp with scalar bounds, differentiated the way verl's torch (2.15, which
// captured the goldens) does: no gradient exactly at a bound. Debian's LibTorch 1.13
// passes the gradient at the bounds, which differs from verl where a ratio sits exactly
// on 1 +- eps or a log-ratio on +-20 (golden cases vanilla/boundary_*,
// vanilla/logratio_past_clamp_*). Forward values are torch.clamp's.
at::Tensor ClampLikeVerl(const at::Tensor& x, double lo, double hi) {
  return at::where(at::logical_and(x > lo, x < hi), x, x.detach().clamp(lo, hi));
}

// torch.clamp(x, max=hi) the same way: the gradient passes strictly below the bound.
at::Tensor ClampMaxLikeVerl(const at::Tensor& x, double hi) { return at::where(x < hi, x, x.detach().clamp_max(hi)); }

// verl_F.masked_sum / masked_mean: values under a zero mask are dropped (NaN-safe)
// before weighting; the mean divides by mask.sum() + 1e-8.
at::Tensor MaskedSum(const at::Tensor& values, const at::Tensor& mask) {
  return (at::where(mask != 0, values, at::zeros_like(values)) * mask).sum();
}
at::Tensor MaskedMean(const at::Tensor& values, const at::Tensor& mask) {
  return MaskedSum(values, mask) / (mask.sum() + 1e-8);
}

at::Tensor Grad(const at::Tensor& loss, const at::Tensor& wrt) {
  return torch::autograd::grad({loss}, {wrt}, /*grad_outputs=*/{}, /*retain_graph=*/false,
                               /*create_graph=*/false, /*allow_unused=*/true)[0];
}

std::string PyFloat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// verl's agg_loss (core_algos.agg_loss with config.global_batch_info).
at::Tensor AggLossTensor(const at::Tensor& loss_mat, const at::Tensor& loss_mask, const std::string& mode,
                         const Config& cfg) {
  const int64_t dp = cfg.Int("dp_size", 1);
  const double dp_size = static_cast<double>(dp);
  if (mode == "token-mean") {
    at::Tensor sum = MaskedSum(loss_mat, loss_mask);
    if (auto n = cfg.OptionalDouble("batch_num_tokens")) return sum / *n * dp_size;
    if (dp > 1) throw VerlError("ValueError", "(global) batch_num_tokens is required when dp_size > 1");
    return sum / loss_mask.sum() * dp_size;
  }
  if (mode == "token-sum") return MaskedSum(loss_mat, loss_mask) * dp_size;
  const bool token_mean = mode == "seq-mean-token-mean";
  const bool norm = mode == "seq-mean-token-sum-norm";
  if (!token_mean && !norm && mode != "seq-mean-token-sum")
    throw VerlError("ValueError", "Invalid loss_agg_mode: " + mode);
  const at::Tensor row_mask = loss_mask.sum(-1);
  at::Tensor seq_losses = (loss_mat * loss_mask).sum(-1);
  if (token_mean) seq_losses = seq_losses / (row_mask + 1e-8);
  const at::Tensor seq_mask = (row_mask > 0).to(at::kFloat);
  at::Tensor loss = MaskedSum(seq_losses, seq_mask);
  if (auto n = cfg.OptionalDouble("global_batch_size")) {
    loss = loss / *n * dp_size;
  } else {
    if (dp > 1) throw VerlError("ValueError", "global_batch_size is required when dp_size > 1");
    loss = loss / seq_mask.sum() * dp_size;
  }
  if (norm) loss = loss / cfg.Double("loss_scale_factor", static_cast<double>(loss_mask.size(-1)));
  return loss;
}

// kl_penalty_forward: the estimator's value.
at::Tensor KlForward(const at::Tensor& logprob, const at::Tensor& ref, const std::string& base) {
  if (base == "kl" || base == "k1") return logprob - ref;
  if (base == "abs") return (logprob - ref).abs();
  if (base == "mse" || base == "k2") return 0.5 * (logprob - ref).square();
  if (base == "low_var_kl" || base == "k3") {
    at::Tensor kl = ref - logprob;
    kl = ClampLikeVerl(kl, -20.0, 20.0);  // numerical stability
    const at::Tensor ratio = at::exp(kl);
    const at::Tensor kld = ratio - kl - 1;
    return ClampLikeVerl(kld, -10.0, 10.0);
  }
  throw VerlError("NotImplementedError", "");  // "full" and any unknown name
}

// verl's kl_penalty: a trailing '+' is straight-through, the value of the estimator
// with the gradient of k2.
at::Tensor KlPenaltyTensor(const at::Tensor& logprob, const at::Tensor& ref, const std::string& name) {
  if (name.empty() || name.back() != '+') return KlForward(logprob, ref, name);
  const at::Tensor forward = KlForward(logprob, ref, name.substr(0, name.size() - 1));
  const at::Tensor backward_score = 0.5 * (logprob - ref).square();
  return backward_score - backward_score.detach() + forward.detach();
}

// verl's dual-clip PPO per-token loss and its metrics, as compute_policy_loss_vanilla
// and the deprecated compute_policy_loss both build it (before IS weights and agg_loss).
struct DualClip {
  at::Tensor losses, clipfrac, ppo_kl, clipfrac_lower;
};

DualClip DualClipPpo(const at::Tensor& log_prob, const TensorMap& in, double clip_low, double clip_high, double clip_c,
                     Bug bug) {
  if (!(clip_c > 1.0))
    throw VerlError("AssertionError",
                    "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than "
                    "1.0, but get the value: " +
                        PyFloat(clip_c) + ".");
  const at::Tensor& old_log_prob = in.at("old_log_prob");
  const at::Tensor& advantages = in.at("advantages");
  const at::Tensor& response_mask = in.at("response_mask");

  at::Tensor negative_approx_kl = log_prob - old_log_prob;
  const auto clamp = [bug](const at::Tensor& x, double lo, double hi) {
    return bug == Bug::kNativeClamp ? x.clamp(lo, hi) : ClampLikeVerl(x, lo, hi);
  };
  if (bug != Bug::kNoLogRatioClamp) negative_approx_kl = clamp(negative_approx_kl, -20.0, 20.0);
  const at::Tensor ratio = at::exp(negative_approx_kl);

  const at::Tensor neg_adv = bug == Bug::kWrongSign ? advantages : -advantages;
  const at::Tensor pg_losses1 = neg_adv * ratio;
  const at::Tensor pg_losses2 = neg_adv * clamp(ratio, 1 - clip_low, 1 + clip_high);
  const at::Tensor clip_pg_losses1 = at::maximum(pg_losses1, pg_losses2);  // ties: gradient split 0.5/0.5

  const at::Tensor pg_losses3 = -advantages * clip_c;
  const at::Tensor clip_pg_losses2 = at::minimum(pg_losses3, clip_pg_losses1);

  DualClip r;
  r.losses = at::where(advantages < 0, clip_pg_losses2, clip_pg_losses1);
  r.clipfrac = MaskedMean(at::gt(pg_losses2, pg_losses1).to(at::kFloat), response_mask);
  r.ppo_kl = MaskedMean(-negative_approx_kl, response_mask);
  r.clipfrac_lower =
      MaskedMean(at::gt(clip_pg_losses1, pg_losses3).to(at::kFloat) * (advantages < 0).to(at::kFloat), response_mask);
  return r;
}

}  // namespace

TorchResult VanillaPolicyLoss(const TensorMap& in, const Config& given, Bug bug) {
  const Config cfg = WithVerlDefaults("vanilla", given, "policy_loss");
  const double clip = cfg.Double("clip_ratio");
  const at::Tensor log_prob = in.at("log_prob").detach().clone().requires_grad_(true);
  const DualClip dc = DualClipPpo(log_prob, in, cfg.Double("clip_ratio_low", clip), cfg.Double("clip_ratio_high", clip),
                                  cfg.Double("clip_ratio_c"), bug);
  at::Tensor pg_losses = dc.losses;
  if (auto it = in.find("rollout_is_weights"); it != in.end()) pg_losses = pg_losses * it->second;
  const at::Tensor pg_loss = AggLossTensor(pg_losses, in.at("response_mask"), cfg.String("loss_agg_mode"), cfg);

  TorchResult r;
  r.grads["log_prob"] = Grad(pg_loss, log_prob);
  r.outputs["pg_loss"] = pg_loss.detach();
  r.metrics["actor/pg_clipfrac"] = dc.clipfrac.item<double>();
  r.metrics["actor/ppo_kl"] = dc.ppo_kl.item<double>();
  r.metrics["actor/pg_clipfrac_lower"] = dc.clipfrac_lower.item<double>();
  return r;
}

// ---- The other policy losses. Each builds verl's loss from `log_prob` (a leaf that
// requires grad) and returns the aggregated loss and verl's metrics as tensors;
// FamilyPolicyLoss differentiates, with the config completed from verl's defaults.
namespace {

struct LossAndMetrics {
  at::Tensor loss;
  std::map<std::string, at::Tensor> metrics;
};

struct Clip {
  double low, high;
};
Clip ClipRatios(const Config& cfg) {
  const double clip = cfg.Double("clip_ratio");
  return {cfg.Double("clip_ratio_low", clip), cfg.Double("clip_ratio_high", clip)};
}

// The rollout-correction weights multiply the per-token loss before aggregation.
at::Tensor WithIsWeights(at::Tensor losses, const TensorMap& in) {
  if (auto it = in.find("rollout_is_weights"); it != in.end()) losses = losses * it->second;
  return losses;
}

// verl: compute_policy_loss_gspo. The sequence ratio's value is exp(mean log-ratio of
// the row), but only the token's own log_prob carries a gradient: log s = log_prob -
// sg[log_prob] + sg[row mean].
LossAndMetrics Gspo(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const Clip clip = ClipRatios(cfg);
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor log_ratio = log_prob - in.at("old_log_prob");
  const at::Tensor row_len = mask.sum(-1).clamp_min(1.0);
  const at::Tensor row_log_ratio = (log_ratio * mask).sum(-1) / row_len;
  at::Tensor log_s = log_prob - log_prob.detach() + row_log_ratio.detach().unsqueeze(-1);
  log_s = ClampMaxLikeVerl(log_s, 10.0);  // upper clamp only
  const at::Tensor s = at::exp(log_s);
  const at::Tensor unclipped = -adv * s;
  const at::Tensor clipped = -adv * ClampLikeVerl(s, 1.0 - clip.low, 1.0 + clip.high);
  const at::Tensor losses = WithIsWeights(at::maximum(unclipped, clipped), in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/pg_clipfrac"] = MaskedMean(at::gt(clipped, unclipped).to(at::kFloat), mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = at::zeros({}, at::kDouble);
  return r;
}

// verl: compute_policy_loss_sapo. A smooth sigmoid gate of the ratio in place of the
// clip, its temperature chosen by the advantage's sign; the aggregation is
// seq-mean-token-mean whatever loss_agg_mode says.
LossAndMetrics Sapo(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor log_ratio = ClampLikeVerl(log_prob - in.at("old_log_prob"), -20.0, 20.0);
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor tau =
      at::where(adv > 0, at::full_like(adv, cfg.Double("tau_pos")), at::full_like(adv, cfg.Double("tau_neg")));
  const at::Tensor gate = at::sigmoid(tau * (ratio - 1.0)) * (4.0 / tau);
  const at::Tensor losses = WithIsWeights(-gate * adv, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, "seq-mean-token-mean", cfg);
  r.metrics["actor/pg_clipfrac"] = at::zeros({}, at::kDouble);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = at::zeros({}, at::kDouble);
  return r;
}

// verl: compute_policy_loss_gpg. Plain policy gradient, -log_prob * A; no metrics.
LossAndMetrics Gpg(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const at::Tensor losses = WithIsWeights(-log_prob * in.at("advantages"), in);
  return {AggLossTensor(losses, in.at("response_mask"), cfg.String("loss_agg_mode"), cfg), {}};
}

// verl: compute_policy_loss_cispo. The clipped ratio is a detached weight on
// A * log_prob, so clipping never cuts the gradient off.
LossAndMetrics Cispo(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const Clip clip = ClipRatios(cfg);
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor log_ratio = ClampLikeVerl(log_prob - in.at("old_log_prob"), -20.0, 20.0);
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor clipped_ratio = ClampLikeVerl(ratio, 1.0 - clip.low, 1.0 + clip.high);
  const at::Tensor weight = clipped_ratio.detach();
  const at::Tensor losses = WithIsWeights(-weight * adv * log_prob, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/pg_clipfrac"] = MaskedMean(at::ne(ratio, clipped_ratio).to(at::kFloat), mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = at::zeros({}, at::kDouble);
  return r;
}

// verl: compute_policy_loss_dro. -(log_prob * A) plus a quadratic penalty on the
// (unclamped) log-ratio; dro_beta must be set and positive.
LossAndMetrics Dro(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const std::optional<double> beta = cfg.OptionalDouble("dro_beta");
  if (!beta || !(*beta > 0.0))
    throw VerlError("ValueError", "policy_loss.dro_beta must be a positive value when using DRO");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor log_ratio = log_prob - in.at("old_log_prob");
  const at::Tensor losses = WithIsWeights(-(log_prob * in.at("advantages") - 0.5 * *beta * log_ratio.square()), in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  return r;
}

// verl: compute_policy_loss_geo_mean (GMPO). Per row, the geometric mean of the token
// ratios, each log-ratio clipped on the side its advantage's sign selects, times the
// row's mean advantage (and the row's geometric-mean IS weight); torch.mean over rows,
// no agg_loss.
LossAndMetrics GeoMean(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const Clip clip = ClipRatios(cfg);
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor log_ratio = log_prob - in.at("old_log_prob");  // verl leaves the +-20 clamp out here
  const at::Tensor sgn = at::sign(adv);
  const at::Tensor log_ratio_clamped = ClampLikeVerl(log_ratio, -clip.low, clip.high);
  const at::Tensor log_ratio_min = sgn * at::minimum(sgn * log_ratio, sgn * log_ratio_clamped);
  const at::Tensor denom = mask.sum(-1) + 1e-8;
  const at::Tensor seq_ratio = at::exp((log_ratio_min * mask).sum(-1) / denom);
  const at::Tensor seq_adv = (adv * mask).sum(-1) / denom;
  at::Tensor seq_losses = -seq_adv * seq_ratio;
  if (auto it = in.find("rollout_is_weights"); it != in.end())
    seq_losses = seq_losses * at::exp((at::log(it->second + 1e-10) * mask).sum(-1) / denom);
  const at::Tensor was_clipped = at::ne(log_ratio, log_ratio_clamped);
  LossAndMetrics r;
  r.loss = seq_losses.mean();
  r.metrics["actor/pg_clipfrac"] = MaskedMean(at::logical_and(was_clipped, adv > 0).to(at::kFloat), mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = MaskedMean(at::logical_and(was_clipped, adv < 0).to(at::kFloat), mask);
  return r;
}

// verl: compute_policy_loss_dppo_tv / _dppo_kl. -A * log_prob, weighted by the
// truncated ratio min(r, clip_ratio_c) and by a trust-region mask on the probability
// change (total variation, or binary KL), both detached. clip_ratio is the divergence
// threshold here. verl's own fallback for clip_ratio_c (20) never applies: ActorConfig
// always has the key (default 3).
LossAndMetrics Dppo(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg, bool binary_kl) {
  const Clip div = ClipRatios(cfg);
  const double c = cfg.Double("clip_ratio_c");
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor& old_log_prob = in.at("old_log_prob");
  const at::Tensor log_ratio = ClampLikeVerl(log_prob - old_log_prob, -20.0, 20.0);
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor truncated = ratio.clamp_max(c).detach();
  const at::Tensor p = at::exp(log_prob), p_old = at::exp(old_log_prob);
  at::Tensor keep_pos, keep_neg;
  if (binary_kl) {
    // NaN where log_prob > 0 (the log's argument turns negative): every comparison false.
    const at::Tensor bkl =
        p_old * (old_log_prob - log_prob) + (1.0 - p_old) * at::log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8));
    keep_pos = at::logical_or(bkl <= div.high, p <= p_old);
    keep_neg = at::logical_or(bkl <= div.low, p >= p_old);
  } else {
    keep_pos = (p - p_old) <= div.high;
    keep_neg = (p - p_old) >= -div.low;
  }
  const at::Tensor valid = at::where(adv > 0, keep_pos, keep_neg).detach().to(at::kFloat);
  const at::Tensor losses = WithIsWeights(-adv * truncated * log_prob * valid, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/pg_clipfrac"] = MaskedMean(1.0 - valid, mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = MaskedMean((ratio > c).to(at::kFloat) * valid, mask);
  return r;
}

// clip_cov and kl_cov pick tokens by covariance with torch.randperm / torch.topk, which
// nothing outside torch reproduces; the pick is the recorded input cov_selected. verl
// applies it by integer indexing, so it is a constant of the loss: never differentiated.
at::Tensor CovSelected(const TensorMap& in) { return in.at("cov_selected").detach(); }

// verl: compute_policy_loss_clip_cov. PPO's clip (no dual clip, no +-20 clamp) with the
// loss of the picked tokens multiplied by 0; pg_clipfrac is the picked share.
LossAndMetrics ClipCov(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  if (!(cfg.Double("clip_cov_ratio") > 0))
    throw VerlError("AssertionError", "clip_ratio should be larger than 0.");  // verl's message, sic
  const Clip clip = ClipRatios(cfg);
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor corr = 1.0 - CovSelected(in);
  const at::Tensor log_ratio = log_prob - in.at("old_log_prob");
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor unclipped = -adv * ratio;
  const at::Tensor clipped = -adv * ClampLikeVerl(ratio, 1.0 - clip.low, 1.0 + clip.high);
  const at::Tensor losses = WithIsWeights(at::maximum(unclipped, clipped) * corr, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/pg_clipfrac"] = MaskedMean((corr == 0).to(at::kFloat), mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  return r;
}

// verl: compute_policy_loss_kl_cov. -A r on every token; the picked ones get the
// penalty ppo_kl_coef |log-ratio| on top (d|x|/dx = sign(x), 0 at 0). ppo_kl is the mean
// |log-ratio|. ppo_kl_coef falls back to PolicyLossConfig's 0.1 (the function's own 1.0
// never applies).
LossAndMetrics KlCov(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  if (!(cfg.Double("kl_cov_ratio") > 0)) throw VerlError("AssertionError", "kl_cov_ratio should be larger than 0.");
  const at::Tensor& adv = in.at("advantages");
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor selected = CovSelected(in);
  const at::Tensor log_ratio = log_prob - in.at("old_log_prob");  // no clamp here
  const at::Tensor abs_log_ratio = log_ratio.abs();
  const at::Tensor plain = -adv * at::exp(log_ratio);
  const at::Tensor penalised = plain + cfg.Double("ppo_kl_coef") * abs_log_ratio;
  const at::Tensor losses = WithIsWeights(at::where(selected != 0, penalised, plain), in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/ppo_kl"] = MaskedMean(abs_log_ratio, mask);
  return r;
}

// verl: compute_policy_loss_reinforce. -A log_prob, the IS weights as constants;
// old_log_prob is verl's rollout_log_prob and enters only ppo_kl (no clamp). The
// function's own aggregation default is seq-mean-token-sum.
LossAndMetrics Reinforce(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const at::Tensor& mask = in.at("response_mask");
  const at::Tensor losses = WithIsWeights(-in.at("advantages") * log_prob, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode"), cfg);
  r.metrics["actor/ppo_kl"] = MaskedMean(-(log_prob - in.at("old_log_prob")), mask);
  return r;
}

// verl: compute_policy_loss (deprecated). Vanilla's dual-clip PPO under other config
// names, without IS weights or global_batch_info (agg_loss's own defaults), its tuple's
// metrics under their bare names.
LossAndMetrics DeprecatedPpo(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const double clip = cfg.Double("cliprange");  // required, as in verl (None there is a TypeError)
  const DualClip dc = DualClipPpo(log_prob, in, cfg.Double("cliprange_low", clip), cfg.Double("cliprange_high", clip),
                                  cfg.Double("clip_ratio_c"), Bug::kNone);
  LossAndMetrics r;
  r.loss = AggLossTensor(dc.losses, in.at("response_mask"), cfg.String("loss_agg_mode"), Config());
  r.metrics = {{"pg_clipfrac", dc.clipfrac}, {"ppo_kl", dc.ppo_kl}, {"pg_clipfrac_lower", dc.clipfrac_lower}};
  return r;
}

// ---- bypass_mode: verl's core_algos.compute_policy_loss_bypass_mode, whose rollout
// correction is rollout_corr_helper.compute_rollout_correction_and_rejection_mask. The
// IS weights, the rejection mask and the rollout_corr/ metrics are computed here with
// ATen ops under at::NoGradGuard (verl's `with torch.no_grad()`): constants to autograd.
// The threshold texts are parsed here too (no oracle code is called).

// rollout_corr_helper.SAFETY_BOUND: log-ratios (and their row sums) are clamped to
// [-20, 20] before exp.
constexpr double kRolloutBound = 20.0;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The case's value of a RolloutCorrectionConfig key; null for an absent key or None (the
// capture passes an absent key as None, not as the dataclass default).
const ConfigValue* RawValue(const Config& cfg, const std::string& key) {
  auto it = cfg.values().find(key);
  if (it == cfg.values().end() || std::holds_alternative<std::monostate>(it->second)) return nullptr;
  return &it->second;
}

std::string StripPy(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Python's float(text) for the texts thresholds take: surrounding whitespace, decimal or
// exponent notation, inf / nan, single underscores between digits. nullopt where
// Python raises ValueError.
std::optional<double> PyFloatOf(const std::string& text) {
  const std::string t = StripPy(text);
  std::string clean;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '_' && k > 0 && k + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[k - 1])) &&
        std::isdigit(static_cast<unsigned char>(t[k + 1])))
      continue;
    if (t[k] == 'x' || t[k] == 'X') return std::nullopt;  // strtod's hex floats are no Python float
    clean += t[k];
  }
  if (clean.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return v;
}

std::vector<std::string> SplitStripped(const std::string& s) {  // [p.strip() for p in s.split(",") if p.strip()]
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t k = 0; k <= s.size(); ++k)
    if (k == s.size() || s[k] == ',') {
      const std::string p = StripPy(s.substr(start, k - start));
      if (!p.empty()) out.push_back(p);
      start = k + 1;
    }
  return out;
}

bool EndsWithK(const std::string& option, const char* k) {
  return option.size() >= 2 && option.compare(option.size() - 2, 2, k) == 0;
}

// verl: rollout_corr_helper._parse_rollout_is_threshold. A number is TIS's upper bound,
// "lower_upper" an IcePop band.
struct IsBounds {
  double upper;
  std::optional<double> lower;
};
IsBounds ParseIsThreshold(const ConfigValue& spec) {
  IsBounds b{0.0, std::nullopt};
  if (const auto* i = std::get_if<int64_t>(&spec)) {
    b.upper = static_cast<double>(*i);
  } else if (const auto* d = std::get_if<double>(&spec)) {
    b.upper = *d;
  } else if (const auto* s = std::get_if<std::string>(&spec)) {
    const std::string t = StripPy(*s);
    if (t.empty()) throw VerlError("ValueError", "rollout_is_threshold must not be an empty string.");
    const size_t us = t.find('_');
    const std::optional<double> upper = PyFloatOf(us == std::string::npos ? t : t.substr(us + 1));
    const std::optional<double> lower = us == std::string::npos ? std::nullopt : PyFloatOf(t.substr(0, us));
    if (!upper || (us != std::string::npos && !lower))
      throw VerlError("ValueError", "Invalid rollout_is_threshold '" + *s + "'.");
    b.upper = *upper;
    b.lower = lower;
  } else {
    throw VerlError("TypeError", "rollout_is_threshold must be a float or a string threshold specification.");
  }
  if (b.upper <= 0) throw VerlError("ValueError", "rollout_is_threshold upper bound must be positive.");
  if (b.lower && *b.lower <= 0) throw VerlError("ValueError", "rollout_is_threshold lower bound must be positive.");
  if (b.lower && *b.lower > b.upper)
    throw VerlError("ValueError", "rollout_is_threshold lower bound must be <= upper bound.");
  return b;
}

// verl: the option list of compute_rollout_rejection_mask (stripped, empty parts
// dropped, duplicates dropped keeping the first) and _parse_rollout_rs_thresholds (one
// entry shared by all options or one per option; k1: "lower_upper" ratio bounds, or u
// meaning [1/u, u]; k2 / k3: one upper bound).
struct RsOption {
  std::string name;
  std::optional<double> lower;  // k1 only
  double upper;
};
std::vector<RsOption> ParseRsOptions(const std::string& rollout_rs, const ConfigValue& spec) {
  static const std::set<std::string> kSupported = {"token_k1",    "token_k2",   "token_k3",    "seq_sum_k1",
                                                   "seq_sum_k2",  "seq_sum_k3", "seq_mean_k1", "seq_mean_k2",
                                                   "seq_mean_k3", "seq_max_k2", "seq_max_k3"};
  std::vector<std::string> names;
  const std::vector<std::string> modes = SplitStripped(rollout_rs);
  if (modes.empty()) throw VerlError("ValueError", "rollout_rs must contain at least one valid option.");
  for (const std::string& m : modes) {
    if (!kSupported.count(m)) throw VerlError("ValueError", "Invalid rollout_rs option: " + m + ".");
    if (std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
  }
  std::vector<std::string> raw;  // the entries as text; a number stands for str(number)
  std::optional<double> number;
  if (const auto* s = std::get_if<std::string>(&spec)) {
    raw = SplitStripped(*s);
  } else if (const auto* i = std::get_if<int64_t>(&spec)) {
    number = static_cast<double>(*i);
    raw = {std::to_string(*i)};
  } else if (const auto* d = std::get_if<double>(&spec)) {
    number = *d;  // str() of a Python float round-trips
    raw = {"<number>"};
  } else {
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  }
  if (raw.empty()) throw VerlError("ValueError", "rollout_rs_threshold must contain at least one threshold value.");
  if (raw.size() != 1 && raw.size() != names.size())
    throw VerlError("ValueError",
                    "rollout_rs_threshold expects either one threshold shared by all options or "
                    "exactly one per rollout_rs option.");
  std::vector<RsOption> out;
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string& entry = raw.size() == 1 ? raw[0] : raw[k];
    const auto value = [&](const std::string& text) { return number ? number : PyFloatOf(text); };
    RsOption o{names[k], std::nullopt, 0.0};
    const std::string invalid = "Invalid numeric threshold '" + entry + "' for option '" + o.name + "'.";
    if (EndsWithK(o.name, "k1")) {
      const size_t us = number ? std::string::npos : entry.find('_');
      std::optional<double> lower, upper;
      if (us != std::string::npos) {
        lower = PyFloatOf(entry.substr(0, us));
        upper = PyFloatOf(entry.substr(us + 1));
        if (!lower || !upper) throw VerlError("ValueError", invalid);
      } else {  // str(1.0 / float(upper)), outside verl's try: Python's own errors
        upper = value(entry);
        if (!upper) throw VerlError("ValueError", "could not convert string to float: '" + entry + "'");
        if (*upper == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
        lower = 1.0 / *upper;
      }
      if (*lower <= 0 || *upper <= 0)
        throw VerlError("ValueError", "Thresholds for option '" + o.name + "' must be positive.");
      if (*lower > *upper)
        throw VerlError("ValueError", "Thresholds for option '" + o.name + "' must be lower <= upper.");
      o.lower = lower;
      o.upper = *upper;
    } else {
      if (!number && entry.find('_') != std::string::npos)
        throw VerlError("ValueError", "rollout_rs_threshold for option '" + o.name +
                                          "' must provide a single upper bound without '_'.");
      const std::optional<double> upper = value(entry);
      if (!upper) throw VerlError("ValueError", invalid);
      if (*upper <= 0) throw VerlError("ValueError", "Threshold for option '" + o.name + "' must be positive.");
      o.upper = *upper;
    }
    out.push_back(o);
  }
  return out;
}

// verl_F.masked_sum / masked_mean along the last axis: one value per row.
at::Tensor RowMaskedSum(const at::Tensor& values, const at::Tensor& mask) {
  return (at::where(mask != 0, values, at::zeros_like(values)) * mask).sum(-1);
}
at::Tensor RowMaskedMean(const at::Tensor& values, const at::Tensor& mask) {
  return RowMaskedSum(values, mask) / (mask.sum(-1) + 1e-8);
}

double Item(const at::Tensor& t) { return t.item<double>(); }

using MetricMap = std::map<std::string, double>;

// verl: rollout_corr_helper.compute_is_metrics (both levels; the weights keep their
// batch dimension, so the per-row metrics are always there).
MetricMap IsMetrics(const at::Tensor& w, const at::Tensor& raw, const at::Tensor& log_for_metrics,
                    const at::Tensor& mask, bool sequence, double upper, std::optional<double> lower_in) {
  MetricMap m;
  const double lower = lower_in ? *lower_in : 1.0 / upper;
  const at::Tensor mask_bool = mask.to(at::kBool);
  if (sequence) {
    // torch.log(torch.tensor(x)): float32 tensors (the default dtype).
    const at::Tensor log_upper = at::log(at::scalar_tensor(upper, at::kFloat));
    const at::Tensor log_lower = at::log(at::scalar_tensor(lower, at::kFloat));
    m["rollout_is_max"] = Item(at::exp(log_for_metrics.max().clamp_max(kRolloutBound)));
    m["rollout_is_min"] = Item(at::exp(log_for_metrics.min()));
    m["rollout_is_mean"] = Item(MaskedMean(w, mask));
    m["rollout_is_ratio_fraction_high"] = Item(at::gt(log_for_metrics, log_upper).to(at::kFloat).mean());
    m["rollout_is_ratio_fraction_low"] = Item(at::lt(log_for_metrics, log_lower).to(at::kFloat).mean());
  } else {
    m["rollout_is_mean"] = Item(MaskedMean(w, mask));
    m["rollout_is_ratio_fraction_high"] = Item(MaskedMean(at::gt(raw, upper).to(at::kFloat), mask));
    m["rollout_is_ratio_fraction_low"] = Item(MaskedMean(at::lt(raw, lower).to(at::kFloat), mask));
    m["rollout_is_max"] = Item(w.masked_fill(~mask_bool, -kInfinity).max());
    m["rollout_is_min"] = Item(w.masked_fill(~mask_bool, kInfinity).min());
  }
  const at::Tensor clamped = w.clamp(0.0, upper);
  if (Item(mask.sum()) > 1) {
    const at::Tensor mean = MaskedMean(clamped, mask);
    const at::Tensor var = MaskedMean(clamped.square(), mask) - mean.square();
    m["rollout_is_std"] = Item(at::sqrt(var.clamp_min(0.0)));
  } else {
    m["rollout_is_std"] = 0.0;
  }
  const at::Tensor normalized = clamped / (MaskedMean(clamped, mask) + 1e-8);
  const double ess_den = Item(MaskedMean(normalized.square(), mask));
  // A Python float division: all applied weights zero raises instead of giving inf.
  if (ess_den == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
  m["rollout_is_eff_sample_size"] = 1.0 / ess_den;
  const at::Tensor seq = RowMaskedMean(w, mask);
  m["rollout_is_seq_mean"] = Item(seq.mean());
  m["rollout_is_seq_std"] = seq.numel() > 1 ? Item(seq.std()) : 0.0;  // unbiased
  m["rollout_is_seq_max"] = Item(seq.max());
  m["rollout_is_seq_min"] = Item(seq.min());
  m["rollout_is_seq_max_deviation"] = Item((seq - 1.0).abs().max());
  const at::Tensor raw_seq = RowMaskedMean(raw, mask);  // before TIS / IcePop
  m["rollout_is_seq_fraction_high"] = Item(at::gt(raw_seq, upper).to(at::kFloat).mean());
  m["rollout_is_seq_fraction_low"] = Item(at::lt(raw_seq, lower).to(at::kFloat).mean());
  return m;
}

// verl: rollout_corr_helper.compute_rollout_correction_weights (torch.distributed not
// initialised). Returns the (detached) weights; adds the IS metrics to m.
at::Tensor IsWeights(const at::Tensor& log_ratio, const at::Tensor& mask, const ConfigValue& level,
                     const ConfigValue& threshold, bool batch_normalize, MetricMap& m) {
  const auto* lv = std::get_if<std::string>(&level);
  if (!lv || (*lv != "token" && *lv != "sequence"))
    throw VerlError("ValueError", "Invalid rollout_is. Must be one of {'token', 'sequence'}.");
  const IsBounds b = ParseIsThreshold(threshold);
  const bool sequence = *lv == "sequence";
  at::Tensor raw, log_for_metrics;
  if (!sequence) {
    log_for_metrics = log_ratio;
    raw = at::exp(log_ratio.clamp(-kRolloutBound, kRolloutBound));
  } else {
    log_for_metrics = RowMaskedSum(log_ratio, mask).unsqueeze(-1);  // B x 1
    raw = at::exp(log_for_metrics.clamp(-kRolloutBound, kRolloutBound)).expand_as(log_ratio);
  }
  raw = raw * mask;
  at::Tensor w;
  if (!b.lower) {
    w = raw.clamp_max(b.upper);  // TIS
  } else {                       // IcePop
    w = at::where(at::logical_and(raw >= *b.lower, raw <= b.upper), raw, at::zeros_like(raw));
  }
  const MetricMap is = IsMetrics(w, raw, log_for_metrics, mask, sequence, b.upper, b.lower);
  m.insert(is.begin(), is.end());
  if (b.lower)
    m["rollout_is_oob_ratio"] = Item(MaskedMean(at::logical_or(raw<*b.lower, raw> b.upper).to(at::kFloat), mask));
  w = w.detach();
  if (batch_normalize) {
    at::Tensor mean;
    if (!sequence) {
      mean = MaskedMean(w, mask);
    } else {
      const at::Tensor seq_w = RowMaskedMean(w, mask);
      const at::Tensor seq_mask = (mask.sum(-1) > 0).to(w.scalar_type());
      mean = (seq_w * seq_mask).sum() / seq_mask.sum().clamp_min(1e-8);
    }
    if (Item(mean) > 1e-8) {
      w = w / mean;
      m["rollout_is_batch_norm_factor"] = Item(mean);
    } else {
      m["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  return w;
}

// verl: rollout_corr_helper.compute_rs_metrics for one option. `stat` is per token (a
// sequence option's row value broadcast); `per_seq` the row values (undefined for a
// token option: then the rows' masked means).
void RsMetrics(const std::string& option, const at::Tensor& stat, const at::Tensor& mask, const at::Tensor& seq_valid,
               bool sequence, const at::Tensor& per_seq, double thr_upper, double thr_lower, bool apply_lower,
               MetricMap& m) {
  const std::string p = "rollout_rs_" + option;
  const at::Tensor mask_bool = mask.to(at::kBool);
  const at::Tensor seq_values = per_seq.defined() ? per_seq : RowMaskedMean(stat, mask);
  const at::Tensor valid = at::masked_select(seq_values, seq_valid);
  const bool any_seq = valid.numel() > 0;
  m[p + "_mean"] = Item(MaskedMean(stat, mask));
  if (sequence && any_seq) {
    m[p + "_max"] = Item(valid.max());
    m[p + "_min"] = Item(valid.min());
    m[p + "_fraction_high"] = Item(at::gt(valid, thr_upper).to(at::kFloat).mean());
    m[p + "_fraction_low"] = apply_lower ? Item(at::lt(valid, thr_lower).to(at::kFloat).mean()) : 0.0;
  } else {
    m[p + "_max"] = Item(stat.masked_fill(~mask_bool, -kInfinity).max());
    m[p + "_min"] = Item(stat.masked_fill(~mask_bool, kInfinity).min());
    m[p + "_fraction_high"] = Item(MaskedMean(at::gt(stat, thr_upper).to(at::kFloat), mask));
    m[p + "_fraction_low"] = apply_lower ? Item(MaskedMean(at::lt(stat, thr_lower).to(at::kFloat), mask)) : 0.0;
  }
  if (Item(mask.sum()) > 1) {
    const at::Tensor c = stat.clamp(apply_lower ? thr_lower : 0.0, thr_upper);
    const at::Tensor mean = MaskedMean(c, mask);
    m[p + "_std"] = Item(at::sqrt((MaskedMean(c.square(), mask) - mean.square()).clamp_min(0.0)));
  } else {
    m[p + "_std"] = 0.0;
  }
  if (any_seq) {
    m[p + "_seq_mean"] = Item(valid.mean());
    m[p + "_seq_std"] = valid.numel() > 1 ? Item(valid.std()) : 0.0;
    m[p + "_seq_max"] = Item(valid.max());
    m[p + "_seq_min"] = Item(valid.min());
    m[p + "_seq_max_deviation"] = Item((valid - 0.0).abs().max());
    m[p + "_seq_fraction_high"] = Item(at::gt(valid, thr_upper).to(at::kFloat).mean());
    if (apply_lower) m[p + "_seq_fraction_low"] = Item(at::lt(valid, thr_lower).to(at::kFloat).mean());
  } else {
    for (const char* k : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high",
                          "_seq_fraction_low"})
      m[p + k] = 0.0;
  }
}

// verl: rollout_corr_helper.compute_rollout_rejection_mask. With l = clamp(log-ratio,
// +-20): k1 = -l, k2 = l^2 / 2, k3 = exp(l) - 1 - l, per token or per row (masked sum,
// masked mean, max over valid tokens with 0 for an empty row); k1 keeps
// log(lower) <= stat <= log(upper), k2 / k3 keep stat <= upper; all options must pass.
// Returns the modified response mask; adds the RS metrics to m.
at::Tensor RejectionMask(const at::Tensor& log_ratio, const at::Tensor& mask, const std::string& rollout_rs,
                         const ConfigValue& threshold, MetricMap& m) {
  const std::vector<RsOption> options = ParseRsOptions(rollout_rs, threshold);
  const at::Tensor safe = log_ratio.clamp(-kRolloutBound, kRolloutBound);
  const at::Tensor k1 = -safe, k2 = 0.5 * safe.pow(2), k3 = at::exp(safe) - 1.0 - safe;
  const at::Tensor mask_bool = mask.to(at::kBool);
  const at::Tensor seq_valid = mask.sum(-1) > 0;
  at::Tensor combined = at::ones_like(mask, log_ratio.scalar_type());
  for (const RsOption& o : options) {
    const bool is_k1 = EndsWithK(o.name, "k1");
    const double lower_log = is_k1 ? std::log(*o.lower) : 0.0, upper_log = is_k1 ? std::log(o.upper) : 0.0;
    const at::Tensor& token_stat = is_k1 ? k1 : EndsWithK(o.name, "k2") ? k2 : k3;
    const auto keeps = [&](const at::Tensor& s) {
      return is_k1 ? at::logical_and(s >= lower_log, s <= upper_log) : s <= o.upper;
    };
    const bool token_level = o.name.rfind("token_", 0) == 0;
    at::Tensor stat, per_seq, keep;
    if (token_level) {
      stat = token_stat;
      keep = keeps(stat);
    } else {
      if (o.name.rfind("seq_sum", 0) == 0) {
        per_seq = RowMaskedSum(token_stat, mask);
      } else if (o.name.rfind("seq_mean", 0) == 0) {
        per_seq = RowMaskedMean(token_stat, mask);
      } else {  // seq_max
        const at::Tensor max = token_stat.masked_fill(~mask_bool, -kInfinity).amax(-1);
        per_seq = at::where(max == -kInfinity, at::zeros_like(max), max);
      }
      keep = keeps(per_seq).unsqueeze(-1).expand_as(mask_bool);
      stat = per_seq.unsqueeze(-1).expand_as(mask);
    }
    const at::Tensor keep_mask = keep.to(log_ratio.scalar_type());
    combined = combined * keep_mask;
    const at::Tensor seq_keep = at::logical_not(at::logical_and(at::logical_not(keep), mask_bool)).all(-1);
    RsMetrics(o.name, stat, mask, seq_valid, !token_level, per_seq, is_k1 ? upper_log : o.upper,
              is_k1 ? lower_log : 0.0, is_k1, m);
    m["rollout_rs_" + o.name + "_masked_fraction"] = Item(MaskedMean(1 - keep_mask, mask));
    const at::Tensor seq_valid_float = seq_valid.to(at::kFloat);
    double seq_masked = 0.0;
    if (Item(seq_valid_float.sum()) > 0) {
      const at::Tensor seq_keep_float = seq_keep.to(log_ratio.scalar_type());
      seq_masked = Item(((1.0 - seq_keep_float) * seq_valid_float).sum() / seq_valid_float.sum());
    }
    m["rollout_rs_" + o.name + "_seq_masked_fraction"] = seq_masked;
  }
  m["rollout_rs_masked_fraction"] = Item(MaskedMean(1 - combined, mask));
  const at::Tensor final_keep = at::logical_and(combined > 0.5, mask_bool);
  const at::Tensor seq_hit = at::logical_and(at::logical_not(final_keep), mask_bool).any(-1);
  m["rollout_rs_seq_masked_fraction"] = Item(seq_hit.to(at::kFloat).mean());
  return (mask * combined).to(mask.scalar_type());
}

// verl: rollout_corr_helper.compute_offpolicy_metrics, with rollout log-probs.
void OffpolicyMetrics(const at::Tensor& old_log_prob, const at::Tensor& rollout, const at::Tensor& mask, MetricMap& m) {
  const at::Tensor train_rows = RowMaskedMean(old_log_prob, mask);
  m["training_ppl"] = Item(at::exp(-train_rows).mean());
  m["training_log_ppl"] = Item((-train_rows).mean());
  m["kl"] = Item(MaskedMean(rollout - old_log_prob, mask));
  const at::Tensor lr = old_log_prob - rollout;
  m["k3_kl"] = Item(MaskedMean(at::exp(lr) - lr - 1, mask));
  const at::Tensor rollout_rows = RowMaskedMean(rollout, mask);
  m["rollout_ppl"] = Item(at::exp(-rollout_rows).mean());
  m["rollout_log_ppl"] = Item((-rollout_rows).mean());
  const at::Tensor diff = rollout_rows - train_rows;
  m["log_ppl_diff"] = Item(diff.mean());
  m["log_ppl_abs_diff"] = Item(diff.abs().mean());
  m["log_ppl_diff_max"] = Item(diff.max());
  m["log_ppl_diff_min"] = Item(diff.min());
  m["ppl_ratio"] = Item(at::exp(diff).mean());
  const at::Tensor rho = at::exp(lr.clamp(-kRolloutBound, kRolloutBound));
  m["chi2_token"] = Item(MaskedMean(rho.square(), mask) - 1.0);
  const at::Tensor seq_sum = RowMaskedSum(lr, mask).clamp(-kRolloutBound, kRolloutBound);
  m["chi2_seq"] = Item(at::exp(2.0 * seq_sum).mean() - 1.0);
}

struct Correction {
  std::optional<at::Tensor> weights;  // when IS is on
  at::Tensor mask;                    // the response mask after rejection
  MetricMap metrics;                  // "rollout_corr/..."
};

// verl: rollout_corr_helper.compute_rollout_correction_and_rejection_mask, run as
// compute_policy_loss_bypass_mode runs it: under no_grad, the current policy's
// log_prob as "old", the input old_log_prob as the rollout policy.
Correction RolloutCorrection(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const at::NoGradGuard no_grad;
  const at::Tensor current = log_prob.detach();
  const at::Tensor& rollout = in.at("old_log_prob");
  const at::Tensor& mask = in.at("response_mask");
  if (!mask.any().item<bool>())
    throw VerlError("ValueError", "response_mask must contain at least one valid token (1).");
  const at::Tensor log_ratio = current - rollout;
  Correction c;
  MetricMap m;
  const ConfigValue* level = RawValue(cfg, "rollout_is");
  const ConfigValue* is_threshold = RawValue(cfg, "rollout_is_threshold");
  if (level && is_threshold)
    c.weights = IsWeights(log_ratio, mask, *level, *is_threshold, cfg.Bool("rollout_is_batch_normalize"), m);
  c.mask = mask.clone();
  if (const ConfigValue* rs = RawValue(cfg, "rollout_rs")) {
    const ConfigValue* rs_threshold = RawValue(cfg, "rollout_rs_threshold");
    if (!rs_threshold)
      throw VerlError("ValueError", "rollout_rs_threshold must be explicitly provided when rollout_rs is enabled.");
    const auto* text = std::get_if<std::string>(rs);
    if (!text)
      throw VerlError("ValueError", "rollout_rs must be a non-empty string (comma separated for multiple options).");
    c.mask = RejectionMask(log_ratio, mask, *text, *rs_threshold, m);
  }
  OffpolicyMetrics(current, rollout, mask, m);
  for (const auto& [key, value] : m) c.metrics["rollout_corr/" + key] = value;
  return c;
}

// verl: core_algos.compute_policy_loss_bypass_mode. The input old_log_prob holds the
// rollout log-probs; its rollout_is_weights input is ignored (recomputed). ppo_clip:
// compute_policy_loss_vanilla on the modified mask without IS weights; reinforce:
// compute_policy_loss_reinforce with the pipeline's weights on it. Both reach log_prob
// only through the loss itself: weights and mask are constants.
LossAndMetrics BypassMode(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  const Correction corr = RolloutCorrection(log_prob, in, cfg);
  TensorMap eff = in;
  eff["response_mask"] = corr.mask;
  eff.erase("rollout_is_weights");
  const std::string agg_mode = cfg.String("loss_agg_mode");
  // verl receives an absent loss_type as None and rejects it, naming it as Python prints it.
  const std::string loss_type = cfg.OptionalString("loss_type").value_or("None");
  LossAndMetrics r;
  if (loss_type == "reinforce") {
    if (corr.weights) eff["rollout_is_weights"] = *corr.weights;
    Config reinforce_cfg = cfg;
    reinforce_cfg.Set("loss_agg_mode", agg_mode);
    r = Reinforce(log_prob, eff, reinforce_cfg);
  } else if (loss_type == "ppo_clip") {
    const Clip clip = ClipRatios(cfg);
    const DualClip dc = DualClipPpo(log_prob, eff, clip.low, clip.high, cfg.Double("clip_ratio_c"), Bug::kNone);
    r.loss = AggLossTensor(dc.losses, corr.mask, agg_mode, cfg);
    r.metrics = {{"actor/pg_clipfrac", dc.clipfrac},
                 {"actor/ppo_kl", dc.ppo_kl},
                 {"actor/pg_clipfrac_lower", dc.clipfrac_lower}};
  } else {
    throw VerlError("ValueError", "Invalid loss_type: " + loss_type + ". Must be 'reinforce' or 'ppo_clip'.");
  }
  for (const auto& [key, value] : corr.metrics) r.metrics[key] = at::scalar_tensor(value, at::kDouble);
  return r;
}

using LossFn = LossAndMetrics (*)(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg);

// Without a recorded pick only verl's errors can be reproduced (its asserts, agg_loss's
// ValueError: raised whatever the pick); an empty pick raises them, else Unsupported.
LossAndMetrics WithRecordedPick(LossFn fn, const at::Tensor& log_prob, const TensorMap& in, const Config& cfg) {
  if (in.count("cov_selected")) return fn(log_prob, in, cfg);
  TensorMap no_pick = in;
  no_pick["cov_selected"] = at::zeros_like(in.at("response_mask"));
  fn(log_prob, no_pick, cfg);
  throw Unsupported("clip_cov / kl_cov need verl's pick of tokens as the input cov_selected");
}

using PolicyLossFn = std::function<LossAndMetrics(const at::Tensor& log_prob, const TensorMap& in, const Config& cfg)>;

// The losses FamilyPolicyLoss differentiates, by registry name (family "policy_loss").
const std::map<std::string, PolicyLossFn>& FamilyLosses() {
  static const auto* const table = new std::map<std::string, PolicyLossFn>{
      {"gspo", Gspo},
      {"sapo", Sapo},
      {"gpg", Gpg},
      {"cispo", Cispo},
      {"dro", Dro},
      {"geo_mean", GeoMean},
      {"dppo_tv",
       [](const at::Tensor& lp, const TensorMap& in, const Config& cfg) { return Dppo(lp, in, cfg, false); }},
      {"dppo_kl", [](const at::Tensor& lp, const TensorMap& in, const Config& cfg) { return Dppo(lp, in, cfg, true); }},
      {"clip_cov", [](const at::Tensor& lp, const TensorMap& in,
                      const Config& cfg) { return WithRecordedPick(ClipCov, lp, in, cfg); }},
      {"kl_cov", [](const at::Tensor& lp, const TensorMap& in,
                    const Config& cfg) { return WithRecordedPick(KlCov, lp, in, cfg); }},
      {"compute_policy_loss_reinforce", Reinforce},
      {"compute_policy_loss", DeprecatedPpo},
      {"bypass_mode", BypassMode},
  };
  return *table;
}

}  // namespace

TorchResult FamilyPolicyLoss(const TensorMap& in, const Config& given, const std::string& name) {
  const auto fn = FamilyLosses().find(name);
  if (fn == FamilyLosses().end()) throw std::invalid_argument("FamilyPolicyLoss: no policy loss '" + name + "' here");
  const Config cfg = WithVerlDefaults(name, given, "policy_loss");
  const at::Tensor log_prob = in.at("log_prob").detach().clone().requires_grad_(true);
  const LossAndMetrics lm = fn->second(log_prob, in, cfg);
  TorchResult r;
  r.grads["log_prob"] = Grad(lm.loss, log_prob);
  r.outputs["pg_loss"] = lm.loss.detach();
  for (const auto& [key, value] : lm.metrics) r.metrics[key] = value.item<double>();
  return r;
}

TorchResult ValueLoss(const TensorMap& in, const Config& given) {
  const Config cfg = WithVerlDefaults("compute_value_loss", given, "policy_loss");
  const at::Tensor vpreds = in.at("vpreds").detach().clone().requires_grad_(true);
  const at::Tensor& returns = in.at("returns");
  const at::Tensor& values = in.at("values");
  const at::Tensor& mask = in.at("response_mask");
  const double c = cfg.Double("cliprange_value");  // required, as in verl
  // verl_F.clip_by_value is max(min(x, hi), lo), not clamp: at V +- c torch's tie rule
  // gives vpreds half the gradient.
  const at::Tensor vpredclipped = at::maximum(at::minimum(vpreds, values + c), values - c);
  const at::Tensor l1 = (vpreds - returns).square();
  const at::Tensor l2 = (vpredclipped - returns).square();
  const at::Tensor vf_loss = 0.5 * AggLossTensor(at::maximum(l1, l2), mask, cfg.String("loss_agg_mode"), cfg);
  TorchResult r;
  r.grads["vpreds"] = Grad(vf_loss, vpreds);
  r.outputs["vf_loss"] = vf_loss.detach();
  r.metrics["vf_clipfrac"] = MaskedMean(at::gt(l2, l1).to(at::kFloat), mask).item<double>();
  return r;
}

TorchResult EntropyLoss(const TensorMap& in, const Config& given) {
  const Config cfg = WithVerlDefaults("compute_entropy_loss", given, "policy_loss");
  const at::Tensor logits = in.at("logits").detach().clone().requires_grad_(true);
  // verl_F.entropy_from_logits: logsumexp(z) - sum softmax(z) z over the vocabulary.
  const at::Tensor entropy = at::logsumexp(logits, {-1}) - (at::softmax(logits, -1) * logits).sum(-1);
  // verl passes no global_batch_info here: agg_loss's defaults, whatever the config holds.
  const at::Tensor loss = AggLossTensor(entropy, in.at("response_mask"), cfg.String("loss_agg_mode"), Config());
  TorchResult r;
  r.grads["logits"] = Grad(loss, logits);
  r.outputs["entropy_loss"] = loss.detach();
  return r;
}

TorchResult ActorKlLoss(const TensorMap& in, const Config& given) {
  const Config cfg = WithVerlDefaults("actor_kl_loss", given, "policy_loss");
  const at::Tensor log_prob = in.at("log_prob").detach().clone().requires_grad_(true);
  const at::Tensor kld = KlPenaltyTensor(log_prob, in.at("ref_log_prob"), cfg.String("kl_loss_type"));
  const at::Tensor kl_loss = AggLossTensor(kld, in.at("response_mask"), cfg.String("loss_agg_mode"), cfg);
  const at::Tensor term = kl_loss * cfg.Double("kl_loss_coef");
  TorchResult r;
  r.grads["log_prob"] = Grad(term, log_prob);
  r.outputs["kl_term"] = term.detach();
  r.metrics["kl_loss"] = kl_loss.item<double>();
  return r;
}

namespace {

// The one list of policy losses (registry names, family "policy_loss") this file
// implements: PolicyLossNames and PolicyLossCandidate both read it.
const std::map<std::string, CandidateFn>& PolicyLossTable() {
  static const std::map<std::string, CandidateFn>* const table = [] {
    auto* t = new std::map<std::string, CandidateFn>{
        {"vanilla", VanillaCandidate()},
        {"compute_value_loss", ValueLoss},
        {"compute_entropy_loss", EntropyLoss},
        {"actor_kl_loss", ActorKlLoss},
    };
    for (const auto& [name, fn] : FamilyLosses()) {
      t->emplace(name,
                 [name = name](const TensorMap& in, const Config& cfg) { return FamilyPolicyLoss(in, cfg, name); });
    }
    return t;
  }();
  return *table;
}

}  // namespace

const std::vector<std::string>& PolicyLossNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, fn] : PolicyLossTable()) v.push_back(name);
    return v;
  }();
  return names;
}

TorchResult AggLoss(const TensorMap& in, const Config& given, const std::string& mode) {
  const Config cfg = WithVerlDefaults(mode, given, "aggregation");
  const at::Tensor loss_mat = in.at("loss_mat").detach().clone().requires_grad_(true);
  const at::Tensor loss = AggLossTensor(loss_mat, in.at("loss_mask"), mode, cfg);
  TorchResult r;
  r.grads["loss_mat"] = Grad(loss, loss_mat);
  r.outputs["loss"] = loss.detach();
  return r;
}

TorchResult KlPenalty(const TensorMap& in, const std::string& name) {
  const at::Tensor logprob = in.at("logprob").detach().clone().requires_grad_(true);
  const at::Tensor kl = KlPenaltyTensor(logprob, in.at("ref_logprob"), name);
  TorchResult r;
  // The graph is kept: the API takes the stop-gradient VJPs of `kl` from it.
  r.grads["logprob"] = torch::autograd::grad({kl.sum()}, {logprob}, {}, /*retain_graph=*/true)[0];
  r.outputs["kl"] = kl;
  r.vjp_leaves["logprob"] = logprob;
  return r;
}

CandidateFn VanillaCandidate(Bug bug) {
  return [bug](const TensorMap& in, const Config& cfg) { return VanillaPolicyLoss(in, cfg, bug); };
}
CandidateFn PolicyLossCandidate(const std::string& name) {
  const auto it = PolicyLossTable().find(name);
  if (it == PolicyLossTable().end())
    throw std::invalid_argument("PolicyLossCandidate: no policy loss '" + name + "' here");
  return it->second;
}
CandidateFn AggCandidate(const std::string& mode) {
  return [mode](const TensorMap& in, const Config& cfg) { return AggLoss(in, cfg, mode); };
}
CandidateFn KlCandidate(const std::string& name) {
  return [name](const TensorMap& in, const Config&) { return KlPenalty(in, name); };
}

}  // namespace verlconf::torch_api::example
