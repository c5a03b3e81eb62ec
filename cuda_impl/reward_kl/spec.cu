// The reward_kl family's CUDA entries (oracle/reward_kl/spec.cc): apply_kl_penalty and
// compute_rewards, in the cuda and cuda-host slots. The controllers ("fixed",
// "adaptive") are scalar updates with no CUDA entry; apply_kl_penalty's own update
// runs on the host through the oracle's, which raises as verl does.
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/reward_kl/reward_kl.cuh"
#include "oracle/kl/kl_penalty.h"
#include "oracle/reward_kl/reward_kl.h"

namespace verlconf::cuda {
namespace {

Result RunApplyKlPenalty(System system, const Case& c) {
  const oracle::KlEstimator e = oracle::ParseKlName(c.config.String("kl_penalty"));
  oracle::KlControl ctrl;
  ctrl.type = c.config.String("kl_ctrl_type");
  ctrl.kl_coef = c.config.Double("kl_coef");
  ctrl.target_kl = c.config.Double("target_kl");
  ctrl.horizon = static_cast<double>(c.config.Int("horizon"));
  const Array& mask = c.Input("response_mask");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> scores(system, ToFloat(c.Input("token_level_scores"))),
      old_lp(system, ToFloat(c.Input("old_log_probs"))), ref(system, ToFloat(c.Input("ref_log_prob"))),
      d_mask(system, ToFloat(mask));
  SystemBuffer<float> rewards(system, mask.data.size());
  float current_kl = 0.0f;
  RunEntry(system, [&](auto&& policy) {
    current_kl = apply_kl_penalty(policy, scores.data(), old_lp.data(), ref.data(), d_mask.data(), rows, cols,
                                  static_cast<KlKind>(e.kind), static_cast<float>(ctrl.kl_coef), rewards.data());
  });
  const double next_coef = oracle::kl_controller_update(ctrl, current_kl, static_cast<double>(rows));
  Result r;
  r.outputs["token_level_rewards"] = FromFloat(rewards.ToHost(), mask.shape, c.dtype);
  r.outputs["kl_coef"] = Array::Scalar(next_coef, c.dtype);
  r.metrics["actor/reward_kl_penalty"] = current_kl;
  r.metrics["actor/reward_kl_penalty_coeff"] = ctrl.kl_coef;  // the config value, used as given
  return r;
}

Result RunComputeRewards(System system, const Case& c) {
  const float kl_ratio = static_cast<float>(c.config.Double("kl_ratio"));
  const Array& scores = c.Input("token_level_scores");
  const SystemBuffer<float> d_scores(system, ToFloat(scores)), old_lp(system, ToFloat(c.Input("old_log_prob"))),
      ref(system, ToFloat(c.Input("ref_log_prob")));
  SystemBuffer<float> out(system, scores.data.size());
  RunEntry(system, [&](auto&& policy) {
    compute_rewards(policy, d_scores.data(), old_lp.data(), ref.data(), static_cast<int64_t>(scores.data.size()),
                    kl_ratio, out.data());
  });
  Result r;
  r.outputs["token_level_rewards"] = FromFloat(out.ToHost(), scores.shape, c.dtype);
  return r;
}

const bool registered = [] {
  RegisterCudaEntry("reward_kl", "apply_kl_penalty", RunApplyKlPenalty);
  RegisterCudaEntry("reward_kl", "compute_rewards", RunComputeRewards);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
