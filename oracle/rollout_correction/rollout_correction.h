// Rollout correction of verl 0.9.1 (verl/trainer/ppo/rollout_corr_helper.py), float64:
// importance-sampling weights (TIS / IcePop, token or sequence level), rejection
// sampling by divergence statistics (the 11 options and comma chains), the off-policy
// diagnostics, the combined pipeline, and the bypass_mode policy loss
// (core_algos.compute_policy_loss_bypass_mode) built on it.
//
// Conventions shared by everything here:
//  - thresholds arrive as verl receives them: a number (double, or a Python int as
//    int64) or a string ("2.0", "0.5_2.0", "0.999_1.001,0.01"); std::monostate is None;
//  - errors verl raises are VerlError with verl's exception type;
//  - every function also returns Result::boundary material: a B x T array that is 1
//    where a discrete decision (keep / reject, inside / outside the IcePop band, a
//    fraction's comparison) sits within rounding of its threshold in the inputs' dtype.
//
// Implemented one role per file: thresholds.cc (Python number text, the threshold
// parsers, config checks), is_weights.cc (IS weights), rejection.cc (rejection),
// pipeline.cc (off-policy metrics, the pipeline, bypass_mode), reductions.cc (torch's
// dtype and summation rules the metrics follow) and generate.cc (random inputs).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/generate.h"
#include "oracle/core/tensor.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::oracle {

// rollout_corr_helper.SAFETY_BOUND: log-ratios (and their row sums) are clamped to
// [-20, 20] before exp.
inline constexpr double kRolloutSafetyBound = 20.0;

// rollout_corr_helper.SUPPORTED_ROLLOUT_RS_OPTIONS, in a fixed order.
inline constexpr const char* kRolloutRsOptions[] = {"token_k1",    "token_k2",   "token_k3",    "seq_sum_k1",
                                                    "seq_sum_k2",  "seq_sum_k3", "seq_mean_k1", "seq_mean_k2",
                                                    "seq_mean_k3", "seq_max_k2", "seq_max_k3"};
bool IsRolloutRsOption(const std::string& name);

// torch's CPU float64 sum of a contiguous tensor, single-threaded, in its own order
// (SumKernel.cpp's cascade over 4-wide vectors), bit for bit. Only where verl's formula
// cancels catastrophically (its std metrics, sqrt(E[x^2] - E[x]^2)) does the order of a
// float64 sum decide more than the last bits, and only there is it used.
double TorchCpuSum(const std::vector<double>& x);

// ---------------------------------------------------------------- Python number text

// Python's float(str): surrounding whitespace, an optional sign, digits with single
// underscores between them, "inf" / "infinity" / "nan" in any case. nullopt where
// Python raises ValueError.
std::optional<double> PyFloatFromString(const std::string& s);
// Python's repr(float) (= str(float) = f"{x}"): the shortest round-tripping digits,
// fixed notation for exponents in [-5, 16) with a ".0" on integers, else "1e-05" style.
std::string PyFloatRepr(double x);
// f"{v}" / str(v) of a config value: an int64 in decimal, a double as PyFloatRepr, a
// string as itself, None as "None".
std::string PyStr(const ConfigValue& v);

// ---------------------------------------------------------------- threshold parsers

// verl: rollout_corr_helper._parse_rollout_is_threshold. A number is a TIS upper bound;
// a string is stripped, and "lower_upper" (split at the first '_') is an IcePop band,
// anything else a float-like upper bound. ValueError on an empty or non-numeric string,
// a non-positive bound, lower > upper; TypeError on None.
struct IsThreshold {
  double upper = 2.0;
  std::optional<double> lower;  // set: IcePop
};
IsThreshold ParseRolloutIsThreshold(const ConfigValue& spec);

// The option list of a rollout_rs string: split at ',', stripped, empty parts dropped,
// duplicates dropped keeping the first. ValueError when nothing is left or an option is
// not one of kRolloutRsOptions.
std::vector<std::string> ParseRolloutRsOptions(const std::string& rollout_rs);

