#include "oracle/rollout_correction/spec_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "oracle/core/errors.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/internal.h"

namespace verlconf::oracle {

bool AnyValidToken(const Array& mask) {
  for (double v : mask.data)
    if (v != 0.0) return true;
  return false;
}

void RequireValidToken(const Array& mask) {
  if (!AnyValidToken(mask)) rollout_internal::NoValidToken();
}

bool IsSequenceLevel(const Config& c) {
  const ConfigValue v = c.Value("rollout_is");
  const auto* s = std::get_if<std::string>(&v);
  return s && *s == "sequence";
}

void CheckIsLogRatioInputs(const Case& c) {
  const bool sequence = IsSequenceLevel(c.config);
  const std::string want = sequence ? "log_ratio_sum" : "log_ratio_for_metrics";
  const std::string other = sequence ? "log_ratio_for_metrics" : "log_ratio_sum";
  const std::string level = sequence ? "\"sequence\"" : "\"token\"";
  if (!c.OptionalInput(want))
    throw BadInput(c.Where() + ": inputs/" + want + ": missing (rollout_is " + level +
                   " passes it as log_ratio_for_metrics)");
  if (c.OptionalInput(other))
    throw BadInput(c.Where() + ": inputs/" + other + ": present, but rollout_is " + level + " passes inputs/" + want +
                   " as log_ratio_for_metrics");
}

IsMetricsThresholds ReadIsMetricsThresholds(const Case& c) {
  const std::optional<double> upper = c.config.OptionalDouble("rollout_is_threshold");
  const std::optional<double> lower = c.config.OptionalDouble("rollout_is_threshold_lower");
  if (!upper) {
    RequireValidToken(c.Input("response_mask"));
    if (!lower) throw VerlError("TypeError", "unsupported operand type(s) for /: 'float' and 'NoneType'");
    throw VerlError("RuntimeError", "Could not infer dtype of NoneType");  // torch.tensor(None)
  }
  return {*upper, lower};
}

RsMetricsArgs ReadRsMetricsArgs(const Case& c) {
  const std::optional<double> upper = c.config.OptionalDouble("rollout_rs_threshold");
  const std::optional<double> lower = c.config.OptionalDouble("rollout_rs_threshold_lower");
  const bool apply_lower = c.config.OptionalBool("apply_lower_threshold").value_or(false);  // None is falsy
  // A None threshold reaches a tensor comparison (the fractions) after the mask check.
  if (!upper || (apply_lower && !lower)) {
    RequireValidToken(c.Input("response_mask"));
    throw VerlError("TypeError", std::string("'") + (upper ? "<" : ">") +
                                     "' not supported between instances of 'Tensor' and 'NoneType'");
  }
  const ConfigValue level = c.config.Value("level");
  const auto* level_str = std::get_if<std::string>(&level);
  return {PyStr(c.config.Value("option_name")), level_str ? *level_str : "None", *upper, lower.value_or(0.0),
          apply_lower};
}

// ------------------------------------------------------------------ config

RolloutCorrectionSettings ReadRolloutSettings(const Config& c) {
  RolloutCorrectionSettings s;
  s.rollout_is = c.Value("rollout_is");
  s.rollout_is_threshold = c.Value("rollout_is_threshold");
  s.rollout_is_batch_normalize = c.Bool("rollout_is_batch_normalize");
  s.rollout_rs = c.Value("rollout_rs");
  s.rollout_rs_threshold = c.Value("rollout_rs_threshold");
  return s;
}

void AddRolloutSettingsKeys(FunctionSpec& s, const ConfigValue& rollout_is_default, const std::string& rollout_is_doc) {
  // An absent rollout-correction key is None (as the capture passes it): None disables
  // IS, and verl's default then does not apply.
  s.config.push_back({"rollout_is",
                      "str",
                      rollout_is_default,
                      rollout_is_doc,
                      {"token", "sequence"},
                      /*absent_is_none=*/!IsNone(rollout_is_default)});
  s.config.push_back({"rollout_is_threshold",
                      "float|str",
                      2.0,
                      "TIS number or IcePop \"lower_upper\"; None disables IS",
                      {},
                      /*absent_is_none=*/true});
  s.config.push_back({"rollout_is_batch_normalize", "bool", int64_t{0}, "normalise the IS weights to mean 1"});
  s.config.push_back({"rollout_rs", "str", None(), "None (no RS) or RS options, comma separated"});
  s.config.push_back({"rollout_rs_threshold", "float|str", None(), "required when rollout_rs is set (ValueError)"});
}

// ------------------------------------------------------------------ metrics

std::vector<std::string> AllRsOptions() { return {std::begin(kRolloutRsOptions), std::end(kRolloutRsOptions)}; }

// verl's std metrics are sqrt(E[x^2] - E[x]^2): where the values hardly spread the
// subtraction cancels. float32: the rounding of E[x^2] (~1e-7 of it) is all that is left,
// ~sqrt(eps32 * E[x^2]) in the std. float64: the sums follow torch's order (TorchCpuSum),
// but torch's vectorised exp differs from libm's in the last bit for a few percent of
// arguments; the subtraction turns that into an error of the variance of about
// rtol * E[x^2], i.e. rtol * E[x^2] / (2 std) in the std (or sqrt(rtol * E[x^2]) when
// the spread is below it). E[x^2] = std^2 + mean^2 comes from the case's own X_mean and
// X_std, so a well-spread metric keeps the default bound and only a cancelling one
// gets more.
void AddStdMetricTolerances(FunctionSpec& s, const std::vector<std::string>& std_metrics) {
  std::set<std::string> fields;
  for (const auto& m : std_metrics) {
    s.tolerances.push_back({"metrics/" + m, DType::kFloat32, 3.1e-5, 2e-3,
                            "float32 sqrt(E[x^2] - E[x]^2) cancels for a small spread: the rounding of E[x^2] "
                            "becomes ~sqrt(eps32 * E[x^2]) in the std"});
    fields.insert("metrics/" + m);
  }
  auto previous = s.case_tolerance;
  s.case_tolerance = [fields, previous](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    if (c.dtype != DType::kFloat64 || !fields.count(field)) return previous ? previous(c, field) : std::nullopt;
    const std::string name = field.substr(std::string("metrics/").size());
    const auto sd = c.metrics.find(name);
    const auto mean = c.metrics.find(name.substr(0, name.size() - 3) + "mean");  // X_std -> X_mean
    if (sd == c.metrics.end() || mean == c.metrics.end() || !std::isfinite(sd->second) || !std::isfinite(mean->second))
      return std::nullopt;
    const Tolerance d = DefaultTolerance(DType::kFloat64);
    const double dvar = d.rtol * (sd->second * sd->second + mean->second * mean->second);
    const double dstd = sd->second > 0 ? std::min(dvar / (2.0 * sd->second), std::sqrt(dvar)) : std::sqrt(dvar);
    char why[160];
    std::snprintf(why, sizeof why,
                  "sqrt(E[x^2] - E[x]^2) cancels: variance error rtol*E[x^2] = %.3g, so %.3g in the std", dvar, dstd);
    return Tolerance{d.rtol, d.atol + dstd, why};
  };
}

void AddCorrectionMetrics(FunctionSpec& s, const std::string& prefix, bool is,
                          const std::vector<std::string>& rs_options, bool offpolicy) {
  std::vector<std::string> names, discrete, stds;
  auto append = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  if (is) {
    append(names, IsMetricNames());
    append(discrete, IsDiscreteMetricNames());
    stds.push_back("rollout_is_std");
  }
  for (const auto& o : rs_options) {
    append(names, RsOptionMetricNames(o));
    append(discrete, RsOptionDiscreteMetricNames(o));
    stds.push_back("rollout_rs_" + o + "_std");
  }
  if (!rs_options.empty()) {
    append(names, {std::begin(kRsOverallMetrics), std::end(kRsOverallMetrics)});
    append(discrete, {std::begin(kRsOverallMetrics), std::end(kRsOverallMetrics)});
  }
  if (offpolicy) append(names, OffpolicyMetricNames());
  for (auto* list : {&names, &discrete, &stds})
    for (auto& n : *list) n = prefix + n;
  append(s.metrics, names);
  append(s.discrete_metrics, discrete);
  AddStdMetricTolerances(s, stds);
}

// ------------------------------------------------------------------ running and packing

CorrectionResult RunPipelineOnLossCase(const Case& c, const std::string& rollout_input,
                                       const RolloutCorrectionSettings& settings) {
  return compute_rollout_correction_and_rejection_mask(c.Input("log_prob"), c.Input(rollout_input),
                                                       c.Input("response_mask"), settings);
}

Result PackCorrection(CorrectionResult r, const std::string& mask_output) {
  Result out;
  if (r.rollout_is_weights) out.outputs["rollout_is_weights"] = std::move(*r.rollout_is_weights);
  out.outputs[mask_output] = std::move(r.modified_response_mask);
  out.metrics = std::move(r.metrics);
  out.boundary = std::move(r.boundary);
  return out;
}

// ------------------------------------------------------------------ mistrust

std::function<std::string(const Case&)> AllRejected(const std::string& mask_output) {
  return [mask_output](const Case& golden) -> std::string {
    auto out = golden.outputs.find(mask_output);
    const Array* in = golden.OptionalInput("response_mask");
    if (out == golden.outputs.end() || !in) return "";
    for (double v : out->second.data)
      if (v != 0.0) return "";
    for (double v : in->data)
      if (v != 0.0)
        return "every valid token was rejected: the output mask is all zero, so agreeing on it proves little";
    return "";
  };
}

std::function<std::string(const Case&)> LossMaskAllRejected(
    const std::string& rollout_input, std::function<RolloutCorrectionSettings(const Config&)> settings) {
  return [rollout_input, settings = std::move(settings)](const Case& golden) -> std::string {
    try {
      const CorrectionResult r = RunPipelineOnLossCase(golden, rollout_input, settings(golden.config));
      for (double v : r.modified_response_mask.data)
        if (v != 0.0) return "";
      return "every valid token was rejected: the loss ran on an all-zero mask, so agreeing on it proves little";
    } catch (const std::exception&) {
      return "";
    }
  };
}

// ------------------------------------------------------------------ generation

Case NewLogProbPairCase(const GenParams& p, InputGen& g, const std::string& current, bool optional_rollout) {
  Case c = NewGeneratedCase(p);
  const Array cur = g.LogProbs(p.batch, p.tokens, p.dtype);
  const Array lr = RandomLogRatio(g, p.batch, p.tokens, p.dtype);
  Array rollout = cur;
  // Clamped below 0: a log-prob must stay a log-prob.
  for (int64_t k = 0; k < rollout.size(); ++k) rollout[k] = std::min(cur[k] - lr[k], -1e-4);
  RoundToDType(rollout);
  c.inputs[current] = cur;
  if (!optional_rollout || g.Coin(0.8)) c.inputs["rollout_log_prob"] = rollout;
  c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  return c;
}

void DeclareDetachedOutputs(FunctionSpec& s, const std::string& input) {
  s.vjp_inputs = {input};
  s.vjp_zero_outputs.clear();
  for (const OutputSpec& o : s.outputs)
    if (o.kind == OutputKind::kTensor) s.vjp_zero_outputs.push_back(o.name);
}

}  // namespace verlconf::oracle
