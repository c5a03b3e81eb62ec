// Importance-sampling weights (verl: compute_rollout_correction_weights) and their
// metrics (compute_is_metrics) on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states them. The IS stage of the row pass (reductions.cuh)
// writes each token's weight and gathers every metric's sums, extrema and spread at once;
// the metrics are finished on the host from the rows' partials. Token level takes one
// pass; sequence level a pass for the rows' log-ratio sums, then one over the mask that
// writes the weights. Batch normalisation, whose mean needs the whole batch, adds one.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
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

// A parsed rollout_is configuration (host side: oracle::ParseRolloutIsThreshold).
struct IsConfig {
  bool sequence = false;
  IsBounds bounds;
  double upper_py = 2.0;         // the Python floats, for the float32 log thresholds
  double metric_lower_py = 0.5;  // IcePop's lower, else 1 / upper
};

// TIS: min(w, upper); IcePop: w inside [lower, upper], else 0.
__host__ __device__ inline float TruncateWeight(const IsBounds& b, float raw) {
  if (!b.icepop) return TorchClampMax(raw, b.upper);
  return (raw >= b.lower && raw <= b.upper) ? raw : 0.0f;
}

// What a token gives compute_is_metrics: masked sums of the applied weight, the raw
// weight, the ratio-fraction indicators, the weight clamped to [0, upper] (std and ESS,
// with its spread) and IcePop's out-of-band indicator; the applied weights' extrema over
// valid tokens.
struct IsTerms {
  float w, raw, high, low, clamped, oob, max, min;
  Spread spread;

  __host__ __device__ static IsTerms Identity() { return {0, 0, 0, 0, 0, 0, -PosInf(), PosInf(), {0, 0}}; }
  __host__ __device__ static IsTerms Merge(const IsTerms& a, const IsTerms& b, const MaskWeights& mw) {
    return {a.w + b.w,
            a.raw + b.raw,
            a.high + b.high,
            a.low + b.low,
            a.clamped + b.clamped,
            a.oob + b.oob,
            NanMax(a.max, b.max),
            NanMin(a.min, b.min),
            MergeSpread(a.spread, b.spread, mw)};
  }
};

__host__ __device__ inline IsTerms IsTermsOf(float raw, float w, float m, const IsBounds& b) {
  const bool valid = m != 0.0f;
  const float c = TorchClamp(w, 0.0f, b.upper);
  IsTerms t;
  t.w = MaskedTerm(w, m);
  t.raw = MaskedTerm(raw, m);
  t.high = MaskedTerm(raw > b.upper ? 1.0f : 0.0f, m);
  t.low = MaskedTerm(raw < b.metric_lower ? 1.0f : 0.0f, m);
  t.clamped = MaskedTerm(c, m);
  t.oob = MaskedTerm((raw < b.lower || raw > b.upper) ? 1.0f : 0.0f, m);
  t.max = valid ? w : -PosInf();
  t.min = valid ? w : PosInf();
  t.spread = {valid ? c : 0.0f, 0.0f};
  return t;
}

// ---- the IS stages of a row pass

// Token level: raw = exp(clamp(lr, +-20)) * mask, truncated; the weight is written when
// `weights` is set (before any batch normalisation).
struct IsTokenStage {
  IsBounds b;
  float* weights;
  using Terms = IsTerms;
  __host__ __device__ float Weight(int64_t, const TokenIn& x, float m) const {
    return TruncateWeight(b, SafeExp(x.lr) * m);
  }
  __host__ __device__ IsTerms operator()(int64_t, int64_t k, const TokenIn& x, float m) const {
    const float raw = SafeExp(x.lr) * m;
    const float w = TruncateWeight(b, raw);
    if (weights) weights[k] = w;
    return IsTermsOf(raw, w, m, b);
  }
  void Declare(Footprint& f, int64_t, int64_t n) const {
    if (weights) f.Writes<float>(n);
  }
};

