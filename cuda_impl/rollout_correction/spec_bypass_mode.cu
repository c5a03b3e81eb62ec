// The CUDA entry (cuda and cuda-host slots) of the "bypass_mode" policy loss (family
// policy_loss: core_algos.compute_policy_loss_bypass_mode), with the outputs, gradient
// and metrics of oracle/rollout_correction/spec_bypass_mode.cc; and the run the bypass
// presets share (entries.h).
#include <map>
#include <string>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "cuda_impl/rollout_correction/bypass_mode.cuh"
#include "cuda_impl/rollout_correction/entries.h"
#include "cuda_impl/rollout_correction/spec_common.cuh"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf::cuda {

Result RunBypassLoss(System system, const Array& old_log_prob, const Array& log_prob, const Array& advantages,
                     const Array& response_mask, const oracle::VanillaConfig& cfg, const std::string& loss_type,
                     const oracle::RolloutCorrectionSettings& settings, DType dtype) {
  // The pipeline sees the current policy as "old" and the rollout as "rollout".
  oracle::CheckPipelineInputs(log_prob, old_log_prob, response_mask);
  const CorrectionPlan plan = PlanCorrection(settings);
  const int64_t rows = response_mask.rows(), cols = response_mask.cols();
  const size_t n = response_mask.data.size();
  const SystemBuffer<float> rollout_b(system, ToFloat(old_log_prob)), lp_b(system, ToFloat(log_prob)),
      adv_b(system, ToFloat(advantages)), mask_b(system, ToFloat(response_mask));
  SystemBuffer<float> grad(system, n);
  BypassOutputs o;
  RunEntry(system, [&](auto&& policy) {
    o = policy_loss_bypass_mode(policy, system, rollout_b.data(), lp_b.data(), adv_b.data(), mask_b.data(), rows, cols,
                                cfg, loss_type, plan, grad.data());
  });
  // The selected loss's metrics (its own spec's list), then the pipeline's.
  Result r = PackPolicyLoss(
      o.loss, grad, response_mask.shape,
      PolicyLossMetricNames(loss_type == "reinforce" ? "compute_policy_loss_reinforce" : "vanilla"), dtype);
  r.metrics.insert(o.correction.begin(), o.correction.end());
  return r;
}

namespace {

Result RunBypassMode(System system, const Case& c) {
  // rollout_correction.loss_type as verl prints it ("None" when the case leaves it None).
  const std::string loss_type = c.config.OptionalString("loss_type").value_or("None");
  // The case's rollout_is_weights stays unread: verl ignores the argument.
  return RunBypassLoss(system, c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                       c.Input("response_mask"), oracle::ReadVanillaConfig(c.config), loss_type,
                       oracle::ReadRolloutSettings(c.config), c.dtype);
}

const bool registered = RegisterCudaEntry("policy_loss", "bypass_mode", RunBypassMode);

}  // namespace
}  // namespace verlconf::cuda
