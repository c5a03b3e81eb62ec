// The rollout_correction family's CUDA entries for verl's rollout_corr_helper functions
// (cuda and cuda-host slots), with the outputs and metrics of oracle/rollout_correction/
// spec.cc: IS weights, rejection sampling (the chained entry and one per option), the
// off-policy metrics, and the pipeline (also run by the decoupled presets).
#include <map>
#include <string>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/rollout_correction/entries.h"
#include "cuda_impl/rollout_correction/is_weights.cuh"
#include "cuda_impl/rollout_correction/pipeline.cuh"
#include "cuda_impl/rollout_correction/rejection.cuh"
#include "cuda_impl/rollout_correction/spec_common.cuh"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf::cuda {

Result RunCorrectionPipeline(System system, const Array& old_log_prob, const Array& rollout_log_prob,
                             const Array& response_mask, const oracle::RolloutCorrectionSettings& settings,
                             const std::string& mask_output, DType dtype) {
  oracle::CheckPipelineInputs(old_log_prob, rollout_log_prob, response_mask);
  const CorrectionPlan plan = PlanCorrection(settings);
  const int64_t rows = response_mask.rows(), cols = response_mask.cols();
  const size_t n = response_mask.data.size();
  const SystemBuffer<float> old_b(system, ToFloat(old_log_prob)), rollout_b(system, ToFloat(rollout_log_prob)),
      mask_b(system, ToFloat(response_mask));
  SystemBuffer<float> weights(system, plan.is ? n : 0), modified(system, n);
  std::map<std::string, double> metrics;
  RunEntry(system, [&](auto&& policy) {
    metrics = compute_rollout_correction_and_rejection_mask(policy, old_b.data(), rollout_b.data(), mask_b.data(), rows,
                                                            cols, plan, weights.data(), modified.data());
  });
  Result r;
  if (plan.is) r.outputs["rollout_is_weights"] = FromFloat(weights.ToHost(), response_mask.shape, dtype);
  r.outputs[mask_output] = FromFloat(modified.ToHost(), response_mask.shape, dtype);
  r.metrics = std::move(metrics);
  return r;
}

namespace {

Result RunWeights(System system, const Case& c) {
  const IsConfig cfg = ParseIsConfig(c.config.Value("rollout_is"), c.config.Value("rollout_is_threshold"));
  const bool batch_normalize = c.config.Bool("rollout_is_batch_normalize");
  const Array& lr = c.Input("log_ratio");
  const Array& mask = c.Input("response_mask");
  oracle::RequireValidToken(mask);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> lr_b(system, ToFloat(lr)), mask_b(system, ToFloat(mask));
  SystemBuffer<float> weights(system, mask.data.size());
  std::map<std::string, double> metrics;
  RunEntry(system, [&](auto&& policy) {
    metrics = compute_rollout_correction_weights(policy, lr_b.data(), mask_b.data(), rows, cols, cfg, batch_normalize,
                                                 weights.data());
  });
  Result r;
  r.outputs["rollout_is_weights"] = FromFloat(weights.ToHost(), mask.shape, c.dtype);
  r.metrics = std::move(metrics);
  return r;
}

Result RunRejection(System system, const Case& c, const ConfigValue& rollout_rs) {
  const std::vector<RsOption> options = ParseRsOptions(rollout_rs, c.config.Value("rollout_rs_threshold"));
  const Array& lr = c.Input("log_ratio");
  const Array& mask = c.Input("response_mask");
  oracle::RequireValidToken(mask);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> lr_b(system, ToFloat(lr)), mask_b(system, ToFloat(mask));
  SystemBuffer<float> out(system, mask.data.size());
  std::map<std::string, double> metrics;
  RunEntry(system, [&](auto&& policy) {
    metrics = compute_rollout_rejection_mask(policy, lr_b.data(), mask_b.data(), rows, cols, options, out.data());
  });
  Result r;
  r.outputs["modified_response_mask"] = FromFloat(out.ToHost(), mask.shape, c.dtype);
  r.metrics = std::move(metrics);
  return r;
}

// compute_offpolicy_metrics (rollout log-probs optional) with every key under `prefix`.
std::map<std::string, double> Offpolicy(System system, const Array& old_lp, const Array* rollout_lp, const Array& mask,
                                        const std::string& prefix) {
  oracle::CheckOffpolicyMask(mask);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> old_b(system, ToFloat(old_lp)), mask_b(system, ToFloat(mask)),
      rollout_b(system, rollout_lp ? ToFloat(*rollout_lp) : std::vector<float>());
  std::map<std::string, double> metrics;
  RunEntry(system, [&](auto&& policy) {
    metrics = compute_offpolicy_metrics(policy, old_b.data(), rollout_lp ? rollout_b.data() : nullptr, mask_b.data(),
                                        rows, cols);
  });
  std::map<std::string, double> out;
  for (const auto& [k, v] : metrics) out[prefix + k] = v;
  return out;
}

Result RunOffpolicy(System system, const Case& c) {
  Result r;
  r.metrics =
      Offpolicy(system, c.Input("old_log_prob"), c.OptionalInput("rollout_log_prob"), c.Input("response_mask"), "");
  return r;
}

Result RunMetricsFromLogprobs(System system, const Case& c) {
  Result r;
  r.metrics =
      Offpolicy(system, c.Input("log_prob"), &c.Input("rollout_log_prob"), c.Input("response_mask"), "rollout_corr/");
  return r;
}

Result RunPipeline(System system, const Case& c) {
  return RunCorrectionPipeline(system, c.Input("old_log_prob"), c.Input("rollout_log_prob"), c.Input("response_mask"),
                               oracle::ReadRolloutSettings(c.config), "modified_response_mask", c.dtype);
}

const bool registered = [] {
  const std::string f = "rollout_correction";
  RegisterCudaEntry(f, "compute_rollout_correction_weights", RunWeights);
  RegisterCudaEntry(f, "compute_rollout_rejection_mask",
                    [](System s, const Case& c) { return RunRejection(s, c, c.config.Value("rollout_rs")); });
  for (const char* o : oracle::kRolloutRsOptions) {
    const std::string option = o;
    RegisterCudaEntry(f, option, [option](System s, const Case& c) { return RunRejection(s, c, option); });
  }
  RegisterCudaEntry(f, "compute_offpolicy_metrics", RunOffpolicy);
  RegisterCudaEntry(f, "compute_rollout_corr_metrics_from_logprobs", RunMetricsFromLogprobs);
  RegisterCudaEntry(f, "compute_rollout_correction_and_rejection_mask", RunPipeline);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
