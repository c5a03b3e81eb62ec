#include "oracle/rollout_correction/spec_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
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

namespace {

// `rule` becomes the case tolerance of `fields`; every other field keeps the one the spec
// had (several rules stack on one spec, each for its own metrics).
void AddCaseToleranceRule(FunctionSpec& s, std::set<std::string> fields,
                          std::function<std::optional<Tolerance>(const Case&, const std::string&)> rule) {
  s.case_tolerance = [fields = std::move(fields), rule = std::move(rule), previous = s.case_tolerance](
                         const Case& c, const std::string& field) -> std::optional<Tolerance> {
    if (!fields.count(field)) return previous ? previous(c, field) : std::nullopt;
    return rule(c, field);
  };
}

}  // namespace

// verl's std metrics are sqrt(E[x^2] - E[x]^2): where the values hardly spread the
// subtraction cancels, and what is left of the variance is the rounding of the two means,
// at most about f * eps * E[x^2] with f = 2 ceil(log2 N) + 8 for masked means of N terms
// (a pairwise sum's ceil(log2 N) ulps of the sum of |terms| in each mean, a few more for
// the squares, the division and the subtraction). In the std that is f eps E[x^2] /
// (2 std), or sqrt(f eps E[x^2]) when the spread is below it. float64: the sums follow
// torch's order (TorchCpuSum), but torch's vectorised exp differs from libm's in the last
// bit for a few percent of arguments, so the same bound with rtol in place of f eps.
// E[x^2] is `second_moment`'s bound for the case, or std^2 + mean^2 from the case's own
// X_std and X_mean; a well-spread metric keeps the default bound and only a cancelling
// one gets more. The float32 table entry stays as a floor.
void AddStdMetricTolerances(
    FunctionSpec& s, const std::vector<std::string>& std_metrics,
    const std::function<std::optional<double>(const Case&, const std::string&)>& second_moment) {
  std::set<std::string> fields;
  for (const auto& m : std_metrics) {
    s.tolerances.push_back({"metrics/" + m, DType::kFloat32, 3.1e-5, 2e-3,
                            "float32 sqrt(E[x^2] - E[x]^2) cancels for a small spread: the rounding of E[x^2] "
                            "becomes ~sqrt(eps32 * E[x^2]) in the std"});
    fields.insert("metrics/" + m);
  }
  AddCaseToleranceRule(s, fields, [second_moment](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    const std::string name = field.substr(std::string("metrics/").size());
    const auto sd = c.metrics.find(name);
    const auto mean = c.metrics.find(name.substr(0, name.size() - 3) + "mean");  // X_std -> X_mean
    if (sd == c.metrics.end() || !std::isfinite(sd->second)) return std::nullopt;
    std::optional<double> e2 = second_moment ? second_moment(c, name) : std::nullopt;
    if (!e2) {
      if (mean == c.metrics.end() || !std::isfinite(mean->second)) return std::nullopt;
      e2 = sd->second * sd->second + mean->second * mean->second;
    }
    const bool f32 = c.dtype == DType::kFloat32;
    const Tolerance d = DefaultTolerance(c.dtype);
    int64_t n = 1;
    for (const auto& [in, x] : c.inputs) n = std::max<int64_t>(n, x.size());
    const double f = 2.0 * std::ceil(std::log2(static_cast<double>(std::max<int64_t>(n, 2)))) + 8.0;
    const double dvar = (f32 ? f * kEps32 : d.rtol) * *e2;
    const double dstd = sd->second > 0 ? std::min(dvar / (2.0 * sd->second), std::sqrt(dvar)) : std::sqrt(dvar);
    char why[200];
    std::snprintf(why, sizeof why,
                  "sqrt(E[x^2] - E[x]^2) cancels: E[x^2] <= %.3g, variance rounding %.3g, so %.3g in the std", *e2,
                  dvar, dstd);
    if (f32) return Tolerance{3.1e-5, std::max(2e-3, dstd), why};
    return Tolerance{d.rtol, d.atol + dstd, why};
  });
}

// The std of per-row values (`*_seq_std`, torch's std of the row statistics): each row's
// value is a float sum or mean of up to T terms of one sign (IS weights, k2, k3), good to
// (ceil(log2 T) + 8) eps of itself, and a std moves by at most sqrt(n / (n - 1)) <= sqrt(2)
// times the largest such error: an absolute allowance from the case's own X_seq_max and
// X_seq_min. Past the clamp (k3 ~ 2.4e8 per row) that is float rounding of values whose
// spread is far below their size: verl's float32 std of equal values is not 0.
void AddSeqStdMetricTolerances(FunctionSpec& s, const std::vector<std::string>& seq_std_metrics) {
  std::set<std::string> fields;
  for (const auto& m : seq_std_metrics) fields.insert("metrics/" + m);
  AddCaseToleranceRule(s, fields, [](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    const std::string name = field.substr(std::string("metrics/").size());
    const std::string stem = name.substr(0, name.size() - 4);  // X_seq_std -> X_seq
    const auto hi = c.metrics.find(stem + "_max"), lo = c.metrics.find(stem + "_min");
    if (hi == c.metrics.end() || lo == c.metrics.end()) return std::nullopt;
    const double size = std::max(std::fabs(hi->second), std::fabs(lo->second));
    if (!std::isfinite(size) || size == 0.0) return std::nullopt;
    int64_t t = 1;
    for (const auto& [in, x] : c.inputs)
      if (x.shape.size() == 2) t = std::max<int64_t>(t, x.cols());
    const double eps = c.dtype == DType::kFloat32 ? kEps32 : kEps64;
    const double per_row = SumRoundingEps(t) * eps * size;
    const double extra = std::sqrt(2.0) * per_row;
    const Tolerance d = DefaultTolerance(c.dtype);
    char why[200];
    std::snprintf(why, sizeof why,
                  "std of per-row values up to %.3g, each a sum of up to %lld terms rounded in the case's dtype: "
                  "atol + %.3g",
                  size, static_cast<long long>(t), extra);
    return Tolerance{d.rtol, d.atol + extra, why};
  });
}

