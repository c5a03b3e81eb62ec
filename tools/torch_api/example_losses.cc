// verl 0.9.1's policy losses (vanilla, gspo, sapo, gpg, cispo, dro, geo_mean, dppo_tv,
// dppo_kl), agg_loss and kl_penalty with ATen ops, step by step as verl builds them in
// core_algos.py (every .detach() where verl has one); gradients from torch autograd.
#include "tools/torch_api/example_losses.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "oracle/errors.h"

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
at::Tensor ClampMaxLikeVerl(const at::Tensor& x, double hi) {
  return at::where(x < hi, x, x.detach().clamp_max(hi));
}

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

}  // namespace

TorchResult VanillaPolicyLoss(const TensorMap& in, const Config& cfg, Bug bug) {
  const double clip = cfg.Double("clip_ratio", 0.2);
  const double clip_low = cfg.Double("clip_ratio_low", clip);
  const double clip_high = cfg.Double("clip_ratio_high", clip);
  const double clip_c = cfg.Double("clip_ratio_c", 3.0);
  if (!(clip_c > 1.0))
    throw VerlError("AssertionError", "The lower bound of the clip_ratio_c for dual-clip PPO should be greater than "
                                      "1.0, but get the value: " + PyFloat(clip_c) + ".");
  const at::Tensor& old_log_prob = in.at("old_log_prob");
  const at::Tensor& advantages = in.at("advantages");
  const at::Tensor& response_mask = in.at("response_mask");
  const at::Tensor log_prob = in.at("log_prob").detach().clone().requires_grad_(true);

  at::Tensor negative_approx_kl = log_prob - old_log_prob;
  const auto clamp = [bug](const at::Tensor& x, double lo, double hi) {
    return bug == Bug::kNativeClamp ? x.clamp(lo, hi) : ClampLikeVerl(x, lo, hi);
  };
  if (bug != Bug::kNoLogRatioClamp) negative_approx_kl = clamp(negative_approx_kl, -20.0, 20.0);
  const at::Tensor ratio = at::exp(negative_approx_kl);
  const at::Tensor ppo_kl = MaskedMean(-negative_approx_kl, response_mask);

  const at::Tensor neg_adv = bug == Bug::kWrongSign ? advantages : -advantages;
  const at::Tensor pg_losses1 = neg_adv * ratio;
  const at::Tensor pg_losses2 = neg_adv * clamp(ratio, 1 - clip_low, 1 + clip_high);
  const at::Tensor clip_pg_losses1 = at::maximum(pg_losses1, pg_losses2);  // ties: gradient split 0.5/0.5
  const at::Tensor pg_clipfrac = MaskedMean(at::gt(pg_losses2, pg_losses1).to(at::kFloat), response_mask);

  const at::Tensor pg_losses3 = -advantages * clip_c;
  const at::Tensor clip_pg_losses2 = at::minimum(pg_losses3, clip_pg_losses1);
  const at::Tensor pg_clipfrac_lower =
      MaskedMean(at::gt(clip_pg_losses1, pg_losses3).to(at::kFloat) * (advantages < 0).to(at::kFloat), response_mask);

  at::Tensor pg_losses = at::where(advantages < 0, clip_pg_losses2, clip_pg_losses1);
  if (auto it = in.find("rollout_is_weights"); it != in.end()) pg_losses = pg_losses * it->second;
  const at::Tensor pg_loss =
      AggLossTensor(pg_losses, response_mask, cfg.String("loss_agg_mode", "token-mean"), cfg);

  TorchResult r;
  r.grads["log_prob"] = Grad(pg_loss, log_prob);
  r.outputs["pg_loss"] = pg_loss.detach();
  r.metrics["actor/pg_clipfrac"] = pg_clipfrac.item<double>();
  r.metrics["actor/ppo_kl"] = ppo_kl.item<double>();
  r.metrics["actor/pg_clipfrac_lower"] = pg_clipfrac_lower.item<double>();
  return r;
}

