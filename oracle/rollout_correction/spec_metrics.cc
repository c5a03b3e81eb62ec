// Registry entries for the two metric helpers of verl/trainer/ppo/rollout_corr_helper.py
// called directly (family "rollout_correction"): compute_is_metrics and
// compute_rs_metrics. compute_rollout_correction_weights and
// compute_rollout_rejection_mask call the same oracle code (oracle/rollout_correction/is_weights.cc,
// oracle/rollout_correction/rejection.cc); here the tensors are whatever the case holds.
//
// Config: an absent attribute is None, as the capture passes it. Where verl's signature
// has no default (every argument but rollout_is_threshold_lower), ConfigKey's
// verl_default is None and the doc says "required".
#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/core/sum.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf {
namespace {

const ConfigValue kNone = std::monostate{};

FunctionSpec MetricsHelperSpec(const std::string& verl_function) {
  FunctionSpec s;
  s.name = verl_function;
  s.family = "rollout_correction";
  s.verl_symbol = "verl.trainer.ppo.rollout_corr_helper." + verl_function;
  return s;
}

// ------------------------------------------------------------------ compute_is_metrics

Result RunIsMetrics(const Case& c) {
  oracle::CheckIsLogRatioInputs(c);
  const bool sequence = oracle::IsSequenceLevel(c.config);
  const Array& mask = c.Input("response_mask");
  const oracle::IsMetricsThresholds t = oracle::ReadIsMetricsThresholds(c);
  const ConfigValue level = c.config.Value("rollout_is");
  const auto* level_str = std::get_if<std::string>(&level);
  oracle::MetricsResult r = oracle::compute_is_metrics(c.Input("rollout_is_weights"), c.Input("raw_rollout_is_weights"),
                                                       c.Input(sequence ? "log_ratio_sum" : "log_ratio_for_metrics"),
                                                       mask, level_str ? *level_str : "None", t.upper, t.lower);
  Result out;
  out.metrics = std::move(r.metrics);
  out.boundary = std::move(r.boundary);
  return out;
}

// Weights as the caller builds them from a random log-ratio (raw = exp of the clamped
// log-ratio or row sum, TIS or IcePop on top), a quarter of the time scaled by a random
// factor per token: the helper must not assume where its weights came from.
Case GenerateIsMetrics(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  const Array lr = oracle::RandomLogRatio(g, p.batch, p.tokens, p.dtype);
  const Array mask = g.ResponseMask(p.batch, p.tokens, p.dtype);
  const bool sequence = g.Coin(0.5);
  Array raw = Array::Matrix(p.batch, p.tokens, p.dtype);
  Array sums({p.batch}, p.dtype);
  for (int64_t i = 0; i < p.batch; ++i) {
    oracle::ExactSum s;
    for (int64_t t = 0; t < p.tokens; ++t)
      if (mask.at(i, t) != 0.0) s.Add(lr.at(i, t) * mask.at(i, t));
    sums[i] = s.Value();
  }
  oracle::RoundToDType(sums);
  for (int64_t i = 0; i < p.batch; ++i)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const double l = sequence ? sums[i] : lr.at(i, t);
      raw.at(i, t) =
          std::exp(std::min(std::max(l, -oracle::kRolloutSafetyBound), oracle::kRolloutSafetyBound)) * mask.at(i, t);
    }
  oracle::RoundToDType(raw);
  const bool icepop = g.Coin(0.4);
  static const double uppers[] = {1.25, 1.5, 2.0, 5.0};
  static const double lowers[] = {0.5, 0.8, 0.999};
  const double upper = uppers[g.Int(0, 3)];
  const double lower = lowers[g.Int(0, 2)];
  Array w = raw;
  for (int64_t k = 0; k < w.size(); ++k) {
    if (icepop)
      w[k] = (raw[k] >= lower && raw[k] <= upper) ? raw[k] : 0.0;
    else
      w[k] = std::min(raw[k], upper);
  }
  if (g.Coin(0.25))
    for (double& x : w.data) x *= g.UniformScalar(0.5, 1.5);
  oracle::RoundToDType(w);
  c.inputs["rollout_is_weights"] = w;
  c.inputs["raw_rollout_is_weights"] = raw;
  c.inputs["response_mask"] = mask;
  if (sequence)
    c.inputs["log_ratio_sum"] = sums;
  else
    c.inputs["log_ratio_for_metrics"] = lr;
  c.config.Set("rollout_is", std::string(sequence ? "sequence" : "token"));
  c.config.Set("rollout_is_threshold", upper);
  if (icepop || g.Coin(0.3)) c.config.Set("rollout_is_threshold_lower", icepop ? lower : 1.0 / upper);
  return c;
}