void SetCountsRows(FunctionSpec& s, std::function<bool(const Case&)> sequence_is,
                   std::function<bool(const Case&, const std::string& option)> sequence_rs) {
  s.counts_rows = [sequence_is = std::move(sequence_is), sequence_rs = std::move(sequence_rs)](
                      const Case& c, const std::string& metric) {
    const std::string m = metric.substr(metric.rfind('/') == std::string::npos ? 0 : metric.rfind('/') + 1);
    auto ends = [&](const std::string& tail) {
      return m.size() >= tail.size() && m.compare(m.size() - tail.size(), tail.size(), tail) == 0;
    };
    // verl: (seq_values_valid > thr).float().mean() and friends, one entry per row.
    if (ends("_seq_fraction_high") || ends("_seq_fraction_low") || ends("_seq_masked_fraction")) return true;
    if (m == "rollout_is_ratio_fraction_high" || m == "rollout_is_ratio_fraction_low")
      return sequence_is && sequence_is(c);
    const std::string rs = "rollout_rs_";
    for (const std::string tail : {"_fraction_high", "_fraction_low"})
      if (m.rfind(rs, 0) == 0 && ends(tail) && m.size() > rs.size() + tail.size())
        return sequence_rs && sequence_rs(c, m.substr(rs.size(), m.size() - rs.size() - tail.size()));
    return false;
  };
}

