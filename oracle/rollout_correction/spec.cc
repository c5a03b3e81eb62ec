// Registry entries for verl/trainer/ppo/rollout_corr_helper.py (family
// "rollout_correction"): IS weights, rejection sampling (the chained entry point and one
// entry per option of verl's rs_options list), the off-policy metrics, and the combined
// pipeline. Interface: docs/rollout-correction-interface.md; math:
// oracle/rollout_correction/rollout_correction.h.
//
// Config: an absent attribute is None, as the capture passes it (tools/adapters/
// verl_adapter.py: "a config key absent from a case was passed as None"); ConfigKey's
// verl_default documents verl's own default, which a case gets by storing it.
#include "oracle/rollout_correction/spec.h"

#include <algorithm>

#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf {
namespace {

using oracle::IsNone;

const ConfigValue kNone = std::monostate{};

// A variant label must not throw on a malformed value: it only describes the case.
bool LabelBool(const Config& c, const std::string& key) {
  try {
    return c.Bool(key);
  } catch (const BadInput&) {
    return false;
  }
}

const char* const kThresholdType = "float|str";

// An entry for a function of rollout_corr_helper, named after it.
FunctionSpec HelperSpec(const std::string& verl_function) {
  FunctionSpec s;
  s.name = verl_function;
  s.family = "rollout_correction";
  s.verl_symbol = "verl.trainer.ppo.rollout_corr_helper." + verl_function;
  return s;
}

// The IS and RS entries' inputs, and the start of their random cases.
std::vector<InputSpec> LogRatioInputs() {
  return {{"log_ratio", Role::kTokens, false, false, "log pi_train - log pi_rollout", /*decides=*/true},
          {"response_mask", Role::kTokens, /*is_mask=*/true}};
}

Case NewLogRatioCase(const GenParams& p, oracle::InputGen& g) {
  Case c = oracle::NewGeneratedCase(p);
  c.inputs["log_ratio"] = oracle::RandomLogRatio(g, p.batch, p.tokens, p.dtype);
  c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  return c;
}

// ------------------------------------------------------------------ IS weights

Case GenerateWeights(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = NewLogRatioCase(p, g);
  c.config.Set("rollout_is", std::string(g.Coin(0.5) ? "token" : "sequence"));
  c.config.Set("rollout_is_threshold", oracle::RandomIsThreshold(g, g.Coin(0.4)));
  if (g.Coin(0.6)) c.config.Set("rollout_is_batch_normalize", int64_t{g.Coin(0.5) ? 1 : 0});
  return c;
}

std::vector<std::string> WeightsVariants(const Case& c) {
  std::vector<std::string> v;
  const ConfigValue level = c.config.Value("rollout_is");
  if (const auto* s = std::get_if<std::string>(&level))
    if (*s == "token" || *s == "sequence") v.push_back("rollout_is=" + *s);
  const ConfigValue th = c.config.Value("rollout_is_threshold");
  const auto* s = std::get_if<std::string>(&th);
  if (!IsNone(th)) v.push_back(s && s->find('_') != std::string::npos ? "icepop" : "tis");
  if (LabelBool(c.config, "rollout_is_batch_normalize")) v.push_back("batch_normalize");
  return v;
}

FunctionSpec Weights() {
  FunctionSpec s = HelperSpec("compute_rollout_correction_weights");
  s.inputs = LogRatioInputs();
  // Absent = None, as the capture passes it (None level or threshold: no weights).
  s.config = {{"rollout_is",
               "str",
               std::string("token"),
               "IS level: token or sequence",
               {"token", "sequence"},
               /*absent_is_none=*/true},
              {"rollout_is_threshold",
               kThresholdType,
               2.0,
               "a number or float-like string: TIS upper bound; \"lower_upper\": IcePop band",
               {},
               /*absent_is_none=*/true},
              {"rollout_is_batch_normalize", "bool", int64_t{0}, "normalise the weights to mean 1 (non-distributed)"}};
  s.outputs = {{"rollout_is_weights"}};
  oracle::DeclareDetachedOutputs(s, "log_ratio");
  oracle::AddCorrectionMetrics(s, "", /*is=*/true, {}, /*offpolicy=*/false);
  s.oracle = [](const Case& c) {
    oracle::IsWeightsResult r = oracle::compute_rollout_correction_weights(
        c.Input("log_ratio"), c.Input("response_mask"), c.config.Value("rollout_is"),
        c.config.Value("rollout_is_threshold"), c.config.Bool("rollout_is_batch_normalize"));
    Result out;
    out.outputs["rollout_is_weights"] = std::move(r.weights);
    out.metrics = std::move(r.metrics);
    out.boundary = std::move(r.boundary);
    return out;
  };
  s.check_config = [](const Case& c) {
    oracle::ThrowIfRefused(c,
                           oracle::CheckIsConfig(c.config.Value("rollout_is"), c.config.Value("rollout_is_threshold")));
  };
  s.generate = GenerateWeights;
  s.variants = WeightsVariants;
  s.required_variants = {"rollout_is=token", "rollout_is=sequence", "tis", "icepop", "batch_normalize"};
  s.notes =
      "token: exp(clamp(lr, +-20)) * mask; sequence: exp(clamp(masked row sum, +-20)) on the row. TIS clamps at the "
      "upper bound, IcePop zeroes weights outside [lower, upper]. Metrics (compute_is_metrics) come before batch "
      "normalisation; token-level ratio fractions use the raw weights, sequence-level ones compare the unclamped log "
      "sums of every row (padding-only rows: 0) with float32 log thresholds and reduce in float32; seq_* metrics "
      "average the per-row means of every row. Batch normalisation is the non-distributed path.";
  return s;
}

// ------------------------------------------------------------------ rejection sampling

// A random chain of one to three options with a valid threshold spec: one entry per
// option, or a single shared number (>= 1, so that k1 options get a valid [1/u, u]).
void SetRandomRs(oracle::InputGen& g, Config& cfg, const std::string& rs_key, const std::string& threshold_key) {
  const int n = static_cast<int>(g.Int(1, 3));
  std::vector<std::string> options;
  std::string chain;
  for (int k = 0; k < n; ++k) {
    const std::string o = oracle::kRolloutRsOptions[g.Int(0, 10)];
    options.push_back(o);
    chain += (k ? (g.Coin(0.5) ? "," : " , ") : "") + o;
  }
  if (g.Coin(0.1)) chain += ",";  // an empty part, dropped by verl
  cfg.Set(rs_key, chain);
  std::vector<std::string> distinct;
  for (const auto& o : options)
    if (std::find(distinct.begin(), distinct.end(), o) == distinct.end()) distinct.push_back(o);
  if (distinct.size() == 1 || g.Coin(0.6)) {
    if (distinct.size() == 1 && g.Coin(0.3) && distinct[0].back() != '1') {
      cfg.Set(threshold_key, g.Coin(0.5) ? 0.05 : 2.0);
      return;
    }
    std::string spec;
    for (size_t k = 0; k < distinct.size(); ++k)
      spec += (k ? "," : "") + oracle::RandomRsThresholdEntry(g, distinct[k]);
    cfg.Set(threshold_key, spec);
  } else {
    static const double shared[] = {1.5, 2.0, 3.0};
    const double v = shared[g.Int(0, 2)];
    if (g.Coin(0.5))
      cfg.Set(threshold_key, v);
    else
      cfg.Set(threshold_key, oracle::PyFloatRepr(v));
  }
}

Case GenerateRejection(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = NewLogRatioCase(p, g);
  SetRandomRs(g, c.config, "rollout_rs", "rollout_rs_threshold");
  return c;
}

std::vector<std::string> RejectionVariants(const Case& c) {
  std::vector<std::string> v;
  const ConfigValue rs = c.config.Value("rollout_rs");
  const auto* s = std::get_if<std::string>(&rs);
  if (!s) return v;
  std::vector<std::string> options;
  try {
    options = oracle::ParseRolloutRsOptions(*s);
  } catch (const std::exception&) {
    return v;
  }
  if (options.size() >= 2) v.push_back("chain");
  const int entries = oracle::CountRsThresholdEntries(c.config.Value("rollout_rs_threshold"));
  if (options.size() >= 2 && entries == static_cast<int>(options.size())) v.push_back("per_option_thresholds");
  return v;
}

Result RunRejection(const Case& c, const ConfigValue& rollout_rs) {
  oracle::RejectionResult r = oracle::compute_rollout_rejection_mask(
      c.Input("log_ratio"), c.Input("response_mask"), rollout_rs, c.config.Value("rollout_rs_threshold"));
  Result out;
  out.outputs["modified_response_mask"] = std::move(r.modified_response_mask);
  out.metrics = std::move(r.metrics);
  out.boundary = std::move(r.boundary);
  return out;
}

const char* const kRsNotes =
    "lr = clamp(log_ratio, +-20); k1 = -lr, k2 = lr^2/2, k3 = exp(lr) - 1 - lr, per token or per row (masked sum, "
    "masked mean, max over valid tokens with 0 for an empty row). k1 keeps log(lower) <= stat <= log(upper): the "
    "ratio bounds act on -log r, i.e. on pi_rollout / pi_train. k2/k3 keep stat <= upper. The mask is "
    "response_mask times the product of the options' keep masks. Sequence-level fraction metrics and the overall "
    "seq fraction are float32 means; the overall seq fraction averages over every row, the per-option one over "
    "rows with a valid token.";

FunctionSpec RejectionBase(const std::string& name) {
  FunctionSpec s = HelperSpec("compute_rollout_rejection_mask");
  s.name = name;
  s.inputs = LogRatioInputs();
  s.outputs = {{"modified_response_mask", OutputKind::kTensor, /*discrete=*/true}};
  oracle::DeclareDetachedOutputs(s, "log_ratio");
  s.mistrust = oracle::AllRejected("modified_response_mask");
  return s;
}

FunctionSpec Rejection() {
  FunctionSpec s = RejectionBase("compute_rollout_rejection_mask");
  s.config = {{"rollout_rs",
               "str",
               std::string("token_k1"),
               "options, comma separated (chained: all must pass)",
               {},
               /*absent_is_none=*/true},
              {"rollout_rs_threshold", kThresholdType, kNone,
               "one entry per option or one shared; k1: \"lower_upper\" or u = [1/u, u]; None: ValueError"}};
  oracle::AddCorrectionMetrics(s, "", /*is=*/false, oracle::AllRsOptions(), /*offpolicy=*/false);
  s.oracle = [](const Case& c) { return RunRejection(c, c.config.Value("rollout_rs")); };
  s.check_config = [](const Case& c) {
    oracle::ThrowIfRefused(c,
                           oracle::CheckRsConfig(c.config.Value("rollout_rs"), c.config.Value("rollout_rs_threshold")));
  };
  s.generate = GenerateRejection;
  s.variants = RejectionVariants;
  s.required_variants = {"chain", "per_option_thresholds"};
  s.notes = kRsNotes;
  return s;
}

// One entry per name of verl's rs_options list: compute_rollout_rejection_mask with
// rollout_rs set to that option.
FunctionSpec RejectionOption(const std::string& option) {
  FunctionSpec s = RejectionBase(option);
  s.config = {{"rollout_rs_threshold", kThresholdType, kNone,
               option.back() == '1' ? "\"lower_upper\" ratio bounds, or u = [1/u, u]" : "upper bound (no '_')"}};
  oracle::AddCorrectionMetrics(s, "", /*is=*/false, {option}, /*offpolicy=*/false, [option](const Case& c) {
    oracle::RolloutCorrectionSettings st;
    st.rollout_rs = option;
    st.rollout_rs_threshold = oracle::RawConfig(c.config, "rollout_rs_threshold", ConfigValue{});
    return st;
  });
  s.oracle = [option](const Case& c) { return RunRejection(c, option); };
  s.check_config = [option](const Case& c) {
    oracle::ThrowIfRefused(c, oracle::CheckRsConfig(option, c.config.Value("rollout_rs_threshold")));
  };
  s.generate = [option](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = NewLogRatioCase(p, g);
    const std::string entry = oracle::RandomRsThresholdEntry(g, option);
    if (g.Coin(0.3) && entry.find('_') == std::string::npos)
      c.config.Set("rollout_rs_threshold", std::stod(entry));
    else
      c.config.Set("rollout_rs_threshold", entry);
    return c;
  };
  s.notes = std::string("compute_rollout_rejection_mask(rollout_rs=\"") + option + "\"). " + kRsNotes;
  return s;
}

// ------------------------------------------------------------------ off-policy metrics

Case GenerateLogProbPair(const GenParams& p, const std::string& current, bool optional_rollout) {
  oracle::InputGen g(p.seed);
  return oracle::NewLogProbPairCase(p, g, current, optional_rollout);
}

std::vector<std::string> Prefixed(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back("rollout_corr/" + n);
  return out;
}

// chi2_seq exponentiates each row's log-ratio sum, whose rounding in the case's dtype
// verl's own pipeline metrics are allowed (AddSeqIsExtremeTolerances); called directly the
// metric rounds the same way. Nothing else here depends on an IS setting.
void AddChi2SeqTolerance(FunctionSpec& s, const std::string& prefix) {
  oracle::AddSeqIsExtremeTolerances(
      s, prefix, [](const Case&) { return oracle::RolloutCorrectionSettings{}; }, /*is=*/false, /*offpolicy=*/true);
}

FunctionSpec Offpolicy() {
  FunctionSpec s = HelperSpec("compute_offpolicy_metrics");
  s.inputs = {{"old_log_prob", Role::kTokens, false, false, "training-policy log-probs", /*decides=*/true},
              {"rollout_log_prob", Role::kTokens, false, /*optional=*/true, "rollout-policy log-probs"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  s.metrics = oracle::OffpolicyMetricNames();
  s.oracle = [](const Case& c) {
    Result out;
    out.metrics = oracle::compute_offpolicy_metrics(c.Input("old_log_prob"), c.OptionalInput("rollout_log_prob"),
                                                    c.Input("response_mask"));
    return out;
  };
  s.generate = [](const GenParams& p) { return GenerateLogProbPair(p, "old_log_prob", true); };
  AddChi2SeqTolerance(s, "");
  s.notes =
      "PPLs: per-row masked means (padding-only rows: 0, so ppl 1) averaged over every row; kl = "
      "masked_mean(rollout - old); k3_kl uses the unclamped exp; chi2_token / chi2_seq clamp the log-ratio "
      "(row sum) to +-20. AssertionError when the mask has no valid token.";
  return s;
}

FunctionSpec MetricsFromLogprobs() {
  FunctionSpec s = HelperSpec("compute_rollout_corr_metrics_from_logprobs");
  s.inputs = {{"log_prob", Role::kTokens, false, false, "current-policy log-probs", /*decides=*/true},
              {"rollout_log_prob", Role::kTokens},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  s.metrics = Prefixed(oracle::OffpolicyMetricNames());
  s.oracle = [](const Case& c) {
    Result out;
    for (const auto& [k, v] :
         oracle::compute_offpolicy_metrics(c.Input("log_prob"), &c.Input("rollout_log_prob"), c.Input("response_mask")))
      out.metrics["rollout_corr/" + k] = v;
    return out;
  };
  s.generate = [](const GenParams& p) { return GenerateLogProbPair(p, "log_prob", false); };
  AddChi2SeqTolerance(s, "rollout_corr/");
  s.notes = "compute_offpolicy_metrics(log_prob, rollout_log_prob, mask) with every key prefixed rollout_corr/.";
  return s;
}

// ------------------------------------------------------------------ pipeline

FunctionSpec Pipeline() {
  FunctionSpec s = HelperSpec("compute_rollout_correction_and_rejection_mask");
  s.inputs = {{"old_log_prob", Role::kTokens, false, false, "training-policy log-probs", /*decides=*/true},
              {"rollout_log_prob", Role::kTokens, false, false, "rollout-policy log-probs"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  oracle::AddRolloutSettingsKeys(s, kNone, "None (no IS), token or sequence");
  s.outputs = {{"rollout_is_weights"}, {"modified_response_mask", OutputKind::kTensor, /*discrete=*/true}};
  oracle::DeclareDetachedOutputs(s, "old_log_prob");
  oracle::AddCorrectionMetrics(s, "rollout_corr/", /*is=*/true, oracle::AllRsOptions(), /*offpolicy=*/true);
  s.oracle = [](const Case& c) {
    return oracle::PackCorrection(oracle::compute_rollout_correction_and_rejection_mask(
                                      c.Input("old_log_prob"), c.Input("rollout_log_prob"), c.Input("response_mask"),
                                      oracle::ReadRolloutSettings(c.config)),
                                  "modified_response_mask");
  };
  s.check_config = [](const Case& c) {
    oracle::ThrowIfRefused(c, oracle::CheckPipelineConfig(oracle::ReadRolloutSettings(c.config)));
  };
  // IS is always on in generated cases: generators_test requires every declared output,
  // and rollout_is_weights exists only with IS. The RS-only and neither variants are
  // covered by the property tests and the goldens.
  s.generate = [](const GenParams& p) {
    Case c = GenerateLogProbPair(p, "old_log_prob", false);
    oracle::InputGen g(p.seed ^ 0x9e3779b97f4a7c15ULL);
    c.config.Set("rollout_is", std::string(g.Coin(0.5) ? "token" : "sequence"));
    c.config.Set("rollout_is_threshold", oracle::RandomIsThreshold(g, g.Coin(0.3)));
    if (g.Coin(0.3)) c.config.Set("rollout_is_batch_normalize", int64_t{1});
    if (g.Coin(0.6)) SetRandomRs(g, c.config, "rollout_rs", "rollout_rs_threshold");
    return c;
  };
  s.variants = [](const Case& c) -> std::vector<std::string> {
    const bool is = !IsNone(c.config.Value("rollout_is")) && !IsNone(c.config.Value("rollout_is_threshold"));
    const bool rs = !IsNone(c.config.Value("rollout_rs"));
    return {is && rs ? "is_and_rs" : is ? "is_only" : rs ? "rs_only" : "neither"};
  };
  s.required_variants = {"is_and_rs", "is_only", "rs_only", "neither"};
  s.mistrust = oracle::AllRejected("modified_response_mask");
  s.notes =
      "log_ratio = old - rollout; IS (compute_rollout_correction_weights) when rollout_is and its threshold are "
      "set, RS (compute_rollout_rejection_mask) when rollout_rs is set, off-policy metrics always, keys "
      "prefixed rollout_corr/. rollout_is_weights is returned only with IS. ValueError on a mask without a "
      "valid token.";
  return s;
}

}  // namespace

void AddRolloutCorrectionSpecs(std::vector<FunctionSpec>& out) {
  out.push_back(Weights());
  out.push_back(Rejection());
  for (const char* o : oracle::kRolloutRsOptions) out.push_back(RejectionOption(o));
  oracle::AddRolloutMetricsSpecs(out);
  out.push_back(Offpolicy());
  out.push_back(MetricsFromLogprobs());
  out.push_back(Pipeline());
}

}  // namespace verlconf
