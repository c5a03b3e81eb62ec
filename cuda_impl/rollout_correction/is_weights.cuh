// Importance-sampling weights (verl: compute_rollout_correction_weights) and their
// metrics (compute_is_metrics) on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states them. The weights are never stored before they are final:
// one per-row pass derives every token's raw and truncated weight on the fly and reduces
// all the metrics' sums and extrema at once, a second pass the sums about the mean (std
// and ESS), and a last transform writes the (normalised) weights.
#pragma once

#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/rollout_correction/reductions.cuh"
#include "oracle/core/errors.h"

namespace verlconf::cuda {

// The bounds as verl's tensors see them: Python floats in float32.
struct IsBounds {
  bool icepop = false;
  float upper = 2.0f;         // TIS clamp / IcePop upper bound, and the metrics' high threshold
  float lower = 0.0f;         // IcePop lower bound
  float metric_lower = 0.5f;  // the metrics' low threshold: IcePop's lower, else 1 / upper
};

// TIS: min(w, upper); IcePop: w inside [lower, upper], else 0.
__host__ __device__ inline float TruncateWeight(const IsBounds& b, float raw) {
  if (!b.icepop) return TorchClampMax(raw, b.upper);
  return (raw >= b.lower && raw <= b.upper) ? raw : 0.0f;
}

// (raw, applied) weights of a token computed from a token log-ratio.
template <class LrIt>
struct TokenLevelWeights {
  LrIt lr;
  const float* mask;
  IsBounds b;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float raw = SafeExp(lr[k]) * mask[k];
    return thrust::make_tuple(raw, TruncateWeight(b, raw));
  }
};

// The same from the row's log-ratio sum (sequence level).
struct SequenceLevelWeights {
  const float* row_sum;
  const float* mask;
  int64_t cols;
  IsBounds b;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float raw = SafeExp(row_sum[k / cols]) * mask[k];
    return thrust::make_tuple(raw, TruncateWeight(b, raw));
  }
};

// Weights a caller computed (compute_is_metrics called directly).
struct GivenWeights {
  const float* raw;
  const float* applied;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    return thrust::make_tuple(raw[k], applied[k]);
  }
};

// What one pass over the tokens of a row gathers for compute_is_metrics: masked sums of
// the applied weight, the raw weight, the mask, the ratio-fraction indicators, the
// weight clamped to [0, upper] (std / ESS) and IcePop's out-of-band indicator; the
// applied weights' extrema over valid tokens.
struct IsTerms {
  float w, raw, m, high, low, clamped, oob, max, min;
};

struct IsTermsOp {
  __host__ __device__ IsTerms operator()(const IsTerms& a, const IsTerms& b) const {
    return {a.w + b.w,       a.raw + b.raw,        a.m + b.m,
            a.high + b.high, a.low + b.low,        a.clamped + b.clamped,
            a.oob + b.oob,   NanMax(a.max, b.max), NanMin(a.min, b.min)};
  }
};

template <class WeightsAt>
struct IsTokenTerms {
  WeightsAt at;
  const float* mask;
  IsBounds b;
  __host__ __device__ IsTerms operator()(int64_t k) const {
    const thrust::tuple<float, float> rw = at(k);
    const float raw = thrust::get<0>(rw), w = thrust::get<1>(rw), m = mask[k];
    const bool valid = m != 0.0f;
    IsTerms t;
    t.w = MaskedTerm(w, m);
    t.raw = MaskedTerm(raw, m);
    t.m = m;
    t.high = MaskedTerm(raw > b.upper ? 1.0f : 0.0f, m);
    t.low = MaskedTerm(raw < b.metric_lower ? 1.0f : 0.0f, m);
    t.clamped = MaskedTerm(TorchClamp(w, 0.0f, b.upper), m);
    t.oob = MaskedTerm((raw < b.lower || raw > b.upper) ? 1.0f : 0.0f, m);
    t.max = valid ? w : -PosInf();
    t.min = valid ? w : PosInf();
    return t;
  }
};