// verl: rollout_corr_helper._parse_rollout_rs_thresholds. One entry per option, in
// order. k1 options: "lower_upper" ratio bounds, or one number u meaning [1/u, u]
// (Python's str(1.0 / u) round trip; u == 0 raises ZeroDivisionError); k2 / k3 options:
// a single positive upper bound, '_' rejected. ValueError on None, on a count that is
// neither 1 nor len(options), on non-numbers, non-positive bounds, lower > upper.
struct RsThreshold {
  std::optional<double> lower;  // k1 only
  double upper = 0.0;
};
std::vector<std::pair<std::string, RsThreshold>> ParseRolloutRsThresholds(const std::vector<std::string>& options,
                                                                          const ConfigValue& spec);
// How many comma-separated entries a rollout_rs_threshold has (1 for a number); 0 for
// None. For coverage labels; never throws.
int CountRsThresholdEntries(const ConfigValue& spec);

// ---------------------------------------------------------------- argument checks
// Each of verl's refusals once, raised by the oracle and by every CUDA entry at the same
// point of the same function.

// compute_rollout_correction_weights' arguments, in verl's order: the level ("token" /
// "sequence", else ValueError naming the value), then the threshold
// (ParseRolloutIsThreshold).
struct IsArguments {
  bool sequence = false;
  IsThreshold threshold;
};
IsArguments ParseRolloutIsArguments(const ConfigValue& rollout_is, const ConfigValue& threshold);

// compute_rollout_rejection_mask's arguments, in verl's order: rollout_rs a string and its
// threshold given (ValueError), then the options and their thresholds.
std::vector<std::pair<std::string, RsThreshold>> ParseRolloutRsArguments(const ConfigValue& rollout_rs,
                                                                         const ConfigValue& threshold);

// compute_is_metrics' lower ratio bound: the IcePop one, else Python's
// `1.0 / rollout_is_threshold` (ZeroDivisionError for an upper of 0).
double IsMetricsLowerBound(double upper_py, std::optional<double> lower);

// compute_offpolicy_metrics' assertion of a valid token (AssertionError).
void CheckOffpolicyMask(const Array& mask);

// compute_rs_metrics called directly: seq_valid_mask must have one entry per
// per-sequence value (BadInput: no case the capture writes).
void CheckRsMetricsRows(size_t seq_valid_rows, size_t seq_value_rows);

// The pipeline's checks before it computes anything: a valid token, then equal shapes.
void CheckPipelineInputs(const Array& old_log_prob, const Array& rollout_log_prob, const Array& mask);

// The pipeline's refusal of rollout_rs without a threshold, after the IS stage and before
// the rejection's own checks (ValueError).
void CheckRsThresholdGiven(const ConfigValue& rollout_rs, const ConfigValue& rollout_rs_threshold);

// ---------------------------------------------------------------- functions

// Per-token absolute error of the log-ratio in units of the dtype's epsilon (how far
// the caller's own float arithmetic may have moved it). Null: 1 + |log_ratio|.
using LogRatioError = const Array*;

struct IsWeightsResult {
  Array weights;  // B x T, zero on padding
  std::map<std::string, double> metrics;
  Array boundary;
};
// verl: compute_rollout_correction_weights (+ compute_is_metrics, non-distributed).
//   token:    w = exp(clamp(lr, +-20)) * mask
//   sequence: w = exp(clamp(sum_t mask*lr, +-20)) * mask   (one value per row)
//   TIS:      w = min(w, upper);  IcePop: w = 0 outside [lower, upper]
//   batch normalisation (after the metrics): w / mean, the mean over valid tokens
//   (token) or over the per-row means of rows with a valid token (sequence), applied
//   only when the mean exceeds 1e-8.
// ValueError for a rollout_is other than "token" / "sequence", a bad threshold, or a
// mask without a valid token.
IsWeightsResult compute_rollout_correction_weights(const Array& log_ratio, const Array& response_mask,
                                                   const ConfigValue& rollout_is, const ConfigValue& threshold,
                                                   bool batch_normalize, LogRatioError lr_err = nullptr);