// Sequence level, once each row's weight exp(clamp(row sum, +-20)) is known.
struct IsSequenceStage {
  IsBounds b;
  const float* row_weight;
  float* weights;  // may be null
  using Terms = IsTerms;
  __host__ __device__ float Weight(int64_t i, const TokenIn&, float m) const {
    return TruncateWeight(b, row_weight[i] * m);
  }
  __host__ __device__ IsTerms operator()(int64_t i, int64_t k, const TokenIn&, float m) const {
    const float raw = row_weight[i] * m;
    const float w = TruncateWeight(b, raw);
    if (weights) weights[k] = w;
    return IsTermsOf(raw, w, m, b);
  }
  void Declare(Footprint& f, int64_t rows, int64_t n) const {
    f.Reads<float>(rows);
    if (weights) f.Writes<float>(n);
  }
};

// Weights a caller computed (compute_is_metrics called directly).
struct IsGivenStage {
  IsBounds b;
  const float* weights;
  const float* raw;
  using Terms = IsTerms;
  __host__ __device__ IsTerms operator()(int64_t, int64_t k, const TokenIn&, float m) const {
    return IsTermsOf(raw[k], weights[k], m, b);
  }
  void Declare(Footprint& f, int64_t, int64_t n) const { f.Reads<float>(n, 2); }
};

// ---- compute_is_metrics on the host, from the rows' partials

// torch.log(torch.tensor(x)): the log of a float32 tensor made from a Python float.
inline float TorchDefaultDtypeLog(double x) { return std::log(static_cast<float>(x)); }

struct IsMetricsOut {
  std::map<std::string, double> metrics;
  float weights_mean = 0.0f;    // masked_mean of the applied weights (token batch norm)
  float alive_row_mean = 0.0f;  // mean row weight over rows with a valid token (sequence)
  float oob_fraction = 0.0f;    // IcePop's rollout_is_oob_ratio
};

// verl: compute_is_metrics from the rows' partials (parts[i].m, parts[i].is), combined in
// row order in double. At sequence level `log_values` are the log-ratios the max / min
// and ratio fractions read (the rows' sums); upper_py / lower_py are the Python floats
// the float32 log thresholds are taken from.
template <class Row>
IsMetricsOut IsMetricsOf(const std::vector<Row>& parts, const IsBounds& b, bool sequence,
                         const std::vector<float>& log_values, double upper_py, double lower_py) {
  double m = 0, w = 0, high = 0, low = 0, clamped = 0, oob = 0;
  float max = -PosInf(), min = PosInf();
  SpreadTotal spread;
  for (const Row& r : parts) {
    const IsTerms& t = r.is;
    m += r.m;
    w += t.w;
    high += t.high;
    low += t.low;
    clamped += t.clamped;
    oob += t.oob;
    max = NanMax(max, t.max);
    min = NanMin(min, t.min);
    spread.Add(r.m, t.spread);
  }

  IsMetricsOut out;
  std::map<std::string, double>& metric = out.metrics;
  const float mean_w = MeanOfSums(w, m);
  metric["rollout_is_mean"] = mean_w;
  if (sequence) {
    const float log_upper = TorchDefaultDtypeLog(upper_py), log_lower = TorchDefaultDtypeLog(lower_py);
    float log_max = -PosInf(), log_min = PosInf();
    double n_high = 0, n_low = 0;
    for (float s : log_values) {
      log_max = NanMax(log_max, s);
      log_min = NanMin(log_min, s);
      n_high += s > log_upper ? 1 : 0;
      n_low += s < log_lower ? 1 : 0;
    }
    const double n = static_cast<double>(log_values.size());
    metric["rollout_is_max"] = expf(TorchClampMax(log_max, kRolloutSafetyBoundF));
    metric["rollout_is_min"] = expf(log_min);
    metric["rollout_is_ratio_fraction_high"] = Float32Fraction(n_high, n);
    metric["rollout_is_ratio_fraction_low"] = Float32Fraction(n_low, n);
  } else {
    metric["rollout_is_ratio_fraction_high"] = MeanOfSums(high, m);
    metric["rollout_is_ratio_fraction_low"] = MeanOfSums(low, m);
    metric["rollout_is_max"] = max;
    metric["rollout_is_min"] = min;
  }

  // Std and ESS of the applied weights clamped to [0, upper].
  metric["rollout_is_std"] = static_cast<float>(m) > 1.0f ? MaskedStdOf(clamped, m, spread) : 0.0;
  const double denom = m + kMaskedMeanEpsD;
  const double scale = clamped / denom + kMaskedMeanEpsD;
  // A Python float division (`1.0 / tensor.item()`): raises where torch would give inf.
  metric["rollout_is_eff_sample_size"] = PyFloatDivide(1.0, spread.Squares() / (scale * scale) / denom);

  // Per-row means over every row, padding-only rows (mean 0) included.
  const double rows = static_cast<double>(parts.size());
  std::vector<float> seq_w(parts.size());
  double seq_sum = 0, alive_sum = 0, alive = 0, seq_high = 0, seq_low = 0;
  float seq_max = -PosInf(), seq_min = PosInf(), max_dev = -PosInf();
  for (size_t i = 0; i < parts.size(); ++i) {
    const float s = MeanOf(parts[i].is.w, parts[i].m), s_raw = MeanOf(parts[i].is.raw, parts[i].m);
    const float a = parts[i].m > 0.0f ? 1.0f : 0.0f;
    seq_w[i] = s;
    seq_sum += s;
    alive_sum += s * a;
    alive += a;
    seq_max = NanMax(seq_max, s);
    seq_min = NanMin(seq_min, s);
    max_dev = NanMax(max_dev, fabsf(s - 1.0f));
    seq_high += s_raw > b.upper ? 1 : 0;
    seq_low += s_raw < b.metric_lower ? 1 : 0;
  }
  const double seq_mean = seq_sum / rows;
  metric["rollout_is_seq_mean"] = seq_mean;
  double ss = 0;
  for (float s : seq_w) ss += (s - seq_mean) * (s - seq_mean);
  metric["rollout_is_seq_std"] = parts.size() > 1 ? std::sqrt(ss / (rows - 1.0)) : 0.0;
  metric["rollout_is_seq_max"] = seq_max;
  metric["rollout_is_seq_min"] = seq_min;
  metric["rollout_is_seq_max_deviation"] = max_dev;
  metric["rollout_is_seq_fraction_high"] = Float32Fraction(seq_high, rows);
  metric["rollout_is_seq_fraction_low"] = Float32Fraction(seq_low, rows);

  out.weights_mean = mean_w;
  out.alive_row_mean = static_cast<float>(alive_sum / (alive > 1e-8 ? alive : 1e-8));
  out.oob_fraction = MeanOfSums(oob, m);
  return out;
}

