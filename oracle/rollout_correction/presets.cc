// Mirrors the RolloutCorrectionConfig classmethods of verl 0.9.1
// (verl/trainer/config/algorithm.py); one table row per factory, its builder written
// out from the factory's `cls(...)` call.
#include "oracle/rollout_correction/presets.h"

#include <variant>

#include "oracle/core/errors.h"

namespace verlconf::oracle {
namespace {

using Args = std::vector<ConfigValue>;
// Functions, not namespace-scope constants: other translation units (the CUDA
// registrations) build this table during static initialisation, possibly before this
// file's own dynamic initialisers have run, when a `const ConfigValue` would still read
// as None.
ConfigValue NoneValue() { return std::monostate{}; }
ConfigValue TokenLevel() { return std::string("token"); }
ConfigValue SequenceLevel() { return std::string("sequence"); }

// The IcePop factories build f"{threshold_lower}_{threshold}": Python's str of each
// number (repr for floats: 0.5 and 5.0 give "0.5_5.0").
ConfigValue IcepopSpec(const ConfigValue& threshold, const ConfigValue& threshold_lower) {
  return PyStr(threshold_lower) + "_" + PyStr(threshold);
}

RolloutCorrectionFields Make(ConfigValue is, ConfigValue is_threshold, ConfigValue rs, ConfigValue rs_threshold,
                             bool bypass, std::string loss_type) {
  RolloutCorrectionFields f;
  f.rollout_is = std::move(is);
  f.rollout_is_threshold = std::move(is_threshold);
  f.rollout_rs = std::move(rs);
  f.rollout_rs_threshold = std::move(rs_threshold);
  f.bypass_mode = bypass;
  f.loss_type = std::move(loss_type);
  return f;
}

ConfigValue DefaultIsThreshold() { return 2.0; }  // RolloutCorrectionConfig.rollout_is_threshold
std::string PpoClip() { return "ppo_clip"; }      // RolloutCorrectionConfig.loss_type

PresetKwarg Threshold(double d) { return {"threshold", d, "float"}; }
PresetKwarg ThresholdLower() { return {"threshold_lower", 0.5, "float"}; }
PresetKwarg IsThreshold() { return {"is_threshold", 2.0, "float"}; }
// Annotated Optional[str | float] where the default is a string, float where it is 0.01.
PresetKwarg RsThreshold(const ConfigValue& d) {
  return {"rs_threshold", d, std::holds_alternative<std::string>(d) ? "float|str" : "float"};
}
ConfigValue GeoBand() { return std::string("0.999_1.001"); }

std::vector<RolloutPreset> Build() {
  std::vector<RolloutPreset> p;
  // decoupled_token_is(threshold=2.0)
  p.push_back({"decoupled_token_is", {Threshold(2.0)}, false, [](const Args& a) {
                 return Make(TokenLevel(), a[0], NoneValue(), NoneValue(), false, PpoClip());
               }});
  // decoupled_seq_is(threshold=2.0)
  p.push_back({"decoupled_seq_is", {Threshold(2.0)}, false, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], NoneValue(), NoneValue(), false, PpoClip());
               }});
  // decoupled_token_icepop(threshold=5.0, threshold_lower=0.5)
  p.push_back({"decoupled_token_icepop", {Threshold(5.0), ThresholdLower()}, false, [](const Args& a) {
                 return Make(TokenLevel(), IcepopSpec(a[0], a[1]), NoneValue(), NoneValue(), false, PpoClip());
               }});
  // decoupled_seq_is_rs(is_threshold=2.0, rs_threshold="0.5_2.0")
  p.push_back({"decoupled_seq_is_rs", {IsThreshold(), RsThreshold(std::string("0.5_2.0"))}, false, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], std::string("seq_sum_k1"), a[1], false, PpoClip());
               }});
  // decoupled_geo_rs(rs_threshold="0.999_1.001")
  p.push_back({"decoupled_geo_rs", {RsThreshold(GeoBand())}, false, [](const Args& a) {
                 return Make(NoneValue(), DefaultIsThreshold(), std::string("seq_mean_k1"), a[0], false, PpoClip());
               }});
  // bypass_ppo_clip()
  p.push_back({"bypass_ppo_clip", {}, true, [](const Args&) {
                 return Make(NoneValue(), DefaultIsThreshold(), NoneValue(), NoneValue(), true, "ppo_clip");
               }});
  // bypass_ppo_clip_geo_rs(rs_threshold="0.999_1.001")
  p.push_back({"bypass_ppo_clip_geo_rs", {RsThreshold(GeoBand())}, true, [](const Args& a) {
                 return Make(NoneValue(), DefaultIsThreshold(), std::string("seq_mean_k1"), a[0], true, "ppo_clip");
               }});
  // bypass_ppo_clip_k3_rs(rs_threshold=0.01)
  p.push_back({"bypass_ppo_clip_k3_rs", {RsThreshold(0.01)}, true, [](const Args& a) {
                 return Make(NoneValue(), DefaultIsThreshold(), std::string("seq_mean_k3"), a[0], true, "ppo_clip");
               }});
  // bypass_pg_is(threshold=2.0)
  p.push_back({"bypass_pg_is", {Threshold(2.0)}, true, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], NoneValue(), NoneValue(), true, "reinforce");
               }});
  // bypass_pg_token_icepop(threshold=5.0, threshold_lower=0.5)
  p.push_back({"bypass_pg_token_icepop", {Threshold(5.0), ThresholdLower()}, true, [](const Args& a) {
                 return Make(TokenLevel(), IcepopSpec(a[0], a[1]), NoneValue(), NoneValue(), true, "reinforce");
               }});
  // bypass_pg_geo_rs(rs_threshold="0.999_1.001")
  p.push_back({"bypass_pg_geo_rs", {RsThreshold(GeoBand())}, true, [](const Args& a) {
                 return Make(NoneValue(), DefaultIsThreshold(), std::string("seq_mean_k1"), a[0], true, "reinforce");
               }});
  // decoupled_geo_rs_seq_tis(is_threshold=2.0, rs_threshold="0.999_1.001")
  p.push_back({"decoupled_geo_rs_seq_tis", {IsThreshold(), RsThreshold(GeoBand())}, false, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], std::string("seq_mean_k1"), a[1], false, PpoClip());
               }});
  // decoupled_geo_rs_token_tis(is_threshold=2.0, rs_threshold="0.999_1.001")
  p.push_back({"decoupled_geo_rs_token_tis", {IsThreshold(), RsThreshold(GeoBand())}, false, [](const Args& a) {
                 return Make(TokenLevel(), a[0], std::string("seq_mean_k1"), a[1], false, PpoClip());
               }});
  // bypass_pg_geo_rs_seq_tis(is_threshold=2.0, rs_threshold="0.999_1.001")
  p.push_back({"bypass_pg_geo_rs_seq_tis", {IsThreshold(), RsThreshold(GeoBand())}, true, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], std::string("seq_mean_k1"), a[1], true, "reinforce");
               }});
  // bypass_pg_geo_rs_token_tis(is_threshold=2.0, rs_threshold="0.999_1.001")
  p.push_back({"bypass_pg_geo_rs_token_tis", {IsThreshold(), RsThreshold(GeoBand())}, true, [](const Args& a) {
                 return Make(TokenLevel(), a[0], std::string("seq_mean_k1"), a[1], true, "reinforce");
               }});
  // decoupled_k3_rs(rs_threshold=0.01)
  p.push_back({"decoupled_k3_rs", {RsThreshold(0.01)}, false, [](const Args& a) {
                 return Make(NoneValue(), DefaultIsThreshold(), std::string("seq_mean_k3"), a[0], false, PpoClip());
               }});
  // decoupled_k3_rs_seq_tis(is_threshold=2.0, rs_threshold=0.01)
  p.push_back({"decoupled_k3_rs_seq_tis", {IsThreshold(), RsThreshold(0.01)}, false, [](const Args& a) {
                 return Make(SequenceLevel(), a[0], std::string("seq_mean_k3"), a[1], false, PpoClip());
               }});
  // decoupled_k3_rs_token_tis(is_threshold=2.0, rs_threshold=0.01)
  p.push_back({"decoupled_k3_rs_token_tis", {IsThreshold(), RsThreshold(0.01)}, false, [](const Args& a) {
                 return Make(TokenLevel(), a[0], std::string("seq_mean_k3"), a[1], false, PpoClip());
               }});
  // disabled()
  p.push_back({"disabled", {}, false, [](const Args&) {
                 return Make(NoneValue(), DefaultIsThreshold(), NoneValue(), NoneValue(), false, PpoClip());
               }});
  return p;
}

}  // namespace

