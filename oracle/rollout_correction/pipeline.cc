// The off-policy diagnostics (verl: compute_offpolicy_metrics), the pipeline that runs
// IS, RS and the diagnostics on one batch (compute_rollout_correction_and_rejection_mask),
// and the bypass_mode policy loss built on that pipeline.
#include <algorithm>
#include <cmath>

#include "oracle/policy_loss/legacy.h"
#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
using namespace rollout_internal;
namespace {

// Result::boundary of a result assembled from stages: a decision near a bound in any
// stage. An empty array is a stage that did not run.
void ElementwiseMax(Array& into, const Array& other) {
  if (!other.size()) return;
  if (!into.size()) {
    into = other;
    return;
  }
  for (int64_t k = 0; k < into.size(); ++k) into[k] = std::max(into[k], other[k]);
}

}  // namespace

// ------------------------------------------------------------------ off-policy metrics

void CheckOffpolicyMask(const Array& mask) {
  if (!AnyValid(mask)) throw VerlError("AssertionError", "Expected at least one valid token in response_mask");
}

// verl: compute_offpolicy_metrics.
std::map<std::string, double> compute_offpolicy_metrics(const Array& old_log_prob, const Array* rollout_log_prob,
                                                        const Array& mask) {
  CheckOffpolicyMask(mask);
  std::map<std::string, double> m;
  const Array train_rows = masked_mean_rows(old_log_prob, mask);
  std::vector<double> ppl, log_ppl;
  for (double v : train_rows.data) {
    ppl.push_back(ExpIn(-v, mask.dtype));  // torch.exp of a float32 tensor: inf past its range
    log_ppl.push_back(-v);
  }
  m["training_ppl"] = Mean(ppl);
  m["training_log_ppl"] = Mean(log_ppl);
  if (!rollout_log_prob) return m;
  const Array& rollout = *rollout_log_prob;

  Array diff(mask.shape, mask.dtype), k3(mask.shape, mask.dtype), rho2(mask.shape, mask.dtype),
      lr(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    diff[k] = rollout[k] - old_log_prob[k];
    lr[k] = old_log_prob[k] - rollout[k];
    k3[k] = ExpIn(lr[k], mask.dtype) - lr[k] - 1.0;  // unclamped
    const double rho = std::exp(Clamp(lr[k], -kRolloutSafetyBound, kRolloutSafetyBound));
    rho2[k] = rho * rho;
  }
  m["kl"] = masked_mean(diff, mask);
  m["k3_kl"] = masked_mean(k3, mask);

  const Array rollout_rows = masked_mean_rows(rollout, mask);
  std::vector<double> r_ppl, r_log_ppl, d, abs_d, ratio;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    r_ppl.push_back(ExpIn(-rollout_rows[i], mask.dtype));
    r_log_ppl.push_back(-rollout_rows[i]);
    const double di = rollout_rows[i] - train_rows[i];
    d.push_back(di);
    abs_d.push_back(std::fabs(di));
    ratio.push_back(ExpIn(di, mask.dtype));
  }
  m["rollout_ppl"] = Mean(r_ppl);
  m["rollout_log_ppl"] = Mean(r_log_ppl);
  m["log_ppl_diff"] = Mean(d);
  m["log_ppl_abs_diff"] = Mean(abs_d);
  m["log_ppl_diff_max"] = Max(d);
  m["log_ppl_diff_min"] = Min(d);
  m["ppl_ratio"] = Mean(ratio);
  m["chi2_token"] = masked_mean(rho2, mask) - 1.0;
  std::vector<double> seq_rho2;
  for (double s : RowMaskedSums(lr, mask))
    seq_rho2.push_back(std::exp(2.0 * Clamp(s, -kRolloutSafetyBound, kRolloutSafetyBound)));
  m["chi2_seq"] = Mean(seq_rho2) - 1.0;
  return m;
}

std::vector<std::string> OffpolicyMetricNames(bool with_rollout) {
  std::vector<std::string> out = {"training_ppl", "training_log_ppl"};
  if (with_rollout)
    for (const char* k : {"kl", "k3_kl", "rollout_ppl", "rollout_log_ppl", "log_ppl_diff", "log_ppl_abs_diff",
                          "log_ppl_diff_max", "log_ppl_diff_min", "ppl_ratio", "chi2_token", "chi2_seq"})
      out.push_back(k);
  return out;
}

// ------------------------------------------------------------------ pipeline

void CheckPipelineInputs(const Array& old_log_prob, const Array& rollout_log_prob, const Array& mask) {
  if (!AnyValid(mask)) NoValidToken();
  if (old_log_prob.shape != rollout_log_prob.shape || old_log_prob.shape != mask.shape)
    throw VerlError("ValueError", "old_log_prob, rollout_log_prob and response_mask shapes differ.");
}

