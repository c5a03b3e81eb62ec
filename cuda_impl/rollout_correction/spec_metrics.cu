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
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf::cuda {
namespace {

Result RunIsMetrics(System system, const Case& c) {
  oracle::CheckIsLogRatioInputs(c);
  const bool sequence = oracle::IsSequenceLevel(c.config);
  const Array& mask = c.Input("response_mask");
  const oracle::IsMetricsThresholds t = oracle::ReadIsMetricsThresholds(c);
  oracle::RequireValidToken(mask);
  const double lower_py = oracle::IsMetricsLowerBound(t.upper, t.lower);
  const Array& log_ratio = c.Input(sequence ? "log_ratio_sum" : "log_ratio_for_metrics");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> w(system, ToFloat(c.Input("rollout_is_weights"))),
      raw(system, ToFloat(c.Input("raw_rollout_is_weights"))), lr(system, ToFloat(log_ratio)),
      mask_b(system, ToFloat(mask));
  const int64_t n_log = static_cast<int64_t>(log_ratio.data.size());
  Result r;
  RunEntry(system, [&](auto&& policy) {
    r.metrics = compute_is_metrics(policy, w.data(), raw.data(), lr.data(), n_log, mask_b.data(), rows, cols, sequence,
                                   t.upper, lower_py);
  });
  return r;
}

Result RunRsMetrics(System system, const Case& c) {
  const Array& mask = c.Input("response_mask");
  const oracle::RsMetricsArgs a = oracle::ReadRsMetricsArgs(c);
  const bool sequence = a.level == "sequence";
  const Array& stat = c.Input("rs_statistic");
  const Array& seq_valid = c.Input("seq_valid_mask");
  const Array* per_seq = c.OptionalInput("per_sequence_values");
  oracle::RequireValidToken(mask);
  const int64_t rows = mask.rows(), cols = mask.cols();
  const int64_t seq_rows = per_seq ? static_cast<int64_t>(per_seq->data.size()) : rows;
  oracle::CheckRsMetricsRows(seq_valid.data.size(), static_cast<size_t>(seq_rows));
  // Not verl's: the template takes its per-sequence values one per row of the mask.
  if (seq_rows != rows)
    throw BadInput("compute_rs_metrics: per_sequence_values has " + std::to_string(seq_rows) + " rows, the mask " +
                   std::to_string(rows));
  const SystemBuffer<float> stat_b(system, ToFloat(stat)), mask_b(system, ToFloat(mask)),
      valid_b(system, ToFloat(seq_valid)), seq_b(system, per_seq ? ToFloat(*per_seq) : std::vector<float>());
  Result r;
  RunEntry(system, [&](auto&& policy) {
    r.metrics =
        compute_rs_metrics(policy, a.option, stat_b.data(), mask_b.data(), valid_b.data(),
                           per_seq ? seq_b.data() : nullptr, rows, cols, sequence, a.upper, a.lower, a.apply_lower);
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