// Second pass: (masked (c - mean)^2, masked (c / (mean + 1e-8))^2) of the clamped
// applied weight c: the std's sum about its mean and the ESS denominator's sum.
template <class WeightsAt>
struct IsSpreadTerms {
  WeightsAt at;
  const float* mask;
  float upper, mean;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float m = mask[k];
    const float c = TorchClamp(thrust::get<1>(at(k)), 0.0f, upper);
    const float d = c - mean;
    const float n = c / (mean + kMaskedMeanEps);
    return thrust::make_tuple(MaskedTerm(d * d, m), MaskedTerm(n * n, m));
  }
};

// One row's figures from its IsTerms: the mean applied and raw weight (masked_mean along
// the row), and whether it has a valid token.
struct IsRowStats {
  float seq_w, seq_raw, alive;
};

struct IsRowOf {
  __host__ __device__ IsRowStats operator()(const IsTerms& t) const {
    return {MeanOf(t.w, t.m), MeanOf(t.raw, t.m), t.m > 0.0f ? 1.0f : 0.0f};
  }
};

// Over the rows: sum, extrema and largest |x - 1| of the row means, the raw row means'
// fraction counts, and the batch-normalisation mean's sums (rows with a valid token).
struct IsRowSums {
  float sum, max, min, max_dev, high, low, alive_sum, alive;
};

struct IsRowSumsOp {
  __host__ __device__ IsRowSums operator()(const IsRowSums& a, const IsRowSums& b) const {
    return {a.sum + b.sum,   NanMax(a.max, b.max), NanMin(a.min, b.min),      NanMax(a.max_dev, b.max_dev),
            a.high + b.high, a.low + b.low,        a.alive_sum + b.alive_sum, a.alive + b.alive};
  }
};

struct IsRowSumsOf {
  float upper, lower;
  __host__ __device__ IsRowSums operator()(const IsTerms& t) const {
    const IsRowStats r = IsRowOf()(t);
    return {r.seq_w,
            r.seq_w,
            r.seq_w,
            fabsf(r.seq_w - 1.0f),
            r.seq_raw > upper ? 1.0f : 0.0f,
            r.seq_raw < lower ? 1.0f : 0.0f,
            r.seq_w * r.alive,
            r.alive};
  }
};

// (row mean - mean)^2: torch's unbiased std over rows.
struct IsRowSpread {
  float mean;
  __host__ __device__ float operator()(const IsTerms& t) const {
    const float d = IsRowOf()(t).seq_w - mean;
    return d * d;
  }
};

// The sequence-level log-ratios the metrics read: extrema and the counts against the
// float32 log thresholds.
struct LogSums {
  float max, min, high, low;
};

struct LogSumsOp {
  __host__ __device__ LogSums operator()(const LogSums& a, const LogSums& b) const {
    return {NanMax(a.max, b.max), NanMin(a.min, b.min), a.high + b.high, a.low + b.low};
  }
};

struct LogSumsOf {
  float log_upper, log_lower;
  __host__ __device__ LogSums operator()(float s) const {
    return {s, s, s > log_upper ? 1.0f : 0.0f, s < log_lower ? 1.0f : 0.0f};
  }
};

// torch.log(torch.tensor(x)): the log of a float32 tensor made from a Python float.
inline float TorchDefaultDtypeLog(double x) { return std::log(static_cast<float>(x)); }

// What the metrics pass leaves for the weights' final transform.
struct IsMetricsOut {
  std::map<std::string, double> metrics;
  float weights_mean = 0.0f;    // masked_mean of the applied weights (token batch norm)
  float alive_row_mean = 0.0f;  // mean row weight over rows with a valid token (sequence)
  float oob_fraction = 0.0f;    // IcePop's rollout_is_oob_ratio
};