void CheckRsThresholdGiven(const ConfigValue& rollout_rs, const ConfigValue& rollout_rs_threshold) {
  if (!std::holds_alternative<std::monostate>(rollout_rs) &&
      std::holds_alternative<std::monostate>(rollout_rs_threshold))
    throw VerlError("ValueError",
                    "rollout_rs_threshold must be explicitly provided when rollout_rs is enabled. Set "
                    "rollout_rs_threshold to the desired threshold value.");
}

// verl: compute_rollout_correction_and_rejection_mask.
CorrectionResult compute_rollout_correction_and_rejection_mask(const Array& old_log_prob, const Array& rollout_log_prob,
                                                               const Array& mask, const RolloutCorrectionSettings& s) {
  CheckPipelineInputs(old_log_prob, rollout_log_prob, mask);
  // A log-ratio formed here carries the rounding of both log-probs (in epsilons), which
  // for a small difference of large log-probs is far more than its own 1 + |lr|.
  Array lr(mask.shape, mask.dtype), err(mask.shape, mask.dtype);
  // verl subtracts two tensors of the case's dtype: in a float32 case the log-ratio is
  // float32 too, and every IS and RS decision is taken on that rounded value.
  for (int64_t k = 0; k < mask.size(); ++k) {
    lr[k] = TensorScalar(old_log_prob[k] - rollout_log_prob[k], mask.dtype);
    // A difference that fits the dtype is exact in every implementation (0 rounding).
    err[k] = DiffIsExact(old_log_prob[k], rollout_log_prob[k], mask.dtype)
                 ? 0.0
                 : 1.0 + std::fabs(old_log_prob[k]) + std::fabs(rollout_log_prob[k]);
  }
  CorrectionResult out;
  std::map<std::string, double> metrics;
  Array boundary;
  if (!std::holds_alternative<std::monostate>(s.rollout_is) &&
      !std::holds_alternative<std::monostate>(s.rollout_is_threshold)) {
    IsWeightsResult is = compute_rollout_correction_weights(lr, mask, s.rollout_is, s.rollout_is_threshold,
                                                            s.rollout_is_batch_normalize, &err);
    metrics.insert(is.metrics.begin(), is.metrics.end());
    out.rollout_is_weights = std::move(is.weights);
    ElementwiseMax(boundary, is.boundary);
  }
  out.modified_response_mask = mask;
  if (!std::holds_alternative<std::monostate>(s.rollout_rs)) {
    CheckRsThresholdGiven(s.rollout_rs, s.rollout_rs_threshold);
    RejectionResult rs = compute_rollout_rejection_mask(lr, mask, s.rollout_rs, s.rollout_rs_threshold, &err);
    for (const auto& [k, v] : rs.metrics) metrics[k] = v;
    out.modified_response_mask = std::move(rs.modified_response_mask);
    ElementwiseMax(boundary, rs.boundary);
  }
  for (const auto& [k, v] : compute_offpolicy_metrics(old_log_prob, &rollout_log_prob, mask)) metrics[k] = v;
  for (const auto& [k, v] : metrics) out.metrics["rollout_corr/" + k] = v;
  if (!boundary.size()) boundary = Array(mask.shape, mask.dtype);
  out.boundary = std::move(boundary);
  return out;
}

// ------------------------------------------------------------------ bypass_mode loss

void CheckBypassLossType(const std::string& loss_type) {
  if (loss_type != "reinforce" && loss_type != "ppo_clip")
    throw VerlError("ValueError", "Invalid loss_type: " + loss_type + ". Must be 'reinforce' or 'ppo_clip'.");
}

// verl: core_algos.compute_policy_loss_bypass_mode.
PolicyLossResult policy_loss_bypass_mode(const PolicyLossInputs& in, const VanillaConfig& cfg,
                                         const std::string& loss_type, const RolloutCorrectionSettings& settings,
                                         const CorrectionResult* frozen) {
  // The pipeline sees the current policy as "old" and the rollout as "rollout".
  CorrectionResult local;
  if (!frozen)
    local = compute_rollout_correction_and_rejection_mask(in.log_prob, in.old_log_prob, in.response_mask, settings);
  const CorrectionResult& pipe = frozen ? *frozen : local;
  const Array* weights = pipe.rollout_is_weights ? &*pipe.rollout_is_weights : nullptr;
  CheckBypassLossType(loss_type);
  PolicyLossResult out;
  if (loss_type == "reinforce") {
    const PolicyLossInputs eff{in.old_log_prob, in.log_prob, in.advantages, pipe.modified_response_mask, weights};
    out = policy_loss_reinforce(eff, cfg.loss_agg_mode, cfg.global);
  } else {  // ppo_clip
    const PolicyLossInputs eff{in.old_log_prob, in.log_prob, in.advantages, pipe.modified_response_mask, nullptr};
    out = policy_loss_vanilla(eff, cfg);
  }
  // The loss's own fractions count over the tokens rejection sampling kept.
  for (const auto& [k, v] : out.metrics) out.fraction_masks[k] = pipe.modified_response_mask;
  for (const auto& [k, v] : pipe.metrics) out.metrics[k] = v;
  ElementwiseMax(out.boundary, pipe.boundary);
  return out;
}

}  // namespace verlconf::oracle