struct RejectionResult {
  Array modified_response_mask;  // response_mask * (product of every option's keep mask)
  std::map<std::string, double> metrics;
  Array boundary;
};
// verl: compute_rollout_rejection_mask (+ compute_rs_metrics). With lr = clamp(lr, +-20):
// k1 = -lr, k2 = lr^2 / 2, k3 = exp(lr) - 1 - lr, per token or per row (masked sum,
// masked mean, max over valid tokens with 0 for an empty row). k1 keeps
// log(lower) <= stat <= log(upper); k2 / k3 keep stat <= upper.
RejectionResult compute_rollout_rejection_mask(const Array& log_ratio, const Array& response_mask,
                                               const ConfigValue& rollout_rs, const ConfigValue& threshold,
                                               LogRatioError lr_err = nullptr);

// What a metrics-only helper returns: verl's dict, and the boundary material (B x T)
// for its fractions.
struct MetricsResult {
  std::map<std::string, double> metrics;
  Array boundary;
};

// verl: compute_is_metrics, called directly (compute_rollout_correction_weights calls the
// same code). The weights are any B x T arrays: nothing assumes they came from
// `log_ratio_for_metrics`. rollout_is "sequence" reads log_ratio_for_metrics as verl's
// (B, 1) row sums (any shape: its elements are what counts): max / min in log space
// (max clamped at +20 before exp) and ratio fractions against float32 log thresholds,
// over its elements, reduced in float32; any other rollout_is is the token branch,
// which does not read it and takes the ratio fractions from the raw weights over valid
// tokens. A lower threshold of nullopt is verl's None: 1 / upper (ZeroDivisionError for
// an upper of 0). ValueError on a mask without a valid token; ZeroDivisionError when
// every applied weight of a valid token is 0 (verl's `1.0 / ...item()` for the ESS).
MetricsResult compute_is_metrics(const Array& rollout_is_weights, const Array& raw_rollout_is_weights,
                                 const Array& log_ratio_for_metrics, const Array& response_mask,
                                 const std::string& rollout_is, double rollout_is_threshold,
                                 std::optional<double> rollout_is_threshold_lower = std::nullopt);

// verl: compute_rs_metrics, called directly (compute_rollout_rejection_mask calls the
// same code once per option). Keys "rollout_rs_<option_name>_*". `seq_valid_mask` (B)
// is verl's boolean row mask (non-zero = True); `per_sequence_values` (B) null = verl's
// None: the per-row masked means of rs_statistic. level "sequence" takes max / min and
// the fractions over the valid rows' values when there is one; anything else, over valid
// tokens. Thresholds are Python floats, compared in the tensors' dtype. ValueError on a
// mask without a valid token.
MetricsResult compute_rs_metrics(const std::string& option_name, const Array& rs_statistic, const Array& response_mask,
                                 const Array& seq_valid_mask, const std::string& level,
                                 const Array* per_sequence_values, double rollout_rs_threshold,
                                 double rollout_rs_threshold_lower, bool apply_lower_threshold);
// The keys compute_rs_metrics reports for `option_name` (seq_fraction_low included: it
// is there with apply_lower_threshold or when no sequence is valid), and the fractions
// among them.
std::vector<std::string> RsMetricsNames(const std::string& option_name);
std::vector<std::string> RsMetricsDiscreteNames(const std::string& option_name);

// verl: compute_offpolicy_metrics (keys without prefix). AssertionError on a mask
// without a valid token.
std::map<std::string, double> compute_offpolicy_metrics(const Array& old_log_prob, const Array* rollout_log_prob,
                                                        const Array& response_mask);

// The rollout-correction part of a RolloutCorrectionConfig, as the pipeline reads it.
// monostate = None.
struct RolloutCorrectionSettings {
  ConfigValue rollout_is;                  // None, "token", "sequence"
  ConfigValue rollout_is_threshold = 2.0;  // None disables IS
  bool rollout_is_batch_normalize = false;
  ConfigValue rollout_rs;            // None disables RS
  ConfigValue rollout_rs_threshold;  // required when rollout_rs is set
};

struct CorrectionResult {
  std::optional<Array> rollout_is_weights;  // when IS is on
  Array modified_response_mask;
  std::map<std::string, double> metrics;  // "rollout_corr/..."
  Array boundary;
};
// verl: compute_rollout_correction_and_rejection_mask. log_ratio = old - rollout; IS
// when rollout_is and its threshold are both set; RS when rollout_rs is set (ValueError
// if its threshold is None); off-policy metrics always; every key prefixed
// "rollout_corr/". ValueError on a mask without a valid token.
CorrectionResult compute_rollout_correction_and_rejection_mask(const Array& old_log_prob, const Array& rollout_log_prob,
                                                               const Array& response_mask,
                                                               const RolloutCorrectionSettings& settings);