// verl: compute_is_metrics on the weights `at` yields. `log_for_metrics` (n_log values,
// system memory) is read at sequence level only; upper_py / lower_py are the Python
// floats (the log thresholds are taken from them).
template <class Policy, class WeightsAt>
IsMetricsOut IsMetrics(Policy&& policy, WeightsAt at, const float* mask, int64_t rows, int64_t cols, const IsBounds& b,
                       bool sequence, const float* log_for_metrics, int64_t n_log, double upper_py, double lower_py) {
  using P = std::remove_reference_t<Policy>;
  PolicyScratch<IsTerms, P> row_terms(policy, rows);
  RowReduce(policy, IndexIterator(IsTokenTerms<WeightsAt>{at, mask, b}), rows, cols, row_terms.get(), IsTermsOp());
  const IsTerms z{0, 0, 0, 0, 0, 0, 0, -PosInf(), PosInf()};
  const IsTerms t = thrust::reduce(policy, row_terms.get(), row_terms.get() + rows, z, IsTermsOp());

  IsMetricsOut out;
  std::map<std::string, double>& m = out.metrics;
  const float mean_w = MeanOf(t.w, t.m);
  m["rollout_is_mean"] = mean_w;
  if (sequence) {
    const LogSums ls =
        thrust::transform_reduce(policy, log_for_metrics, log_for_metrics + n_log,
                                 LogSumsOf{TorchDefaultDtypeLog(upper_py), TorchDefaultDtypeLog(lower_py)},
                                 LogSums{-PosInf(), PosInf(), 0.0f, 0.0f}, LogSumsOp());
    m["rollout_is_max"] = expf(TorchClampMax(ls.max, kRolloutSafetyBoundF));
    m["rollout_is_min"] = expf(ls.min);
    m["rollout_is_ratio_fraction_high"] = Float32Fraction(ls.high, static_cast<double>(n_log));
    m["rollout_is_ratio_fraction_low"] = Float32Fraction(ls.low, static_cast<double>(n_log));
  } else {
    m["rollout_is_ratio_fraction_high"] = MeanOf(t.high, t.m);
    m["rollout_is_ratio_fraction_low"] = MeanOf(t.low, t.m);
    m["rollout_is_max"] = t.max;
    m["rollout_is_min"] = t.min;
  }

  // Std and ESS of the applied weights clamped to [0, upper].
  const float mean_c = MeanOf(t.clamped, t.m);
  const thrust::tuple<float, float> spread =
      ChunkedSum(policy, IndexIterator(IsSpreadTerms<WeightsAt>{at, mask, b.upper, mean_c}), rows * cols,
                 thrust::make_tuple(0.0f, 0.0f));
  m["rollout_is_std"] = t.m > 1.0f ? MaskedStdOf(thrust::get<0>(spread), mean_c, t.m) : 0.0f;
  // A Python float division (`1.0 / tensor.item()`): raises where torch would give inf.
  const float ess_den = MeanOf(thrust::get<1>(spread), t.m);
  m["rollout_is_eff_sample_size"] = PyFloatDivide(1.0, static_cast<double>(ess_den));

  // Per-row means over every row, padding-only rows (mean 0) included.
  const IsRowSums rs =
      thrust::transform_reduce(policy, row_terms.get(), row_terms.get() + rows, IsRowSumsOf{b.upper, b.metric_lower},
                               IsRowSums{0, -PosInf(), PosInf(), -PosInf(), 0, 0, 0, 0}, IsRowSumsOp());
  const float seq_mean = rs.sum / static_cast<float>(rows);
  m["rollout_is_seq_mean"] = seq_mean;
  if (rows > 1) {
    const float ss = thrust::transform_reduce(policy, row_terms.get(), row_terms.get() + rows, IsRowSpread{seq_mean},
                                              0.0f, thrust::plus<float>());
    m["rollout_is_seq_std"] = std::sqrt(ss / static_cast<float>(rows - 1));
  } else {
    m["rollout_is_seq_std"] = 0.0;
  }
  m["rollout_is_seq_max"] = rs.max;
  m["rollout_is_seq_min"] = rs.min;
  m["rollout_is_seq_max_deviation"] = rs.max_dev;
  m["rollout_is_seq_fraction_high"] = Float32Fraction(rs.high, static_cast<double>(rows));
  m["rollout_is_seq_fraction_low"] = Float32Fraction(rs.low, static_cast<double>(rows));

  out.weights_mean = mean_w;
  out.alive_row_mean = rs.alive_sum / (rs.alive > 1e-8f ? rs.alive : 1e-8f);
  out.oob_fraction = MeanOf(t.oob, t.m);
  return out;
}

