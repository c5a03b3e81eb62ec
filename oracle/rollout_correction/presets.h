// The RolloutCorrectionConfig factory classmethods of verl 0.9.1
// (verl/trainer/config/algorithm.py): their keyword arguments with defaults, and the
// config each returns. The registry's preset entries run them (decoupled presets through
// the correction pipeline, bypass presets through the bypass_mode loss).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::oracle {

// RolloutCorrectionConfig's fields. Fields a factory does not pass keep the dataclass
// defaults: rollout_is "sequence" (!), rollout_is_threshold 2.0, no batch
// normalisation, rollout_rs None, rollout_rs_threshold None, bypass_mode False,
// loss_type "ppo_clip".
struct RolloutCorrectionFields {
  ConfigValue rollout_is = std::string("sequence");
  ConfigValue rollout_is_threshold = 2.0;
  bool rollout_is_batch_normalize = false;
  ConfigValue rollout_rs;
  ConfigValue rollout_rs_threshold;
  bool bypass_mode = false;
  std::string loss_type = "ppo_clip";

  RolloutCorrectionSettings Settings() const {
    return {rollout_is, rollout_is_threshold, rollout_is_batch_normalize, rollout_rs, rollout_rs_threshold};
  }
  // The fields as config entries (None = monostate, bools int64 0/1), in declaration order.
  std::vector<std::pair<std::string, ConfigValue>> AsConfig() const;
};

struct PresetKwarg {
  std::string name;           // threshold, threshold_lower, is_threshold, rs_threshold
  ConfigValue default_value;  // the factory's default
  std::string type;           // as the factory annotates it: "float" or "float|str"
};

struct RolloutPreset {
  std::string name;  // the classmethod's name
  std::vector<PresetKwarg> kwargs;
  bool bypass = false;  // bypass_mode=True (runs a policy loss) rather than decoupled
  // Builds the factory's config from its keyword arguments (each given, or its default).
  RolloutCorrectionFields (*build)(const std::vector<ConfigValue>& args) = nullptr;
};

// The 19 factories, in the order algorithm.py defines them.
const std::vector<RolloutPreset>& RolloutPresets();
const RolloutPreset* FindRolloutPreset(const std::string& name);

// The factory called with the case's keyword arguments (absent or None = the default).
RolloutCorrectionFields ExpandPreset(const RolloutPreset& preset, const Config& kwargs);
// With every default: what FunctionSpec::preset_expansion records.
RolloutCorrectionFields ExpandPresetDefaults(const RolloutPreset& preset);

// apply_bypass_mode's store of the expanded config into the trainer's typed OmegaConf
// node: ValidationError for a Python int where the annotation is Union[str, float].
void CheckOmegaConfTypes(const RolloutCorrectionFields& f);

}  // namespace verlconf::oracle
