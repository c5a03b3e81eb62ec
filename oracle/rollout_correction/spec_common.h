// What the rollout-correction registry entries share (spec.cc, spec_presets.cc,
// spec_bypass_mode.cc): they all run verl's one pipeline, so they read the same five
// config keys, report the same metrics with the same tolerances, and distrust the same
// degenerate goldens.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/core/generate.h"
#include "oracle/policy_loss/vanilla.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::oracle {

inline bool IsNone(const ConfigValue& v) { return std::holds_alternative<std::monostate>(v); }

// The mask checks verl makes before it touches an argument: at the top of the IS / RS
// helpers and the pipeline (every implementation raises the same error).
bool AnyValidToken(const Array& mask);
void RequireValidToken(const Array& mask);

// compute_is_metrics called directly. verl's `rollout_is == "sequence"`: None (absent)
// and anything else are token level.
bool IsSequenceLevel(const Config& c);
// verl's log_ratio_for_metrics comes in two shapes: B x T per token, (B, 1) row sums at
// sequence level, stored under two names. The one the level reads must be there and the
// other must not: a case holding the wrong one is not what the capture writes.
void CheckIsLogRatioInputs(const Case& c);
// Its thresholds, with verl's errors where the upper one is None (after the mask check).
struct IsMetricsThresholds {
  double upper;
  std::optional<double> lower;
};
IsMetricsThresholds ReadIsMetricsThresholds(const Case& c);

// compute_rs_metrics called directly: its arguments, with verl's error where a threshold
// it compares with is None (after the mask check). option: f"rollout_rs_{option_name}"
// reads None as "None"; level None is not "sequence".
struct RsMetricsArgs {
  std::string option;
  std::string level;
  double upper;
  double lower;  // 0 when None and not applied
  bool apply_lower;
};
RsMetricsArgs ReadRsMetricsArgs(const Case& c);

// ---------------------------------------------------------------- config

// The case's five rollout_* keys. An absent key was passed as None (the capture's
// convention: tools/adapters/verl_adapter.py), not as the dataclass default.
RolloutCorrectionSettings ReadRolloutSettings(const Config& c);
// The same five keys as config entries; entry points differ only in rollout_is's
// default.
void AddRolloutSettingsKeys(FunctionSpec& s, const ConfigValue& rollout_is_default, const std::string& rollout_is_doc);

// ---------------------------------------------------------------- metrics

// Every RS option, in kRolloutRsOptions' order.
std::vector<std::string> AllRsOptions();
// Appends the keys a run of the pipeline's stages reports (IS when `is`, RS for each of
// `rs_options` plus the overall fractions when there are any, the off-policy metrics
// when `offpolicy`), each prefixed with `prefix`, to s.metrics, the discrete ones to
// s.discrete_metrics, and the std metrics' tolerances.
// `settings`: the settings a case runs the pipeline with (its IS level says what the
// ratio fractions count, its RS thresholds bound the RS std metrics); null: the case's
// five rollout_* keys (ReadRolloutSettings).
void AddCorrectionMetrics(FunctionSpec& s, const std::string& prefix, bool is,
                          const std::vector<std::string>& rs_options, bool offpolicy,
                          std::function<RolloutCorrectionSettings(const Case&)> settings = nullptr);

// FunctionSpec::counts_rows for the rollout-correction metrics (any prefix): the
// per-sequence ones (`*_seq_fraction_*`, `*_seq_masked_fraction`), an RS option's
// `_fraction_*` where `sequence_rs` says the option compares per-row values, and the IS
// ratio fractions where `sequence_is` says IS compares the rows' log-ratio sums.
void SetCountsRows(FunctionSpec& s, std::function<bool(const Case&)> sequence_is,
                   std::function<bool(const Case&, const std::string& option)> sequence_rs);

// The tolerance override every std metric needs (verl's sqrt(E[x^2] - E[x]^2) cancels),
// for each of `std_metrics` (full keys) in both dtypes.
// `second_moment`: a bound on E[x^2] of the values behind a std metric (full key) for a
// case, where the case's X_mean is not theirs (RS: the mean is of the unclamped
// statistic); nullopt or null: std^2 + mean^2 from the case's metrics.
void AddStdMetricTolerances(
    FunctionSpec& s, const std::vector<std::string>& std_metrics,
    const std::function<std::optional<double>(const Case&, const std::string&)>& second_moment = nullptr);
// The case tolerance of sequence-level IS's rollout_is_max / rollout_is_min (`is`) and of
// chi2_seq (`offpolicy`), with `prefix`: exp of a row's log-ratio sum rounded in the
// case's dtype.
void AddSeqIsExtremeTolerances(FunctionSpec& s, const std::string& prefix,
                               const std::function<RolloutCorrectionSettings(const Case&)>& settings, bool is,
                               bool offpolicy);
// The case tolerance of `*_seq_std` metrics (full keys): the per-row values' own rounding.
void AddSeqStdMetricTolerances(FunctionSpec& s, const std::vector<std::string>& seq_std_metrics);

// ---------------------------------------------------------------- registration

// compute_is_metrics and compute_rs_metrics called directly (spec_metrics.cc);
// AddRolloutCorrectionSpecs adds them.
void AddRolloutMetricsSpecs(std::vector<FunctionSpec>& out);

// ---------------------------------------------------------------- running and packing

// The pipeline on a loss case: `log_prob` is the current policy, `rollout_input` the
// rollout log-probs.
CorrectionResult RunPipelineOnLossCase(const Case& c, const std::string& rollout_input,
                                       const RolloutCorrectionSettings& settings);
// A pipeline result as the registry's Result, the rejected mask named `mask_output`.
Result PackCorrection(CorrectionResult r, const std::string& mask_output);

// ---------------------------------------------------------------- mistrust

// The interface's mistrust rule: every valid token rejected, so agreeing on the result
// proves little. For an entry whose output `mask_output` is the rejected mask:
std::function<std::string(const Case&)> AllRejected(const std::string& mask_output);
// For a loss, which has no output mask: the mask the loss ran on, recomputed from the
// case with `settings` (which may throw: then nothing is distrusted).
std::function<std::string(const Case&)> LossMaskAllRejected(
    const std::string& rollout_input, std::function<RolloutCorrectionSettings(const Config&)> settings);

// ---------------------------------------------------------------- generation

// A case with `current` log-probs, rollout log-probs a RandomLogRatio away from them
// (optionally absent, 20% of the time) and a response mask.
// verl detaches the IS weights (compute_rollout_correction_weights' .detach()) and
// builds every rejection mask from comparisons: no tensor output of the rollout
// correction passes gradient to the training log-prob `input` (log_ratio, or the
// old_log_prob the pipeline and the decoupled presets take). Call after s.outputs.
void DeclareDetachedOutputs(FunctionSpec& s, const std::string& input);

Case NewLogProbPairCase(const GenParams& p, InputGen& g, const std::string& current, bool optional_rollout);

}  // namespace verlconf::oracle