std::vector<std::pair<std::string, ConfigValue>> RolloutCorrectionFields::AsConfig() const {
  return {{"rollout_is", rollout_is},
          {"rollout_is_threshold", rollout_is_threshold},
          {"rollout_is_batch_normalize", int64_t{rollout_is_batch_normalize ? 1 : 0}},
          {"rollout_rs", rollout_rs},
          {"rollout_rs_threshold", rollout_rs_threshold},
          {"bypass_mode", int64_t{bypass_mode ? 1 : 0}},
          {"loss_type", loss_type}};
}

const std::vector<RolloutPreset>& RolloutPresets() {
  static const std::vector<RolloutPreset> presets = Build();
  return presets;
}

const RolloutPreset* FindRolloutPreset(const std::string& name) {
  for (const auto& p : RolloutPresets())
    if (p.name == name) return &p;
  return nullptr;
}

RolloutCorrectionFields ExpandPreset(const RolloutPreset& preset, const Config& kwargs) {
  Args args;
  for (const auto& k : preset.kwargs) args.push_back(RawConfig(kwargs, k.name, k.default_value));
  return preset.build(args);
}

RolloutCorrectionFields ExpandPresetDefaults(const RolloutPreset& preset) { return ExpandPreset(preset, Config()); }

// apply_bypass_mode stores the config in the trainer's policy_loss node (an OmegaConf
// DictConfig): its typed fields reject a Python int where the annotation is
// Union[str, float] (a factory passes an int keyword through unchanged).
void CheckOmegaConfTypes(const RolloutCorrectionFields& f) {
  const std::pair<const char*, const ConfigValue*> fields[] = {{"rollout_is_threshold", &f.rollout_is_threshold},
                                                               {"rollout_rs_threshold", &f.rollout_rs_threshold}};
  for (const auto& [name, v] : fields)
    if (const auto* i = std::get_if<int64_t>(v))
      throw VerlError("ValidationError", "Value '" + std::to_string(*i) +
                                             "' of type 'int' is incompatible with type "
                                             "hint 'Union[str, float]' full_key: " +
                                             name);
}

}  // namespace verlconf::oracle