// ---- compute_rollout_correction_weights

// The batch normalisation verl applies after the metrics (they describe the weights
// before it): divide by `mean` when `divide`.
struct IsScale {
  bool divide = false;
  float mean = 1.0f;
};

inline IsScale FinishIsMetrics(IsMetricsOut& r, const IsConfig& cfg, bool batch_normalize) {
  if (cfg.bounds.icepop) r.metrics["rollout_is_oob_ratio"] = r.oob_fraction;
  IsScale s;
  if (batch_normalize) {
    const float weights_mean = cfg.sequence ? r.alive_row_mean : r.weights_mean;
    if (static_cast<double>(weights_mean) > 1e-8) {
      s.divide = true;
      s.mean = weights_mean;
      r.metrics["rollout_is_batch_norm_factor"] = weights_mean;
    } else {
      r.metrics["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  return s;
}

// weights[k] /= mean, in place.
struct DivideWeights {
  float* weights;
  int64_t cols;
  float mean;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    weights[k] = weights[k] / mean;
  }
};

// Token level, after the row pass whose IS stage wrote the truncated weights and
// gathered their terms (parts[i].is): the metrics, then the batch normalisation in place
// (one read and one write of the weights, cheaper than recomputing them from the inputs).
// Null `weights`: the metrics alone (a caller that does not read the weights), and the
// normalisation in `scale` where given (a caller that applies it itself).
template <class Policy, class Row>
std::map<std::string, double> TokenIsWeightsAfterPass(Policy&& policy, const std::vector<Row>& parts, int64_t rows,
                                                      int64_t cols, const IsConfig& cfg, bool batch_normalize,
                                                      float* weights, IsScale* scale = nullptr) {
  IsMetricsOut r = IsMetricsOf(parts, cfg.bounds, false, {}, cfg.upper_py, cfg.metric_lower_py);
  const IsScale s = FinishIsMetrics(r, cfg, batch_normalize);
  if (scale) *scale = s;
  if (s.divide && weights)
    RowMap(policy, rows, cols, DivideWeights{weights, cols, s.mean},
           Footprint().Reads<float>(rows * cols).Writes<float>(rows * cols));
  return std::move(r.metrics);
}

// The sequence-level weight of (i, t), normalised when `divide`.
struct SequenceWeight {
  IsBounds b;
  const float* row_weight;
  const float* mask;
  float* weights;
  int64_t cols;
  bool divide;
  float mean;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float w = TruncateWeight(b, row_weight[i] * mask[k]);
    weights[k] = divide ? w / mean : w;
  }
};

// Sequence level, once the rows' log-ratio sums are known: `sums` on the host and each
// row's weight exp(clamp(sum, +-20)) in `row_weight` (rows values, policy memory). One
// pass over the mask gathers the weights' terms and writes them; with batch
// normalisation it writes nothing and a last pass writes them divided (rereading the
// mask costs less than rereading the weights would). Null `weights`: the metrics alone.
template <class Policy>
std::map<std::string, double> SequenceIsWeights(Policy&& policy, const std::vector<float>& sums,
                                                const float* row_weight, const float* mask, int64_t rows, int64_t cols,
                                                const IsConfig& cfg, bool batch_normalize, float* weights) {
  const auto parts =
      FusedRowPass(policy, rows, cols, NoSource{}, mask,
                   IsSequenceStage{cfg.bounds, row_weight, batch_normalize ? nullptr : weights}, NoStage{}, NoStage{});
  IsMetricsOut r = IsMetricsOf(parts, cfg.bounds, true, sums, cfg.upper_py, cfg.metric_lower_py);
  const IsScale s = FinishIsMetrics(r, cfg, batch_normalize);
  if (batch_normalize && weights)
    RowMap(policy, rows, cols, SequenceWeight{cfg.bounds, row_weight, mask, weights, cols, s.divide, s.mean},
           Footprint().Reads<float>(rows * cols).Reads<float>(rows).Writes<float>(rows * cols));
  return std::move(r.metrics);
}

// A row's masked log-ratio sum, and the sequence weight it gives.
struct MaskedLogRatioAt {
  const float* lr;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return MaskedTerm(lr[k], mask[k]);
  }
};
struct StoreSumAndWeight {
  float* sums;
  float* row_weight;
  __host__ __device__ void operator()(int64_t i, float s) const {
    sums[i] = s;
    row_weight[i] = SafeExp(s);
  }
};

