// The CUDA entries of the policy losses beyond vanilla (family "policy_loss"): gspo,
// sapo, gpg, cispo, dro, geo_mean, dppo_tv, dppo_kl, in the cuda and cuda-host slots under
// the keys of oracle/policy_loss/spec_variants.cc, reading the same config keys and
// raising the same errors. The math is in variants.cuh.
#include <string>
#include <tuple>
#include <vector>

#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_entry.cuh"
#include "cuda_impl/policy_loss/variants.cuh"
#include "oracle/aggregation/spec_common.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/variants.h"

namespace verlconf::cuda {
namespace {

std::pair<float, float> ClipRatios(const Case& c) {
  const std::pair<double, double> r = oracle::ReadClipRatios(c.config);
  return {static_cast<float>(r.first), static_cast<float>(r.second)};
}

Result RunGspo(System system, const Case& c) {
  float lo, hi;
  std::tie(lo, hi) = ClipRatios(c);
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_gspo(policy, system, in, lo, hi, agg.mode, agg.global, g);
  });
}

Result RunSapo(System system, const Case& c) {
  const float tau_pos = static_cast<float>(c.config.Double("tau_pos"));
  const float tau_neg = static_cast<float>(c.config.Double("tau_neg"));
  // verl hard-codes the mode: loss_agg_mode is read and ignored.
  c.config.String("loss_agg_mode");
  const AggArgs agg = CheckedAggArgs("seq-mean-token-mean", oracle::ReadGlobalBatchInfo(c.config));
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_sapo(policy, system, in, tau_pos, tau_neg, agg.global, g);
  });
}

Result RunGpg(System system, const Case& c) {
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_gpg(policy, system, in, agg.mode, agg.global, g);
  });
}

Result RunCispo(System system, const Case& c) {
  float lo, hi;
  std::tie(lo, hi) = ClipRatios(c);
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_cispo(policy, system, in, lo, hi, agg.mode, agg.global, g);
  });
}

Result RunDro(System system, const Case& c) {
  // dro's own check comes before the aggregation's, as in the oracle.
  const float b = static_cast<float>(oracle::CheckDroBeta(c.config.OptionalDouble("dro_beta")));
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_dro(policy, system, in, b, agg.mode, agg.global, g);
  });
}

Result RunGeoMean(System system, const Case& c) {
  float lo, hi;
  std::tie(lo, hi) = ClipRatios(c);
  // Read as the oracle reads them; geo_mean's torch.mean uses neither.
  c.config.String("loss_agg_mode");
  oracle::ReadGlobalBatchInfo(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_geo_mean(policy, system, in, lo, hi, g);
  });
}

Result RunDppo(System system, const Case& c, DppoDivergence div) {
  float lo, hi;
  std::tie(lo, hi) = ClipRatios(c);
  const float clip_c = static_cast<float>(c.config.Double("clip_ratio_c"));
  const AggArgs agg = ReadAggArgs(c.config);
  const PolicyLossTensors t(system, c);
  return RunPolicyLoss(system, c, t, [&](auto&& policy, const PolicyLossArgs& in, float* g) {
    return policy_loss_dppo(policy, system, in, div, lo, hi, clip_c, agg.mode, agg.global, g);
  });
}

const bool registered = [] {
  RegisterCudaEntry("policy_loss", "gspo", RunGspo);
  RegisterCudaEntry("policy_loss", "sapo", RunSapo);
  RegisterCudaEntry("policy_loss", "gpg", RunGpg);
  RegisterCudaEntry("policy_loss", "cispo", RunCispo);
  RegisterCudaEntry("policy_loss", "dro", RunDro);
  RegisterCudaEntry("policy_loss", "geo_mean", RunGeoMean);
  RegisterCudaEntry("policy_loss", "dppo_tv",
                    [](System system, const Case& c) { return RunDppo(system, c, DppoDivergence::kTv); });
  RegisterCudaEntry("policy_loss", "dppo_kl",
                    [](System system, const Case& c) { return RunDppo(system, c, DppoDivergence::kKl); });
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
