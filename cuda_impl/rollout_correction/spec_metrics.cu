// CUDA entries (cuda and cuda-host slots) for compute_is_metrics and compute_rs_metrics
// called directly, with the arguments, errors and metrics of oracle/rollout_correction/
// spec_metrics.cc: the tensors are whatever the case holds.
#include <map>
#include <optional>
#include <string>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/rollout_correction/is_weights.cuh"
#include "cuda_impl/rollout_correction/rejection.cuh"
#include "cuda_impl/rollout_correction/spec_common.cuh"
#include "oracle/core/errors.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::cuda {
namespace {

// verl's `rollout_is == "sequence"`: None (absent) and anything else are token level.
bool IsSequenceLevel(const Config& c) {
  const ConfigValue v = c.Value("rollout_is");
  const auto* s = std::get_if<std::string>(&v);
  return s && *s == "sequence";
}

// The case stores log_ratio_for_metrics under the name of its level's shape (as the
// oracle's entry requires).
void CheckIsLogRatioInputs(const Case& c) {
  const bool sequence = IsSequenceLevel(c.config);
  const std::string want = sequence ? "log_ratio_sum" : "log_ratio_for_metrics";
  const std::string other = sequence ? "log_ratio_for_metrics" : "log_ratio_sum";
  const std::string level = sequence ? "\"sequence\"" : "\"token\"";
  if (!c.OptionalInput(want))
    throw BadInput(c.Where() + ": inputs/" + want + ": missing (rollout_is " + level +
                   " passes it as log_ratio_for_metrics)");
  if (c.OptionalInput(other))
    throw BadInput(c.Where() + ": inputs/" + other + ": present, but rollout_is " + level + " passes inputs/" + want +
                   " as log_ratio_for_metrics");
}

Result RunIsMetrics(System system, const Case& c) {
  CheckIsLogRatioInputs(c);
  const bool sequence = IsSequenceLevel(c.config);
  const Array& mask = c.Input("response_mask");
  const std::optional<double> upper = c.config.OptionalDouble("rollout_is_threshold");
  const std::optional<double> lower = c.config.OptionalDouble("rollout_is_threshold_lower");
  if (!upper) {
    RequireValidToken(mask);
    if (!lower) throw VerlError("TypeError", "unsupported operand type(s) for /: 'float' and 'NoneType'");
    throw VerlError("RuntimeError", "Could not infer dtype of NoneType");  // torch.tensor(None)
  }
  RequireValidToken(mask);
  // `1.0 / rollout_is_threshold` in Python.
  if (!lower && *upper == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
  const double lower_py = lower ? *lower : 1.0 / *upper;
  const Array& log_ratio = c.Input(sequence ? "log_ratio_sum" : "log_ratio_for_metrics");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> w(system, ToFloat(c.Input("rollout_is_weights"))),
      raw(system, ToFloat(c.Input("raw_rollout_is_weights"))), lr(system, ToFloat(log_ratio)),
      mask_b(system, ToFloat(mask));
  const int64_t n_log = static_cast<int64_t>(log_ratio.data.size());
  Workspace ws(system);
  StreamScope stream(system);
  Result r;
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) {
    r.metrics = compute_is_metrics(policy, w.data(), raw.data(), lr.data(), n_log, mask_b.data(), rows, cols, sequence,
                                   *upper, lower_py);
  });
  return r;
}

Result RunRsMetrics(System system, const Case& c) {
  const Array& mask = c.Input("response_mask");
  const std::optional<double> upper = c.config.OptionalDouble("rollout_rs_threshold");
  const std::optional<double> lower = c.config.OptionalDouble("rollout_rs_threshold_lower");
  const bool apply_lower = c.config.OptionalBool("apply_lower_threshold").value_or(false);  // None is falsy
  // A None threshold reaches a tensor comparison (the fractions) after the mask check.
  if (!upper || (apply_lower && !lower)) {
    RequireValidToken(mask);
    throw VerlError("TypeError", std::string("'") + (upper ? "<" : ">") +
                                     "' not supported between instances of 'Tensor' and 'NoneType'");
  }
  const std::string option = oracle::PyStr(c.config.Value("option_name"));
  const ConfigValue level = c.config.Value("level");
  const auto* level_str = std::get_if<std::string>(&level);
  const bool sequence = level_str && *level_str == "sequence";
  const Array& stat = c.Input("rs_statistic");
  const Array& seq_valid = c.Input("seq_valid_mask");
  const Array* per_seq = c.OptionalInput("per_sequence_values");
  RequireValidToken(mask);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const int64_t seq_rows = per_seq ? static_cast<int64_t>(per_seq->data.size()) : rows;
  if (static_cast<int64_t>(seq_valid.data.size()) != seq_rows)
    throw BadInput("compute_rs_metrics: seq_valid_mask has " + std::to_string(seq_valid.data.size()) +
                   " rows but the per-sequence values have " + std::to_string(seq_rows));
  if (seq_rows != rows)
    throw BadInput("compute_rs_metrics: per_sequence_values has " + std::to_string(seq_rows) + " rows, the mask " +
                   std::to_string(rows));
  const SystemBuffer<float> stat_b(system, ToFloat(stat)), mask_b(system, ToFloat(mask)),
      valid_b(system, ToFloat(seq_valid)), seq_b(system, per_seq ? ToFloat(*per_seq) : std::vector<float>());
  Workspace ws(system);
  StreamScope stream(system);
  Result r;
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) {
    r.metrics = compute_rs_metrics(policy, option, stat_b.data(), mask_b.data(), valid_b.data(),
                                   per_seq ? seq_b.data() : nullptr, rows, cols, sequence, *upper, lower.value_or(0.0),
                                   apply_lower);
  });
  return r;
}

const bool registered = [] {
  RegisterCudaEntry("rollout_correction", "compute_is_metrics", RunIsMetrics);
  RegisterCudaEntry("rollout_correction", "compute_rs_metrics", RunRsMetrics);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
