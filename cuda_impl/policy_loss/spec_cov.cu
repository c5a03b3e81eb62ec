// The CUDA entries of clip_cov and kl_cov (family "policy_loss"), in the cuda and
// cuda-host slots under the keys of oracle/policy_loss/spec_cov.cc. The pick is the
// case's cov_selected when it has one (verl's own, in the goldens), else the oracle's
// deterministic default pick, made on the device (cov.cuh).
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/cov.cuh"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "oracle/core/errors.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf::cuda {
namespace {

// The oracle's checks of a recorded pick (oracle/policy_loss/cov.cc), same errors.
void CheckSelection(const Array& sel, const Array& mask) {
  if (sel.shape != mask.shape) throw BadInput("cov_selected: shape differs from response_mask");
  for (size_t k = 0; k < sel.data.size(); ++k) {
    if (sel.data[k] != 0.0 && sel.data[k] != 1.0) throw BadInput("cov_selected: values must be 0 or 1");
    if (sel.data[k] == 1.0 && !(mask.data[k] > 0)) throw BadInput("cov_selected: picks a masked token");
  }
}

struct Agg {
  AggMode mode;
  AggGlobal info;
};
Agg ReadAgg(const Case& c) {
  const std::string mode = c.config.String("loss_agg_mode");
  const oracle::GlobalBatchInfo info = oracle::ReadGlobalBatchInfo(c.config);
  oracle::CheckAggArguments(mode, info);
  return {ToAggMode(mode), ToAggGlobal(info)};
}

// The recorded pick, checked, as floats; empty when the case has none.
std::vector<float> RecordedPick(const Case& c) {
  const Array* sel = c.OptionalInput("cov_selected");
  if (!sel) return {};
  CheckSelection(*sel, c.Input("response_mask"));
  return ToFloat(*sel);
}

Result RunClipCov(System system, const Case& c) {
  const std::pair<double, double> clip = oracle::ReadClipRatios(c.config);
  const float lo = static_cast<float>(clip.first), hi = static_cast<float>(clip.second);
  const double ratio = c.config.Double("clip_cov_ratio");
  const float lb = static_cast<float>(c.config.Double("clip_cov_lb"));
  const float ub = static_cast<float>(c.config.Double("clip_cov_ub"));
  if (!(ratio > 0)) throw VerlError("AssertionError", "clip_ratio should be larger than 0.");
  const std::vector<float> recorded = RecordedPick(c);
  const bool has_pick = c.OptionalInput("cov_selected") != nullptr;
  const Agg agg = ReadAgg(c);
  const PolicyLossTensors t(system, c);
  SystemBuffer<float> sel(system, has_pick ? recorded : std::vector<float>(t.size(), 0.0f));
  return RunPolicyLoss(system, c, t, {"actor/pg_clipfrac", "actor/ppo_kl"},
                       [&](auto&& policy, const PolicyLossArgs& in, float* g, float* s) {
                         if (!has_pick)
                           clip_cov_default_selection(policy, system, in, lo, hi, lb, ub, ratio, sel.data());
                         return policy_loss_clip_cov(policy, system, in, sel.data(), lo, hi, agg.mode, agg.info, g, s);
                       });
}

Result RunKlCov(System system, const Case& c) {
  const double ratio = c.config.Double("kl_cov_ratio");
  const float coef = static_cast<float>(c.config.Double("ppo_kl_coef"));
  if (!(ratio > 0)) throw VerlError("AssertionError", "kl_cov_ratio should be larger than 0.");
  const std::vector<float> recorded = RecordedPick(c);
  const bool has_pick = c.OptionalInput("cov_selected") != nullptr;
  const Agg agg = ReadAgg(c);
  const PolicyLossTensors t(system, c);
  SystemBuffer<float> sel(system, has_pick ? recorded : std::vector<float>(t.size(), 0.0f));
  return RunPolicyLoss(system, c, t, {"actor/ppo_kl"},
                       [&](auto&& policy, const PolicyLossArgs& in, float* g, float* s) {
                         if (!has_pick) kl_cov_default_selection(policy, system, in, ratio, sel.data());
                         return policy_loss_kl_cov(policy, system, in, sel.data(), coef, agg.mode, agg.info, g, s);
                       });
}

const bool registered = [] {
  RegisterCudaEntry("policy_loss", "clip_cov", RunClipCov);
  RegisterCudaEntry("policy_loss", "kl_cov", RunKlCov);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