// verl: compute_policy_loss_bypass_mode. in.old_log_prob holds the rollout log-probs.
// Under no_grad the pipeline runs with (log_prob, old_log_prob) as (current, rollout);
// then loss_type "ppo_clip" is compute_policy_loss_vanilla without IS weights on the
// modified mask, "reinforce" compute_policy_loss_reinforce with the pipeline's IS
// weights on it; metrics are the loss's plus the pipeline's. in.rollout_is_weights is
// ignored (as verl ignores its argument). ValueError on any other loss_type (after the
// pipeline ran). `frozen`: take weights and mask from there instead (the detached
// values at another point, for the stop-gradient objective).
// bypass_mode's loss_type, once the pipeline has run: "reinforce" or "ppo_clip", else
// ValueError.
void CheckBypassLossType(const std::string& loss_type);
PolicyLossResult policy_loss_bypass_mode(const PolicyLossInputs& in, const VanillaConfig& cfg,
                                         const std::string& loss_type, const RolloutCorrectionSettings& settings,
                                         const CorrectionResult* frozen = nullptr);

// ---------------------------------------------------------------- config checks

// The config key whose value verl refuses before it looks at any tensor, with verl's
// error ("ValueError: ..."); an empty key when verl accepts the settings. For
// FunctionSpec::check_config: a case claiming a result for such a config is no file verl
// produced.
struct ConfigRefusal {
  std::string key;
  std::string error;
};
// As compute_rollout_correction_weights: rollout_is, then rollout_is_threshold.
ConfigRefusal CheckIsConfig(const ConfigValue& rollout_is, const ConfigValue& threshold);
// As compute_rollout_rejection_mask: rollout_rs, its threshold's presence, the options,
// then rollout_rs_threshold.
ConfigRefusal CheckRsConfig(const ConfigValue& rollout_rs, const ConfigValue& threshold);
// As compute_rollout_correction_and_rejection_mask: each stage that is on.
ConfigRefusal CheckPipelineConfig(const RolloutCorrectionSettings& s);

// Throws BadInput naming the case, `case_key` (default: r.key), its value and verl's
// error, when r refuses; returns otherwise.
void ThrowIfRefused(const Case& c, const ConfigRefusal& r, const std::string& case_key = "");

// ---------------------------------------------------------------- names

// Keys compute_is_metrics and compute_rollout_correction_weights may report.
std::vector<std::string> IsMetricNames();
std::vector<std::string> IsDiscreteMetricNames();
// Keys compute_rollout_rejection_mask may report for one option (k1 options add
// seq_fraction_low), and the two overall fractions.
std::vector<std::string> RsOptionMetricNames(const std::string& option);
std::vector<std::string> RsOptionDiscreteMetricNames(const std::string& option);
inline const char* const kRsOverallMetrics[] = {"rollout_rs_masked_fraction", "rollout_rs_seq_masked_fraction"};
// compute_offpolicy_metrics' keys; with_rollout: also those needing rollout log-probs.
std::vector<std::string> OffpolicyMetricNames(bool with_rollout = true);

// ---------------------------------------------------------------- config and inputs

// A config value as verl sees it: the case's attribute, or `verl_default` when the
// attribute is absent (a None attribute reads as absent: the file cannot tell them apart).
ConfigValue RawConfig(const Config& c, const std::string& key, const ConfigValue& verl_default);

// Random log-ratios shaped like training: small (bf16 mismatch, sd ~1e-2), stale
// (sd 0.5-3), or mixed; a few exact zeros (identical tokens) so thresholds at ratio 1
// are hit exactly.
Array RandomLogRatio(InputGen& g, int64_t b, int64_t t, DType d);
// A random valid rollout_is_threshold: a TIS number or float-like string, or an IcePop
// "lower_upper" string (when icepop).
ConfigValue RandomIsThreshold(InputGen& g, bool icepop);
// A random valid threshold entry for one RS option (a string or, for a whole spec with
// one entry, a number).
std::string RandomRsThresholdEntry(InputGen& g, const std::string& option);

}  // namespace verlconf::oracle