FunctionSpec IsMetricsSpec() {
  FunctionSpec s = MetricsHelperSpec("compute_is_metrics");
  s.inputs = {{"rollout_is_weights", Role::kTokens, false, false, "the applied (truncated) IS weights"},
              {"raw_rollout_is_weights", Role::kTokens, false, false, "the masked weights before TIS / IcePop"},
              {"log_ratio_for_metrics", Role::kTokens, false, /*optional=*/true,
               "rollout_is \"token\": the per-token log-ratio (verl does not read it at token level)"},
              {"log_ratio_sum", Role::kSequences, false, /*optional=*/true,
               "rollout_is \"sequence\": log_ratio_for_metrics, verl's (B, 1) masked row sums, stored as B"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  s.config = {{"rollout_is", "str", kNone, "required: \"sequence\", else token level", {"token", "sequence"}},
              {"rollout_is_threshold", "float", kNone, "required: the upper bound"},
              {"rollout_is_threshold_lower", "float", kNone, "lower bound; None = 1 / rollout_is_threshold"}};
  // Every key compute_is_metrics returns: its callers add oob_ratio and batch_norm_factor.
  for (const auto& n : oracle::IsMetricNames())
    if (n != "rollout_is_oob_ratio" && n != "rollout_is_batch_norm_factor") s.metrics.push_back(n);
  for (const auto& n : oracle::IsDiscreteMetricNames())
    if (n != "rollout_is_oob_ratio") s.discrete_metrics.push_back(n);
  oracle::AddStdMetricTolerances(s, {"rollout_is_std"});
  oracle::AddSeqStdMetricTolerances(s, {"rollout_is_seq_std"});
  oracle::SetCountsRows(
      s,
      [](const Case& c) {
        const ConfigValue level = oracle::RawConfig(c.config, "rollout_is", ConfigValue{});
        const auto* v = std::get_if<std::string>(&level);
        return v && *v == "sequence";
      },
      nullptr);
  s.oracle = RunIsMetrics;
  s.check_config = oracle::CheckIsLogRatioInputs;
  s.generate = GenerateIsMetrics;
  s.notes =
      "compute_is_metrics(rollout_is_weights, raw_rollout_is_weights, log_ratio_for_metrics, response_mask, "
      "rollout_is, rollout_is_threshold, rollout_is_threshold_lower). Lower None = 1 / upper. sequence: max = "
      "exp(min(max(log_ratio_sum), 20)), min = exp(min(log_ratio_sum)), ratio fractions compare the row sums with "
      "float32 log thresholds and average over every row in float32; token: max / min of the applied weights over "
      "valid tokens, ratio fractions from the raw weights over valid tokens. std / ESS use the applied weights "
      "clamped to [0, upper]; seq_* average the per-row means of every row, seq fractions use the raw weights' "
      "row means. ValueError without a valid token; ZeroDivisionError when every applied weight is 0 (ESS).";
  return s;
}

// ------------------------------------------------------------------ compute_rs_metrics

Result RunRsMetrics(const Case& c) {
  const oracle::RsMetricsArgs a = oracle::ReadRsMetricsArgs(c);
  oracle::MetricsResult r =
      oracle::compute_rs_metrics(a.option, c.Input("rs_statistic"), c.Input("response_mask"), c.Input("seq_valid_mask"),
                                 a.level, c.OptionalInput("per_sequence_values"), a.upper, a.lower, a.apply_lower);
  Result out;
  out.metrics = std::move(r.metrics);
  out.boundary = std::move(r.boundary);
  return out;
}

// One of the 11 options' statistics as compute_rollout_rejection_mask builds it (k1 / k2
// / k3 of the clamped log-ratio; sequence options: the row's sum, mean or max broadcast
// along the row, with per_sequence_values), and the thresholds it passes (k1: log bounds,
// lower applied; k2 / k3: the upper bound, lower 0). Sometimes a sequence level without
// per_sequence_values, or a seq_valid_mask that is not the mask's.
Case GenerateRsMetrics(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  const std::string option = oracle::kRolloutRsOptions[g.Int(0, 10)];
  const Array lr = oracle::RandomLogRatio(g, p.batch, p.tokens, p.dtype);
  const Array mask = g.ResponseMask(p.batch, p.tokens, p.dtype);
  const char kind = option.back();
  Array stat = Array::Matrix(p.batch, p.tokens, p.dtype);
  for (int64_t k = 0; k < stat.size(); ++k) {
    const double l = std::min(std::max(lr[k], -oracle::kRolloutSafetyBound), oracle::kRolloutSafetyBound);
    stat[k] = kind == '1' ? -l : kind == '2' ? 0.5 * l * l : std::exp(l) - 1.0 - l;
  }
  oracle::RoundToDType(stat);
  Array valid({p.batch}, p.dtype);
  for (int64_t i = 0; i < p.batch; ++i) {
    double n = 0;
    for (int64_t t = 0; t < p.tokens; ++t) n += mask.at(i, t);
    valid[i] = n > 0 ? 1.0 : 0.0;
    if (g.Coin(0.05)) valid[i] = 1.0 - valid[i];
  }
  const bool token_option = option.rfind("token_", 0) == 0;
  if (!token_option) {
    Array seq({p.batch}, p.dtype);
    for (int64_t i = 0; i < p.batch; ++i) {
      oracle::ExactSum s;
      double n = 0, mx = -INFINITY;
      for (int64_t t = 0; t < p.tokens; ++t) {
        if (mask.at(i, t) == 0.0) continue;
        s.Add(stat.at(i, t));
        n += 1;
        mx = std::max(mx, stat.at(i, t));
      }
      if (option.rfind("seq_sum", 0) == 0)
        seq[i] = s.Value();
      else if (option.rfind("seq_mean", 0) == 0)
        seq[i] = s.Value() / (n + 1e-8);
      else
        seq[i] = n > 0 ? mx : 0.0;
    }
    oracle::RoundToDType(seq);
    for (int64_t i = 0; i < p.batch; ++i)
      for (int64_t t = 0; t < p.tokens; ++t) stat.at(i, t) = seq[i];
    if (g.Coin(0.8)) c.inputs["per_sequence_values"] = seq;
  }
  c.inputs["rs_statistic"] = stat;
  c.inputs["response_mask"] = mask;
  c.inputs["seq_valid_mask"] = valid;
  c.config.Set("option_name", option);
  c.config.Set("level", std::string(token_option && g.Coin(0.9) ? "token" : "sequence"));
  const std::string entry = oracle::RandomRsThresholdEntry(g, option);
  if (kind == '1') {
    const size_t cut = entry.find('_');
    const double hi = std::stod(cut == std::string::npos ? entry : entry.substr(cut + 1));
    const double lo = cut == std::string::npos ? 1.0 / hi : std::stod(entry.substr(0, cut));
    c.config.Set("rollout_rs_threshold", std::log(hi));
    c.config.Set("rollout_rs_threshold_lower", std::log(lo));
    c.config.Set("apply_lower_threshold", int64_t{g.Coin(0.9) ? 1 : 0});
  } else {
    c.config.Set("rollout_rs_threshold", std::stod(entry));
    c.config.Set("rollout_rs_threshold_lower", 0.0);
    c.config.Set("apply_lower_threshold", int64_t{g.Coin(0.1) ? 1 : 0});
  }
  return c;
}

FunctionSpec RsMetricsSpec() {
  FunctionSpec s = MetricsHelperSpec("compute_rs_metrics");
  s.inputs = {{"rs_statistic", Role::kTokens, false, false, "the per-token statistic (sequence options: broadcast)"},
              {"response_mask", Role::kTokens, /*is_mask=*/true},
              {"seq_valid_mask", Role::kSequences, /*is_mask=*/true, false,
               "verl's boolean row mask (rows with a valid token), stored as 0/1"},
              {"per_sequence_values", Role::kSequences, false, /*optional=*/true,
               "one value per row; None: the per-row masked means of rs_statistic"}};
  s.config = {{"option_name", "str", kNone, "required: the metric prefix rollout_rs_<option_name>_ (any string)"},
              {"level", "str", kNone, "required: \"sequence\", else token level", {"token", "sequence"}},
              {"rollout_rs_threshold", "float", kNone, "required: the upper threshold"},
              {"rollout_rs_threshold_lower", "float", kNone, "required: the lower threshold (used only when applied)"},
              {"apply_lower_threshold", "bool", kNone, "required: report values below the lower threshold"}};
  // The keys carry the option name; "<option>" stands for it.
  s.metrics = oracle::RsMetricsNames("<option>");
  std::vector<std::string> stds, seq_stds;
  for (const auto& o : oracle::AllRsOptions()) {
    for (const auto& n : oracle::RsMetricsDiscreteNames(o)) s.discrete_metrics.push_back(n);
    stds.push_back("rollout_rs_" + o + "_std");
    seq_stds.push_back("rollout_rs_" + o + "_seq_std");
  }
  oracle::AddSeqStdMetricTolerances(s, seq_stds);
  // verl clamps the statistic to [lower if applied else 0, upper] before the std.
  oracle::AddStdMetricTolerances(s, stds, [](const Case& c, const std::string&) -> std::optional<double> {
    try {
      const std::optional<double> hi = c.config.OptionalDouble("rollout_rs_threshold");
      const std::optional<double> lo = c.config.OptionalDouble("rollout_rs_threshold_lower");
      if (!hi) return std::nullopt;
      const bool apply = c.config.OptionalBool("apply_lower_threshold").value_or(false);
      const double m = std::max(std::fabs(*hi), apply && lo ? std::fabs(*lo) : 0.0);
      return m * m;
    } catch (const std::exception&) {
      return std::nullopt;  // a config verl refuses
    }
  });
  // The option name is any string here; the level key says what the fractions count.
  oracle::SetCountsRows(s, nullptr, [](const Case& c, const std::string&) {
    const ConfigValue level = oracle::RawConfig(c.config, "level", ConfigValue{});
    const auto* v = std::get_if<std::string>(&level);
    return v && *v == "sequence";
  });
  s.oracle = RunRsMetrics;
  s.generate = GenerateRsMetrics;
  s.notes =
      "compute_rs_metrics(option_name, rs_statistic, response_mask, seq_valid_mask, *, level, "
      "per_sequence_values, rollout_rs_threshold, rollout_rs_threshold_lower, apply_lower_threshold); keys "
      "rollout_rs_<option_name>_*. Row values: per_sequence_values, or the masked row means of rs_statistic; the "
      "rows counted are those seq_valid_mask selects. level \"sequence\" with a valid row: max / min / fractions "
      "over the valid rows' values (float32 means), else over valid tokens. std: of rs_statistic clamped to "
      "[lower if applied else 0, upper]. seq_fraction_low only with apply_lower_threshold, but every seq_* key "
      "(seq_fraction_low = 0 included) is 0 when no row is valid. Discrete metrics are listed for the 11 "
      "rollout_rs options' names. ValueError without a valid token.";
  return s;
}

}  // namespace

namespace oracle {
void AddRolloutMetricsSpecs(std::vector<FunctionSpec>& out) {
  out.push_back(IsMetricsSpec());
  out.push_back(RsMetricsSpec());
}
}  // namespace oracle

}  // namespace verlconf
