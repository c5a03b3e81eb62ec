// The rollout-correction runs that more than one registration file needs, compiled once:
// the pipeline (spec.cu; the decoupled presets run it) and the bypass_mode loss
// (spec_bypass_mode.cu; the bypass presets run it).
#pragma once

#include <string>

#include "cuda_impl/core/system.h"
#include "oracle/core/case.h"
#include "oracle/policy_loss/vanilla.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::cuda {

// compute_rollout_correction_and_rejection_mask on (old, rollout, mask): the Result of
// the oracle's entries, the rejected mask named `mask_output`.
Result RunCorrectionPipeline(System system, const Array& old_log_prob, const Array& rollout_log_prob,
                             const Array& response_mask, const oracle::RolloutCorrectionSettings& settings,
                             const std::string& mask_output, DType dtype);

// compute_policy_loss_bypass_mode: `old_log_prob` holds the rollout log-probs.
Result RunBypassLoss(System system, const Array& old_log_prob, const Array& log_prob, const Array& advantages,
                     const Array& response_mask, const oracle::VanillaConfig& cfg, const std::string& loss_type,
                     const oracle::RolloutCorrectionSettings& settings, DType dtype);

}  // namespace verlconf::cuda