// ---- The other policy losses. Each builds verl's loss from `log_prob` (a leaf that
// requires grad) and returns the aggregated loss and verl's metrics as tensors;
// FamilyPolicyLoss differentiates. Config fallbacks are ActorConfig's defaults.
namespace {

struct LossAndMetrics {
  at::Tensor loss;
  std::map<std::string, at::Tensor> metrics;
};

struct Clip {
  double low, high;
};
Clip ClipRatios(const Config& cfg) {
  const double clip = cfg.Double("clip_ratio", 0.2);
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
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode", "token-mean"), cfg);
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
  const at::Tensor tau = at::where(adv > 0, at::full_like(adv, cfg.Double("tau_pos", 1.0)),
                                   at::full_like(adv, cfg.Double("tau_neg", 1.05)));
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
  return {AggLossTensor(losses, in.at("response_mask"), cfg.String("loss_agg_mode", "token-mean"), cfg), {}};
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
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode", "token-mean"), cfg);
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
  const at::Tensor losses =
      WithIsWeights(-(log_prob * in.at("advantages") - 0.5 * *beta * log_ratio.square()), in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode", "token-mean"), cfg);
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
  const double c = cfg.Double("clip_ratio_c", 3.0);
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
    const at::Tensor bkl = p_old * (old_log_prob - log_prob) + (1.0 - p_old) * at::log((1.0 - p_old + 1e-8) /
                                                                                        (1.0 - p + 1e-8));
    keep_pos = at::logical_or(bkl <= div.high, p <= p_old);
    keep_neg = at::logical_or(bkl <= div.low, p >= p_old);
  } else {
    keep_pos = (p - p_old) <= div.high;
    keep_neg = (p - p_old) >= -div.low;
  }
  const at::Tensor valid = at::where(adv > 0, keep_pos, keep_neg).detach().to(at::kFloat);
  const at::Tensor losses = WithIsWeights(-adv * truncated * log_prob * valid, in);
  LossAndMetrics r;
  r.loss = AggLossTensor(losses, mask, cfg.String("loss_agg_mode", "token-mean"), cfg);
  r.metrics["actor/pg_clipfrac"] = MaskedMean(1.0 - valid, mask);
  r.metrics["actor/ppo_kl"] = MaskedMean(-log_ratio, mask);
  r.metrics["actor/pg_clipfrac_lower"] = MaskedMean((ratio > c).to(at::kFloat) * valid, mask);
  return r;
}

}  // namespace

TorchResult FamilyPolicyLoss(const TensorMap& in, const Config& cfg, const std::string& name) {
  const at::Tensor log_prob = in.at("log_prob").detach().clone().requires_grad_(true);
  LossAndMetrics lm;
  if (name == "gspo") lm = Gspo(log_prob, in, cfg);
  else if (name == "sapo") lm = Sapo(log_prob, in, cfg);
  else if (name == "gpg") lm = Gpg(log_prob, in, cfg);
  else if (name == "cispo") lm = Cispo(log_prob, in, cfg);
  else if (name == "dro") lm = Dro(log_prob, in, cfg);
  else if (name == "geo_mean") lm = GeoMean(log_prob, in, cfg);
  else if (name == "dppo_tv") lm = Dppo(log_prob, in, cfg, /*binary_kl=*/false);
  else if (name == "dppo_kl") lm = Dppo(log_prob, in, cfg, /*binary_kl=*/true);
  else throw std::invalid_argument("FamilyPolicyLoss: no policy loss '" + name + "' here");
  TorchResult r;
  r.grads["log_prob"] = Grad(lm.loss, log_prob);
  r.outputs["pg_loss"] = lm.loss.detach();
  for (const auto& [key, value] : lm.metrics) r.metrics[key] = value.item<double>();
  return r;
}

const std::vector<std::string>& PolicyLossNames() {
  static const std::vector<std::string> names = {"vanilla", "gspo",     "sapo",    "gpg",    "cispo",
                                                 "dro",     "geo_mean", "dppo_tv", "dppo_kl"};
  return names;
}

TorchResult AggLoss(const TensorMap& in, const Config& cfg, const std::string& mode) {
  const at::Tensor loss_mat = in.at("loss_mat").detach().clone().requires_grad_(true);
  const at::Tensor loss = AggLossTensor(loss_mat, in.at("loss_mask"), mode, cfg);
  TorchResult r;
  r.grads["loss_mat"] = Grad(loss, loss_mat);
  r.outputs["loss"] = loss.detach();
  return r;
}

TorchResult KlPenalty(const TensorMap& in, const std::string& name) {
  const at::Tensor logprob = in.at("logprob").detach().clone().requires_grad_(true);
  const at::Tensor& ref = in.at("ref_logprob");
  at::Tensor kl;
  if (!name.empty() && name.back() == '+') {
    // Straight-through: the value of the estimator, the gradient of k2.
    const at::Tensor forward = KlForward(logprob, ref, name.substr(0, name.size() - 1));
    const at::Tensor backward_score = 0.5 * (logprob - ref).square();
    kl = backward_score - backward_score.detach() + forward.detach();
  } else {
    kl = KlForward(logprob, ref, name);
  }
  TorchResult r;
  r.grads["logprob"] = Grad(kl.sum(), logprob);
  r.outputs["kl"] = kl.detach();
  return r;
}

CandidateFn VanillaCandidate(Bug bug) {
  return [bug](const TensorMap& in, const Config& cfg) { return VanillaPolicyLoss(in, cfg, bug); };
}
CandidateFn PolicyLossCandidate(const std::string& name) {
  if (name == "vanilla") return VanillaCandidate();
  return [name](const TensorMap& in, const Config& cfg) { return FamilyPolicyLoss(in, cfg, name); };
}
CandidateFn AggCandidate(const std::string& mode) {
  return [mode](const TensorMap& in, const Config& cfg) { return AggLoss(in, cfg, mode); };
}
CandidateFn KlCandidate(const std::string& name) {
  return [name](const TensorMap& in, const Config&) { return KlPenalty(in, name); };
}

}  // namespace verlconf::torch_api::example
