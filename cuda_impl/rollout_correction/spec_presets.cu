// CUDA entries (cuda and cuda-host slots) for the 19 RolloutCorrectionConfig factories,
// as oracle/rollout_correction/spec_presets.cc runs them: the factory's config from the
// case's keyword arguments (oracle::ExpandPreset), then the pipeline (decoupled presets,
// the batch's response_mask replaced by the rejected one) or apply_bypass_mode and the
// bypass_mode loss (bypass presets).
#include <string>
#include <utility>

#include "cuda_impl/core/system.h"
#include "cuda_impl/rollout_correction/entries.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/presets.h"

namespace verlconf::cuda {
namespace {

Result RunDecoupled(const oracle::RolloutPreset& p, System system, const Case& c) {
  const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(p, c.config);
  return RunCorrectionPipeline(system, c.Input("old_log_prob"), c.Input("rollout_log_prob"), c.Input("response_mask"),
                               f.Settings(), "response_mask", c.dtype);
}

Result RunBypass(const oracle::RolloutPreset& p, System system, const Case& c) {
  const oracle::RolloutCorrectionFields f = oracle::ExpandPreset(p, c.config);
  oracle::CheckOmegaConfTypes(f);
  // apply_bypass_mode: old_log_probs := rollout_log_probs.
  return RunBypassLoss(system, c.Input("rollout_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                       c.Input("response_mask"), oracle::ReadVanillaConfig(c.config), f.loss_type, f.Settings(),
                       c.dtype);
}

const bool registered = [] {
  for (const oracle::RolloutPreset& p : oracle::RolloutPresets()) {
    const oracle::RolloutPreset* preset = &p;
    if (p.bypass)
      RegisterCudaEntry("rollout_correction", p.name,
                        [preset](System s, const Case& c) { return RunBypass(*preset, s, c); });
    else
      RegisterCudaEntry("rollout_correction", p.name,
                        [preset](System s, const Case& c) { return RunDecoupled(*preset, s, c); });
  }
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