// verl: compute_rollout_correction_weights (non-distributed) on the log-ratios `lr` and
// the mask, rows x cols; writes the detached weights and returns the metrics. The
// caller has checked that the mask has a valid token and parsed the configuration.
template <class Policy>
std::map<std::string, double> compute_rollout_correction_weights(Policy&& policy, const float* lr, const float* mask,
                                                                 int64_t rows, int64_t cols, const IsConfig& cfg,
                                                                 bool batch_normalize, float* weights) {
  if (!cfg.sequence) {
    const auto parts = FusedRowPass(policy, rows, cols, LogRatioMatrix{lr}, mask, IsTokenStage{cfg.bounds, weights},
                                    NoStage{}, NoStage{});
    return TokenIsWeightsAfterPass(policy, parts, rows, cols, cfg, batch_normalize, weights);
  }
  using P = std::remove_reference_t<Policy>;
  PolicyScratch<float, P> sums(policy, rows), row_weight(policy, rows);
  RowReduce(policy, rows, cols, 0.0f, TuplePlus(), MaskedLogRatioAt{lr, mask, cols},
            StoreSumAndWeight{sums.get(), row_weight.get()},
            Footprint().Reads<float>(rows * cols, 2).Writes<float>(rows, 2));
  return SequenceIsWeights(policy, ToHostVector(policy, static_cast<const float*>(sums.get()), rows), row_weight.get(),
                           mask, rows, cols, cfg, batch_normalize, weights);
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
  const auto parts =
      FusedRowPass(policy, rows, cols, NoSource{}, mask, IsGivenStage{b, weights, raw_weights}, NoStage{}, NoStage{});
  const std::vector<float> logs = sequence ? ToHostVector(policy, log_for_metrics, n_log) : std::vector<float>();
  return IsMetricsOf(parts, b, sequence, logs, upper_py, lower_py).metrics;
}

}  // namespace verlconf::cuda
