// verl's compute_policy_loss_bypass_mode on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states it: the correction pipeline (pipeline.cuh) with the current
// policy as "old" and the rollout as "rollout", then the loss it selects through the CUDA
// policy losses' own templates: "ppo_clip" is vanilla.cuh's PPO without IS weights on the
// modified mask, "reinforce" legacy.cuh's REINFORCE with the pipeline's IS weights on it.
// The pipeline's weights and mask are constants to the gradient (verl runs it under
// no_grad), which is how the losses treat their weight and mask arguments.
#pragma once

#include <thrust/iterator/constant_iterator.h>

#include <cstdint>
#include <map>
#include <string>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/legacy.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "cuda_impl/rollout_correction/pipeline.cuh"
#include "oracle/policy_loss/vanilla.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::cuda {

struct BypassOutputs {
  PolicyLossScalars loss;                    // the selected loss and its metrics' fields
  std::map<std::string, double> correction;  // the pipeline's rollout_corr/... metrics
};

// The bypass_mode loss of `rollout_lp` (the batch's old log-probs, which bypass mode sets
// to the rollout's) and `log_prob` (current): d loss / d log_prob into grad; `weights` and
// `modified_mask` (B x T) receive the pipeline's outputs (the weights only for the loss
// that reads them, "reinforce"). Raises as verl does, in verl's order: the pipeline's
// errors, then an unknown loss_type, then the loss's own checks.
template <class Policy>
BypassOutputs policy_loss_bypass_mode(Policy&& policy, System system, const float* rollout_lp, const float* log_prob,
                                      const float* advantages, const float* mask, int64_t rows, int64_t cols,
                                      const oracle::VanillaConfig& cfg, const std::string& loss_type,
                                      const CorrectionPlan& plan, float* weights, float* modified_mask, float* grad) {
  BypassOutputs out;
  out.correction =
      compute_rollout_correction_and_rejection_mask(policy, log_prob, rollout_lp, mask, rows, cols, plan,
                                                    loss_type == "reinforce" ? weights : nullptr, modified_mask);
  oracle::CheckBypassLossType(loss_type);
  if (loss_type == "reinforce") {
    const AggArgs agg = CheckedAggArgs(cfg.loss_agg_mode, cfg.global);
    if (plan.is)
      out.loss =
          policy_loss_reinforce(policy, system, rollout_lp, log_prob, advantages, static_cast<const float*>(weights),
                                modified_mask, grad, rows, cols, agg.mode, agg.global);
    else
      out.loss =
          policy_loss_reinforce(policy, system, rollout_lp, log_prob, advantages, thrust::make_constant_iterator(1.0f),
                                modified_mask, grad, rows, cols, agg.mode, agg.global);
  } else {  // ppo_clip
    oracle::CheckDualClip(cfg.clip_ratio_c);
    const AggArgs agg = CheckedAggArgs(cfg.loss_agg_mode, cfg.global);
    const VanillaParams p = MakeVanillaParams(cfg.clip_ratio_low, cfg.clip_ratio_high, cfg.clip_ratio_c);
    out.loss =
        policy_loss_vanilla(policy, system, rollout_lp, log_prob, advantages, thrust::make_constant_iterator(1.0f),
                            modified_mask, grad, rows, cols, p, agg.mode, agg.global);
  }
  return out;
}

}  // namespace verlconf::cuda
