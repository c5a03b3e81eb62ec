// verl 0.9.1's vanilla PPO loss, agg_loss and kl_penalty with ATen ops, line by line
// as verl writes them in core_algos.py; gradients from torch autograd.
#include "tools/torch_api/example_losses.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>

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
CandidateFn AggCandidate(const std::string& mode) {
  return [mode](const TensorMap& in, const Config& cfg) { return AggLoss(in, cfg, mode); };
}
CandidateFn KlCandidate(const std::string& name) {
  return [name](const TensorMap& in, const Config&) { return KlPenalty(in, name); };
}

}  // namespace verlconf::torch_api::example
