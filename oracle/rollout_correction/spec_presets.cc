// Registry entries for the 19 RolloutCorrectionConfig factories (family
// "rollout_correction", named after the classmethods). A case carries the factory's
// keyword arguments (absent = the factory default). Decoupled presets and `disabled`
// run compute_rollout_correction_and_add_to_batch (the pipeline, then response_mask
// replaced by the rejected one and rollout_is_weights added when IS is on); bypass
// presets run apply_bypass_mode (old log-probs := rollout log-probs, loss_mode
// bypass_mode) and then the bypass_mode loss with the preset's config, as the actor
// does. Table: oracle/rollout_correction/presets.cc; math: oracle/rollout_correction/rollout_correction.h.
#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/presets.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf {
namespace {

using oracle::IsNone;
using oracle::RolloutPreset;

// The metric keys the pipeline reports with the preset's default arguments.
void AddPresetMetrics(FunctionSpec& s, const RolloutPreset& preset, const oracle::RolloutCorrectionFields& f) {
  const bool is = !IsNone(f.rollout_is) && !IsNone(f.rollout_is_threshold);
  const auto* rs = std::get_if<std::string>(&f.rollout_rs);
  const std::vector<std::string> rs_options = rs ? oracle::ParseRolloutRsOptions(*rs) : std::vector<std::string>{};
  // The case's settings are the factory's, with the case's keyword arguments.
  const RolloutPreset* p = &preset;
  oracle::AddCorrectionMetrics(s, "rollout_corr/", is, rs_options, /*offpolicy=*/true,
                               [p](const Case& c) { return oracle::ExpandPreset(*p, c.config).Settings(); });
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
    const std::string text =
        std::holds_alternative<std::string>(v) ? "\"" + std::get<std::string>(v) + "\"" : oracle::PyStr(v);
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

// Decoupled and bypass presets alike: one entry per factory, named after it.
FunctionSpec PresetSpec(const RolloutPreset& preset, const oracle::RolloutCorrectionFields& defaults) {
  FunctionSpec s;
  s.name = preset.name;
  s.family = "rollout_correction";
  s.verl_symbol = "verl.trainer.config.algorithm.RolloutCorrectionConfig." + preset.name;
  s.preset_expansion = defaults.AsConfig();
  return s;
}

// ------------------------------------------------------------------ decoupled presets

FunctionSpec Decoupled(const RolloutPreset& preset) {
  const oracle::RolloutCorrectionFields defaults = oracle::ExpandPresetDefaults(preset);
  FunctionSpec s = PresetSpec(preset, defaults);
  s.inputs = {{"old_log_prob", Role::kTokens, false, false, "batch old_log_probs (training policy)", /*decides=*/true},
              {"rollout_log_prob", Role::kTokens, false, false, "batch rollout_log_probs"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  AddKwargKeys(s, preset);
  const bool is_on = !IsNone(defaults.rollout_is);
  if (is_on) s.outputs.push_back({"rollout_is_weights"});
  s.outputs.push_back({"response_mask", OutputKind::kTensor, /*discrete=*/true});
  oracle::DeclareDetachedOutputs(s, "old_log_prob");
  AddPresetMetrics(s, preset, defaults);
  const RolloutPreset* p = &preset;
  s.oracle = [p](const Case& c) {
    const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, c.config);
    return oracle::PackCorrection(
        oracle::compute_rollout_correction_and_rejection_mask(c.Input("old_log_prob"), c.Input("rollout_log_prob"),
                                                              c.Input("response_mask"), f.Settings()),
        "response_mask");
  };
  s.generate = [p](const GenParams& gp) {
    oracle::InputGen g(gp.seed);
    Case c = oracle::NewLogProbPairCase(gp, g, "old_log_prob", /*optional_rollout=*/false);
    SetRandomKwargs(g, *p, c.config);
    return c;
  };
  s.check_config = [p](const Case& c) { CheckPreset(*p, c); };
  s.mistrust = oracle::AllRejected("response_mask");
  s.notes = "compute_rollout_correction_and_add_to_batch with RolloutCorrectionConfig." + preset.name +
            "(); with default arguments: " + Describe(defaults) +
            ". Outputs: the batch's response_mask after rejection" +
            (is_on ? std::string(" and its rollout_is_weights") : std::string(" (IS off: no weights)")) + ".";
  return s;
}

// ------------------------------------------------------------------ bypass presets

oracle::PolicyLossResult RunBypassPreset(const RolloutPreset& p, const Case& c,
                                         const oracle::CorrectionResult* frozen) {
  const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(p, c.config);
  oracle::CheckOmegaConfTypes(f);
  // apply_bypass_mode: old_log_probs := rollout_log_probs.
  const oracle::PolicyLossInputs in{c.Input("rollout_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                                    c.Input("response_mask"), nullptr};
  return oracle::policy_loss_bypass_mode(in, oracle::ReadVanillaConfig(c.config), f.loss_type, f.Settings(), frozen);
}

FunctionSpec Bypass(const RolloutPreset& preset) {
  const oracle::RolloutCorrectionFields defaults = oracle::ExpandPresetDefaults(preset);
  FunctionSpec s = PresetSpec(preset, defaults);
  s.inputs = {{"rollout_log_prob", Role::kTokens, false, false, "batch rollout_log_probs (become old_log_probs)"},
              {"log_prob", Role::kTokens, false, false, "current-policy log-probs", /*decides=*/true},
              {"advantages", Role::kTokens},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  AddKwargKeys(s, preset);
  oracle::AddVanillaKeys(s);
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.grads = {"log_prob"};
  if (defaults.loss_type == "ppo_clip") {
    s.metrics = {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"};
    s.discrete_metrics = {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"};
  } else {
    s.metrics = {"actor/ppo_kl"};
  }
  AddPresetMetrics(s, preset, defaults);
  const RolloutPreset* p = &preset;
  s.oracle = [p](const Case& c) { return oracle::PackPolicyLoss(RunBypassPreset(*p, c, nullptr), c.dtype); };
  // The pipeline runs under no_grad: weights and mask are constants to autograd, taken
  // at the unperturbed point.
  s.stop_gradient_objective = [p](const Case& base, const Case& at) {
    const oracle::CorrectionResult frozen =
        oracle::RunPipelineOnLossCase(base, "rollout_log_prob", oracle::ExpandPreset(*p, base.config).Settings());
    return RunBypassPreset(*p, at, &frozen).loss;
  };
  s.check_config = [p](const Case& c) {
    const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(*p, c.config);
    try {
      oracle::CheckOmegaConfTypes(f);
    } catch (const VerlError& e) {
      const std::string field =
          std::get_if<int64_t>(&f.rollout_is_threshold) ? "rollout_is_threshold" : "rollout_rs_threshold";
      oracle::ThrowIfRefused(c, {field, e.what()}, KwargOf(*p, field));
    }
    CheckPreset(*p, c);
  };
  s.mistrust = oracle::LossMaskAllRejected("rollout_log_prob",
                                           [p](const Config& c) { return oracle::ExpandPreset(*p, c).Settings(); });
  s.generate = [p](const GenParams& gp) {
    oracle::InputGen g(gp.seed);
    Case c = oracle::NewPolicyLossCase(gp, g);
    c.inputs["rollout_log_prob"] = c.Input("old_log_prob");
    c.inputs.erase("old_log_prob");
    c.inputs.erase("rollout_is_weights");
    oracle::SetRandomVanillaConfig(g, c.config);
    SetRandomKwargs(g, *p, c.config);
    return c;
  };
  s.notes =
      "apply_bypass_mode (old_log_probs := rollout_log_probs) then compute_policy_loss_bypass_mode with "
      "RolloutCorrectionConfig." +
      preset.name + "(); with default arguments: " + Describe(defaults) +
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
