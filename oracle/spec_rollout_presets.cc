// Registry entries for the 19 RolloutCorrectionConfig factories (family
// "rollout_correction", named after the classmethods). A case carries the factory's
// keyword arguments (absent = the factory default). Decoupled presets and `disabled`
// run compute_rollout_correction_and_add_to_batch (the pipeline, then response_mask
// replaced by the rejected one and rollout_is_weights added when IS is on); bypass
// presets run apply_bypass_mode (old log-probs := rollout log-probs, loss_mode
// bypass_mode) and then the bypass_mode loss with the preset's config, as the actor
// does. Table: oracle/rollout_presets.cc; math: oracle/rollout_correction.cc.
#include <iterator>
#include <tuple>

#include "oracle/errors.h"
#include "oracle/generate.h"
#include "oracle/registry.h"
#include "oracle/rollout_correction.h"
#include "oracle/rollout_presets.h"
#include "oracle/spec_util.h"

namespace verlconf {
namespace {

using oracle::RolloutPreset;

bool IsNone(const ConfigValue& v) { return std::holds_alternative<std::monostate>(v); }

std::vector<std::string> Prefixed(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back("rollout_corr/" + n);
  return out;
}

// The metric keys (and the discrete ones) the pipeline reports for a config.
void PipelineMetricNames(const oracle::RolloutCorrectionFields& f, std::vector<std::string>& names,
                         std::vector<std::string>& discrete, std::vector<std::string>& stds) {
  if (!IsNone(f.rollout_is) && !IsNone(f.rollout_is_threshold)) {
    for (const auto& m : oracle::IsMetricNames()) names.push_back("rollout_corr/" + m);
    for (const auto& m : oracle::IsDiscreteMetricNames()) discrete.push_back("rollout_corr/" + m);
    stds.push_back("rollout_corr/rollout_is_std");
  }
  if (const auto* rs = std::get_if<std::string>(&f.rollout_rs)) {
    for (const auto& o : oracle::ParseRolloutRsOptions(*rs)) {
      for (const auto& m : oracle::RsOptionMetricNames(o)) names.push_back("rollout_corr/" + m);
      for (const auto& m : oracle::RsOptionDiscreteMetricNames(o)) discrete.push_back("rollout_corr/" + m);
      stds.push_back("rollout_corr/rollout_rs_" + o + "_std");
    }
    for (const char* m : oracle::kRsOverallMetrics) {
      names.push_back(std::string("rollout_corr/") + m);
      discrete.push_back(std::string("rollout_corr/") + m);
    }
  }
  for (const auto& m : Prefixed(oracle::OffpolicyMetricNames())) names.push_back(m);
}

// verl's std metrics are sqrt(E[x^2] - E[x]^2): where the clamped values hardly spread
// the subtraction cancels. float32: the rounding of E[x^2] (~1e-7 of it) is all that is
// left, ~sqrt(eps32 * E[x^2]) in the std. float64: the sums follow torch's order
// (TorchCpuSum), but torch's vectorised exp differs from libm's in the last bit for a few
// percent of arguments, which the cancellation amplifies to ~1e-7 relative.
void AddStdTolerances(FunctionSpec& s, const std::vector<std::string>& std_metrics) {
  for (const auto& m : std_metrics) {
    s.tolerances.push_back({"metrics/" + m, DType::kFloat32, 3.1e-5, 2e-3,
                            "float32 sqrt(E[x^2] - E[x]^2) cancels for a small spread: the rounding of E[x^2] "
                            "becomes ~sqrt(eps32 * E[x^2]) in the std"});
    s.tolerances.push_back({"metrics/" + m, DType::kFloat64, 1e-5, 1e-9,
                            "sqrt(E[x^2] - E[x]^2) cancels for a small spread and amplifies torch's last-bit exp "
                            "differences from libm (a few percent of arguments) to ~1e-7 relative"});
  }
}

// A random value for a factory keyword, valid for that factory (and sometimes absent).
void SetRandomKwargs(oracle::InputGen& g, const RolloutPreset& preset, Config& cfg) {
  for (const auto& k : preset.kwargs) {
    if (g.Coin(0.4)) continue;  // the factory default
    if (k.name == "threshold") {
      static const double v[] = {1.5, 2.0, 3.0, 5.0};
      cfg.Set(k.name, v[g.Int(0, 3)]);
    } else if (k.name == "threshold_lower") {
      static const double v[] = {0.2, 0.5, 0.8, 1.0};
      cfg.Set(k.name, v[g.Int(0, 3)]);
    } else if (k.name == "is_threshold") {
      cfg.Set(k.name, g.Coin(0.5) ? 2.0 : g.UniformScalar(1.1, 5.0));
    } else if (k.name == "rs_threshold") {
      const oracle::RolloutCorrectionFields defaults = oracle::ExpandPresetDefaults(preset);
      const auto* rs = std::get_if<std::string>(&defaults.rollout_rs);
      const std::string option = rs ? *rs : "seq_mean_k1";
      if (k.type == "float") {
        static const double v[] = {0.001, 0.01, 0.05, 0.2};
        cfg.Set(k.name, v[g.Int(0, 3)]);
      } else {
        cfg.Set(k.name, oracle::RandomRsThresholdEntry(g, option));
      }
    }
  }
}

void AddKwargKeys(FunctionSpec& s, const RolloutPreset& p) {
  for (const auto& k : p.kwargs)
    s.config.push_back({k.name, k.type, k.default_value, "keyword argument of RolloutCorrectionConfig." + p.name});
}

std::string Describe(const oracle::RolloutCorrectionFields& f) {
  std::string out;
  for (const auto& [k, v] : f.AsConfig()) {
    const std::string text = std::holds_alternative<std::string>(v) ? "\"" + std::get<std::string>(v) + "\"" : oracle::PyStr(v);
    out += (out.empty() ? "" : ", ") + k + "=" + text;
  }
  return out;
}

// The keyword argument a refused config field came from (the case stores kwargs, not
// the fields).
std::string KwargOf(const RolloutPreset& p, const std::string& field) {
  for (const auto& k : p.kwargs) {
    if (field == "rollout_rs_threshold" && k.name == "rs_threshold") return k.name;
    if (field == "rollout_is_threshold" && (k.name == "threshold" || k.name == "is_threshold")) return k.name;
  }
  return p.kwargs.empty() ? field : p.kwargs.front().name;
}

void CheckPreset(const RolloutPreset& p, const Case& c) {
  const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(p, c.config);
  const oracle::ConfigRefusal r = oracle::CheckPipelineConfig(f.Settings());
  oracle::ThrowIfRefused(c, r, r.key.empty() ? "" : KwargOf(p, r.key));
}

// ------------------------------------------------------------------ decoupled presets

FunctionSpec Decoupled(const RolloutPreset& preset) {
  const oracle::RolloutCorrectionFields defaults = oracle::ExpandPresetDefaults(preset);
  FunctionSpec s;
  s.name = preset.name;
  s.family = "rollout_correction";
  s.verl_symbol = "verl.trainer.config.algorithm.RolloutCorrectionConfig." + preset.name;
  s.inputs = {{"old_log_prob", Role::kTokens, false, false, "batch old_log_probs (training policy)"},
              {"rollout_log_prob", Role::kTokens, false, false, "batch rollout_log_probs"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  AddKwargKeys(s, preset);
  const bool is_on = !IsNone(defaults.rollout_is);
  if (is_on) s.outputs.push_back({"rollout_is_weights"});
  s.outputs.push_back({"response_mask", OutputKind::kTensor, /*discrete=*/true});
  std::vector<std::string> stds;
  PipelineMetricNames(defaults, s.metrics, s.discrete_metrics, stds);
  AddStdTolerances(s, stds);
  s.preset_expansion = defaults.AsConfig();
  const RolloutPreset* p = &preset;
  s.oracle = [p](const Case& c) {
    const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, c.config);
    oracle::CorrectionResult r = oracle::compute_rollout_correction_and_rejection_mask(
        c.Input("old_log_prob"), c.Input("rollout_log_prob"), c.Input("response_mask"), f.Settings());
    Result out;
    if (r.rollout_is_weights) out.outputs["rollout_is_weights"] = std::move(*r.rollout_is_weights);
    out.outputs["response_mask"] = std::move(r.modified_response_mask);
    out.metrics = std::move(r.metrics);
    out.boundary = std::move(r.boundary);
    return out;
  };
  s.generate = [p](const GenParams& gp) {
    oracle::InputGen g(gp.seed);
    Case c = oracle::NewGeneratedCase(gp);
    const Array old_lp = g.LogProbs(gp.batch, gp.tokens, gp.dtype);
    const Array lr = oracle::RandomLogRatio(g, gp.batch, gp.tokens, gp.dtype);
    Array rollout = old_lp;
    for (int64_t k = 0; k < rollout.size(); ++k) rollout[k] = std::min(old_lp[k] - lr[k], -1e-4);
    oracle::RoundToDType(rollout);
    c.inputs["old_log_prob"] = old_lp;
    c.inputs["rollout_log_prob"] = rollout;
    c.inputs["response_mask"] = g.ResponseMask(gp.batch, gp.tokens, gp.dtype);
    SetRandomKwargs(g, *p, c.config);
    return c;
  };
  s.check_config = [p](const Case& c) { CheckPreset(*p, c); };
  s.mistrust = [](const Case& golden) -> std::string {
    auto out = golden.outputs.find("response_mask");
    const Array* in = golden.OptionalInput("response_mask");
    if (out == golden.outputs.end() || !in) return "";
    for (double v : out->second.data)
      if (v != 0.0) return "";
    for (double v : in->data)
      if (v != 0.0) return "every valid token was rejected: the output mask is all zero, so agreeing on it proves little";
    return "";
  };
  s.notes = "compute_rollout_correction_and_add_to_batch with RolloutCorrectionConfig." + preset.name +
            "(); with default arguments: " + Describe(defaults) +
            ". Outputs: the batch's response_mask after rejection" +
            (is_on ? std::string(" and its rollout_is_weights") : std::string(" (IS off: no weights)")) + ".";
  return s;
}

// ------------------------------------------------------------------ bypass presets

oracle::VanillaConfig ReadVanilla(const Config& c) {
  oracle::VanillaConfig v;
  std::tie(v.clip_ratio_low, v.clip_ratio_high) = oracle::ReadClipRatios(c);
  v.clip_ratio_c = c.Double("clip_ratio_c", 3.0);
  v.loss_agg_mode = c.String("loss_agg_mode", "token-mean");
  v.global = oracle::ReadGlobalBatchInfo(c);
  return v;
}

// apply_bypass_mode stores the config in the trainer's policy_loss node (an OmegaConf
// DictConfig): its typed fields reject a Python int where the annotation is
// Union[str, float] (a factory passes an int keyword through unchanged).
void CheckOmegaConfTypes(const oracle::RolloutCorrectionFields& f) {
  const std::pair<const char*, const ConfigValue*> fields[] = {{"rollout_is_threshold", &f.rollout_is_threshold},
                                                              {"rollout_rs_threshold", &f.rollout_rs_threshold}};
  for (const auto& [name, v] : fields)
    if (const auto* i = std::get_if<int64_t>(v))
      throw VerlError("ValidationError", "Value '" + std::to_string(*i) + "' of type 'int' is incompatible with type "
                                         "hint 'Union[str, float]' full_key: " + name);
}

oracle::PolicyLossResult RunBypassPreset(const RolloutPreset& p, const Case& c, const oracle::CorrectionResult* frozen) {
  const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(p, c.config);
  CheckOmegaConfTypes(f);
  // apply_bypass_mode: old_log_probs := rollout_log_probs.
  const oracle::PolicyLossInputs in{c.Input("rollout_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                                    c.Input("response_mask"), nullptr};
  return oracle::policy_loss_bypass_mode(in, ReadVanilla(c.config), f.loss_type, f.Settings(), frozen);
}

FunctionSpec Bypass(const RolloutPreset& preset) {
  const oracle::RolloutCorrectionFields defaults = oracle::ExpandPresetDefaults(preset);
  FunctionSpec s;
  s.name = preset.name;
  s.family = "rollout_correction";
  s.verl_symbol = "verl.trainer.config.algorithm.RolloutCorrectionConfig." + preset.name;
  s.inputs = {{"rollout_log_prob", Role::kTokens, false, false, "batch rollout_log_probs (become old_log_probs)"},
              {"log_prob", Role::kTokens, false, false, "current-policy log-probs"},
              {"advantages", Role::kTokens},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  AddKwargKeys(s, preset);
  s.config.push_back({"clip_ratio", "float", 0.2, "ActorConfig.clip_ratio"});
  s.config.push_back({"clip_ratio_low", "float", 0.2, "lower epsilon; None = clip_ratio"});
  s.config.push_back({"clip_ratio_high", "float", 0.2, "upper epsilon; None = clip_ratio"});
  s.config.push_back({"clip_ratio_c", "float", 3.0, "dual-clip bound (ppo_clip); must be > 1"});
  s.config.push_back({"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode",
                      std::vector<std::string>(std::begin(oracle::kAggModes), std::end(oracle::kAggModes))});
  oracle::AddGlobalBatchKeys(s);
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.grads = {"log_prob"};
  if (defaults.loss_type == "ppo_clip") {
    s.metrics = {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"};
    s.discrete_metrics = {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"};
  } else {
    s.metrics = {"actor/ppo_kl"};
  }
  std::vector<std::string> stds;
  PipelineMetricNames(defaults, s.metrics, s.discrete_metrics, stds);
  AddStdTolerances(s, stds);
  s.preset_expansion = defaults.AsConfig();
  const RolloutPreset* p = &preset;
  s.oracle = [p](const Case& c) { return oracle::PackPolicyLoss(RunBypassPreset(*p, c, nullptr), c.dtype); };
  // The pipeline runs under no_grad: weights and mask are constants to autograd, taken
  // at the unperturbed point.
  s.stop_gradient_objective = [p](const Case& base, const Case& at) {
    const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, base.config);
    const oracle::CorrectionResult frozen = oracle::compute_rollout_correction_and_rejection_mask(
        base.Input("log_prob"), base.Input("rollout_log_prob"), base.Input("response_mask"), f.Settings());
    return RunBypassPreset(*p, at, &frozen).loss;
  };
  s.check_config = [p](const Case& c) {
    const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, c.config);
    try {
      CheckOmegaConfTypes(f);
    } catch (const VerlError& e) {
      const std::string field = std::get_if<int64_t>(&f.rollout_is_threshold) ? "rollout_is_threshold"
                                                                                : "rollout_rs_threshold";
      oracle::ThrowIfRefused(c, {field, e.what()}, KwargOf(*p, field));
    }
    CheckPreset(*p, c);
  };
  // As bypass_mode: the mask the loss ran on (recomputed) rejecting every valid token.
  s.mistrust = [p](const Case& golden) -> std::string {
    try {
      const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, golden.config);
      const oracle::CorrectionResult r = oracle::compute_rollout_correction_and_rejection_mask(
          golden.Input("log_prob"), golden.Input("rollout_log_prob"), golden.Input("response_mask"), f.Settings());
      for (double v : r.modified_response_mask.data)
        if (v != 0.0) return "";
      return "every valid token was rejected: the loss ran on an all-zero mask, so agreeing on it proves little";
    } catch (const std::exception&) {
      return "";
    }
  };
  s.generate = [p](const GenParams& gp) {
    oracle::InputGen g(gp.seed);
    Case c = oracle::NewPolicyLossCase(gp, g);
    c.inputs["rollout_log_prob"] = c.Input("old_log_prob");
    c.inputs.erase("old_log_prob");
    c.inputs.erase("rollout_is_weights");
    c.config.Set("clip_ratio", 0.2);
    c.config.Set("clip_ratio_low", 0.2);
    c.config.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
    c.config.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 10.0);
    c.config.Set("loss_agg_mode", std::string(oracle::kAggModes[g.Int(0, 4)]));
    SetRandomKwargs(g, *p, c.config);
    return c;
  };
  s.notes = "apply_bypass_mode (old_log_probs := rollout_log_probs) then compute_policy_loss_bypass_mode with "
            "RolloutCorrectionConfig." + preset.name + "(); with default arguments: " + Describe(defaults) +
            ". The pipeline runs on (log_prob, rollout_log_prob) under no_grad; loss_type " + defaults.loss_type +
            (defaults.loss_type == "ppo_clip" ? ": vanilla PPO on the rejected mask, IS weights unused."
                                              : ": REINFORCE with the pipeline's IS weights on the rejected mask.");
  return s;
}

}  // namespace

void AddRolloutPresetSpecs(std::vector<FunctionSpec>& out) {
  for (const RolloutPreset& p : oracle::RolloutPresets()) out.push_back(p.bypass ? Bypass(p) : Decoupled(p));
}

}  // namespace verlconf