// weights[k]: the applied weight, divided by the batch mean when normalising.
template <class WeightsAt>
struct ScaledWeight {
  WeightsAt at;
  bool divide;
  float mean;
  __host__ __device__ float operator()(int64_t k) const {
    const float w = thrust::get<1>(at(k));
    return divide ? w / mean : w;
  }
};

// A parsed rollout_is configuration (host side: oracle::ParseRolloutIsThreshold).
struct IsConfig {
  bool sequence = false;
  IsBounds bounds;
  double upper_py = 2.0;         // the Python floats, for the float32 log thresholds
  double metric_lower_py = 0.5;  // IcePop's lower, else 1 / upper
};

// Per-row masked sums of the log-ratio (sequence level).
template <class LrIt>
struct MaskedLogRatio {
  LrIt lr;
  const float* mask;
  __host__ __device__ float operator()(int64_t k) const { return MaskedTerm(lr[k], mask[k]); }
};

template <class Policy, class WeightsAt>
std::map<std::string, double> FinishWeights(Policy&& policy, WeightsAt at, const float* mask, int64_t rows,
                                            int64_t cols, const IsConfig& cfg, bool batch_normalize, const float* sums,
                                            float* weights) {
  IsMetricsOut r =
      IsMetrics(policy, at, mask, rows, cols, cfg.bounds, cfg.sequence, sums, rows, cfg.upper_py, cfg.metric_lower_py);
  if (cfg.bounds.icepop) r.metrics["rollout_is_oob_ratio"] = r.oob_fraction;
  // After the metrics: they describe the weights before normalisation, as in verl.
  bool divide = false;
  float mean = 1.0f;
  if (batch_normalize) {
    const float weights_mean = cfg.sequence ? r.alive_row_mean : r.weights_mean;
    if (static_cast<double>(weights_mean) > 1e-8) {
      divide = true;
      mean = weights_mean;
      r.metrics["rollout_is_batch_norm_factor"] = weights_mean;
    } else {
      r.metrics["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  const int64_t n = rows * cols;
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), weights,
                    ScaledWeight<WeightsAt>{at, divide, mean});
  return std::move(r.metrics);
}

// verl: compute_rollout_correction_weights (non-distributed) on log-ratios `lr` (any
// random-access iterator of float) and the mask, rows x cols; writes the detached
// weights and returns the metrics. The caller has checked that the mask has a valid
// token and parsed the configuration.
template <class Policy, class LrIt>
std::map<std::string, double> compute_rollout_correction_weights(Policy&& policy, LrIt lr, const float* mask,
                                                                 int64_t rows, int64_t cols, const IsConfig& cfg,
                                                                 bool batch_normalize, float* weights) {
  using P = std::remove_reference_t<Policy>;
  PolicyScratch<float, P> sums(policy, rows);
  if (!cfg.sequence)
    return FinishWeights(policy, TokenLevelWeights<LrIt>{lr, mask, cfg.bounds}, mask, rows, cols, cfg, batch_normalize,
                         sums.get(), weights);
  RowReduce(policy, IndexIterator(MaskedLogRatio<LrIt>{lr, mask}), rows, cols, sums.get(), thrust::plus<float>());
  return FinishWeights(policy, SequenceLevelWeights{sums.get(), mask, cols, cfg.bounds}, mask, rows, cols, cfg,
                       batch_normalize, sums.get(), weights);
}

// verl: compute_is_metrics on given tensors (B x T weights and mask; at sequence level
// the n_log log-ratio sums). The caller has raised verl's argument errors.
template <class Policy>
std::map<std::string, double> compute_is_metrics(Policy&& policy, const float* weights, const float* raw_weights,
                                                 const float* log_for_metrics, int64_t n_log, const float* mask,
                                                 int64_t rows, int64_t cols, bool sequence, double upper_py,
                                                 double lower_py) {
  IsBounds b;
  b.upper = static_cast<float>(upper_py);
  b.metric_lower = static_cast<float>(lower_py);
  b.lower = b.metric_lower;
  return IsMetrics(policy, GivenWeights{raw_weights, weights}, mask, rows, cols, b, sequence, log_for_metrics, n_log,
                   upper_py, lower_py)
      .metrics;
}

}  // namespace verlconf::cuda
