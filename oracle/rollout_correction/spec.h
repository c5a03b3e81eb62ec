// The rollout_correction family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

// bypass_mode sits in verl's POLICY_LOSS_REGISTRY (family policy_loss) but is the
// rollout-correction pipeline followed by a loss, so its math and entry live here.
void AddBypassModeSpecs(std::vector<FunctionSpec>& out);
// rollout_corr_helper.py: IS weights, the 11 RS options and chains, metrics, the
// pipeline (spec.cc, spec_metrics.cc); RolloutCorrectionConfig presets (spec_presets.cc).
void AddRolloutCorrectionSpecs(std::vector<FunctionSpec>& out);
void AddRolloutPresetSpecs(std::vector<FunctionSpec>& out);

}  // namespace verlconf
