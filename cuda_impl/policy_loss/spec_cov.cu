// The CUDA entries of clip_cov and kl_cov (family "policy_loss"), in the cuda and
// cuda-host slots under the keys of oracle/policy_loss/spec_cov.cc. The pick is the
// case's cov_selected when it has one (verl's own, in the goldens), else the oracle's
// deterministic default pick, made in the policy's system as a cut the loss's pass
// applies (cov.cuh).
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/cov.cuh"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "oracle/policy_loss/cov.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf::cuda {
namespace {

// The recorded pick, checked, as floats; empty when the case has none.
std::vector<float> RecordedPick(const Case& c) {
  const Array* sel = c.OptionalInput("cov_selected");
  if (!sel) return {};
  oracle::CheckCovSelection(*sel, c.Input("response_mask"));
  return ToFloat(*sel);
}

Result RunClipCov(System system, const Case& c) {
  const std::pair<double, double> clip = oracle::ReadClipRatios(c.config);
  const float lo = static_cast<float>(clip.first), hi = static_cast<float>(clip.second);
  const double ratio = c.config.Double("clip_cov_ratio");
  const float lb = static_cast<float>(c.config.Double("clip_cov_lb"));
  const float ub = static_cast<float>(c.config.Double("clip_cov_ub"));
  oracle::CheckClipCovRatio(ratio);
  const std::vector<float> recorded = RecordedPick(c);
  const bool has_pick = c.OptionalInput("cov_selected") != nullptr;
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  std::optional<SystemBuffer<float>> sel;
  if (has_pick) sel.emplace(system, recorded);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    if (!has_pick)
      return policy_loss_clip_cov_default(policy, system, in, lo, hi, lb, ub, ratio, agg.mode, agg.global, g);
    return policy_loss_clip_cov(policy, system, in, sel->data(), lo, hi, agg.mode, agg.global, g);
  });
}

Result RunKlCov(System system, const Case& c) {
  const double ratio = c.config.Double("kl_cov_ratio");
  const float coef = static_cast<float>(c.config.Double("ppo_kl_coef"));
  oracle::CheckKlCovRatio(ratio);
  const std::vector<float> recorded = RecordedPick(c);
  const bool has_pick = c.OptionalInput("cov_selected") != nullptr;
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  std::optional<SystemBuffer<float>> sel;
  if (has_pick) sel.emplace(system, recorded);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    if (!has_pick) return policy_loss_kl_cov_default(policy, system, in, ratio, coef, agg.mode, agg.global, g);
    return policy_loss_kl_cov(policy, system, in, sel->data(), coef, agg.mode, agg.global, g);
  });
}

const bool registered = [] {
  RegisterCudaEntry("policy_loss", "clip_cov", RunClipCov);
  RegisterCudaEntry("policy_loss", "kl_cov", RunKlCov);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