namespace {

// The largest |value| an RS option's std metric sees: verl clamps the statistic to
// [lower, upper] (k1: the log bounds) or [0, upper] before the std. None where the
// case's settings do not parse (verl raises there anyway).
std::optional<double> RsClampBound(const RolloutCorrectionSettings& st, const std::string& option) {
  try {
    for (const auto& [o, th] : ParseRolloutRsArguments(st.rollout_rs, st.rollout_rs_threshold)) {
      if (o != option) continue;
      if (rollout_internal::EndsWith(o, "k1")) {
        const double hi = std::log(th.upper), lo = th.lower ? std::log(*th.lower) : -hi;
        return std::max(std::fabs(hi), std::fabs(lo));
      }
      return th.upper;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

void AddCorrectionMetrics(FunctionSpec& s, const std::string& prefix, bool is,
                          const std::vector<std::string>& rs_options, bool offpolicy,
                          std::function<RolloutCorrectionSettings(const Case&)> settings) {
  if (!settings) {
    // The case's rollout_* keys among those the spec declares (an undeclared one is None),
    // read as verl sees them whether or not the config was resolved against the spec: an
    // absent key is the spec's default, or None where the capture passes None.
    std::map<std::string, ConfigValue> keys;
    for (const ConfigKey& k : s.config) keys[k.name] = k.absent_is_none ? ConfigValue{} : k.verl_default;
    settings = [keys](const Case& c) {
      auto get = [&](const char* name) {
        auto it = keys.find(name);
        return it == keys.end() ? ConfigValue{} : RawConfig(c.config, name, it->second);
      };
      RolloutCorrectionSettings st;
      st.rollout_is = get("rollout_is");
      st.rollout_is_threshold = get("rollout_is_threshold");
      st.rollout_rs = get("rollout_rs");
      st.rollout_rs_threshold = get("rollout_rs_threshold");
      return st;
    };
  }
  // The RS options named seq_* compare one value per row (verl's level "sequence").
  SetCountsRows(
      s,
      [settings](const Case& c) {
        try {
          const ConfigValue level = settings(c).rollout_is;
          const auto* v = std::get_if<std::string>(&level);
          return v && *v == "sequence";
        } catch (const std::exception&) {
          return false;  // a config verl refuses: no fraction to judge
        }
      },
      [](const Case&, const std::string& option) { return option.rfind("seq_", 0) == 0; });
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
  std::vector<std::string> seq_stds;
  for (const auto& n : names)
    if (rollout_internal::EndsWith(n, "_seq_std")) seq_stds.push_back(n);
  for (auto* list : {&names, &discrete, &stds, &seq_stds})
    for (auto& n : *list) n = prefix + n;
  append(s.metrics, names);
  append(s.discrete_metrics, discrete);
  const std::string rs_prefix = prefix + "rollout_rs_";
  AddStdMetricTolerances(s, stds,
                         [settings, rs_prefix](const Case& c, const std::string& name) -> std::optional<double> {
                           if (name.rfind(rs_prefix, 0) != 0) return std::nullopt;  // IS: std^2 + mean^2 is exact
                           const std::string option = name.substr(rs_prefix.size(), name.size() - rs_prefix.size() - 4);
                           std::optional<double> bound;
                           try {
                             bound = RsClampBound(settings(c), option);
                           } catch (const std::exception&) {
                           }
                           if (!bound) return std::nullopt;
                           return *bound * *bound;
                         });
  AddSeqStdMetricTolerances(s, seq_stds);
  if (is || offpolicy) AddSeqIsExtremeTolerances(s, prefix, settings, is, offpolicy);
}

// Sequence-level IS: the weights are exp of a row's log-ratio sum, which verl sums in the
// case's dtype. That sum is good to (ceil(log2 T) + 8) eps times the row's sum of
// |log-ratio|, and exp turns an absolute error of the sum into the same relative error of
// each weight, so of rollout_is_max / _min and the weights' means: the rtol grows by it
// (float32 rows of ~1000 tokens of stale log-ratios: ~3e-5). The log-ratios come from the
// case's inputs, and the tolerance from the case alone.
// chi2_seq is the mean over rows of exp(2 * clamp(sum, +-20)) less 1: twice the sum's
// error, relative to chi2_seq + 1, as an absolute allowance.
void AddSeqIsExtremeTolerances(FunctionSpec& s, const std::string& prefix,
                               const std::function<RolloutCorrectionSettings(const Case&)>& settings, bool is,
                               bool offpolicy) {
  std::set<std::string> fields;
  // The weight-valued IS metrics move with every row's weight; the ESS,
  // (mean + 1e-8)^2 / E[w^2], by up to twice as much where the 1e-8 is not negligible
  // (weights near exp(-20)).
  const std::string ess = "metrics/" + prefix + "rollout_is_eff_sample_size";
  if (is)
    for (const char* m : {"rollout_is_max", "rollout_is_min", "rollout_is_mean", "rollout_is_seq_mean",
                          "rollout_is_seq_max", "rollout_is_seq_min", "rollout_is_eff_sample_size"})
      fields.insert("metrics/" + prefix + m);
  const std::string chi2 = "metrics/" + prefix + "chi2_seq";
  if (offpolicy) fields.insert(chi2);
  AddCaseToleranceRule(
      s, fields, [settings, chi2, ess](const Case& c, const std::string& field) -> std::optional<Tolerance> {
        if (field != chi2) try {
            const ConfigValue level = settings(c).rollout_is;
            const auto* v = std::get_if<std::string>(&level);
            if (!v || *v != "sequence") return std::nullopt;
          } catch (const std::exception&) {
            return std::nullopt;
          }
        const Array* mask = c.OptionalInput("response_mask");
        if (!mask || mask->shape.size() != 2) return std::nullopt;
        // Every log-ratio the case's inputs can make: log_ratio itself, or a log-prob minus the
        // rollout's; the largest row sum of |.| over them bounds the one verl took.
        std::vector<Array> ratios;
        if (const Array* lr = c.OptionalInput("log_ratio")) ratios.push_back(*lr);
        if (const Array* r = c.OptionalInput("rollout_log_prob"))
          for (const char* name : {"old_log_prob", "log_prob"})
            if (const Array* x = c.OptionalInput(name); x && x->shape == r->shape) {
              Array d = *x;
              for (int64_t k = 0; k < d.size(); ++k) d[k] -= (*r)[k];
              ratios.push_back(std::move(d));
            }
        double worst = 0;
        for (const Array& lr : ratios) {
          if (lr.shape != mask->shape) continue;
          for (int64_t i = 0; i < mask->rows(); ++i) {
            double row = 0;
            for (int64_t t = 0; t < mask->cols(); ++t)
              if (mask->at(i, t) != 0.0) row += std::fabs(lr.at(i, t));
            worst = std::max(worst, row);
          }
        }
        if (!(worst > 0) || !std::isfinite(worst)) return std::nullopt;
        const double eps = c.dtype == DType::kFloat32 ? kEps32 : kEps64;
        const double extra = SumRoundingEps(mask->cols()) * eps * worst;
        const Tolerance d = DefaultTolerance(c.dtype);
        char why[200];
        std::snprintf(why, sizeof why,
                      "exp of a row's log-ratio sum (sum of |log-ratio| up to %.3g, %lld tokens) rounded in the case's "
                      "dtype: %s + %.3g",
                      worst, static_cast<long long>(mask->cols()), field == chi2 ? "atol" : "rtol", extra);
        if (field == chi2) {
          const auto want = c.metrics.find(field.substr(std::string("metrics/").size()));
          if (want == c.metrics.end() || !std::isfinite(want->second)) return std::nullopt;
          return Tolerance{d.rtol, d.atol + 2.0 * extra * (std::fabs(want->second) + 1.0), why};
        }
        return Tolerance{d.rtol + (field == ess ? 2.0 : 1.0) * extra, d.atol, why};
      });
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
