// Rejection sampling (verl: compute_rollout_rejection_mask) and its metrics
// (compute_rs_metrics) on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states them. No option's statistic is stored per token: a token
// option's divergence is recomputed from the log-ratio wherever it is read, a sequence
// option's is its row's value (one segmented reduction over the rows). Per option, one
// per-row pass gathers every metric's sums and extrema and the option's rejections, one
// pass over the rows the per-sequence metrics, and a transform folds the option's keep
// mask into the output mask.
#pragma once

#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/rollout_correction/reductions.cuh"

namespace verlconf::cuda {

enum class RsKind : int { kK1, kK2, kK3 };
enum class RsLevel : int { kToken, kSeqSum, kSeqMean, kSeqMax };

// What an option keeps, compared in float32 as verl's float32 tensors compare with a
// Python float: k1 log(lower) <= stat <= log(upper); k2 / k3 stat <= upper.
struct KeepRange {
  bool two_sided = false;  // k1
  float lo = 0.0f, hi = 0.0f;
  __host__ __device__ bool Keeps(float x) const { return two_sided ? (x >= lo && x <= hi) : x <= hi; }
};

// One option of a rollout_rs chain, parsed on the host.
struct RsOption {
  std::string name;
  RsKind kind = RsKind::kK1;
  RsLevel level = RsLevel::kToken;
  KeepRange range;
};

// The divergence of a clamped log-ratio l: k1 = -l, k2 = l^2 / 2, k3 = exp(l) - 1 - l
// (through expm1, which keeps k3's few significant bits for a small l).
__host__ __device__ inline float RsDivergence(RsKind kind, float lr) {
  const float l = TorchClamp(lr, -kRolloutSafetyBoundF, kRolloutSafetyBoundF);
  if (kind == RsKind::kK1) return -l;
  if (kind == RsKind::kK2) return 0.5f * l * l;
  return expm1f(l) - l;
}

template <class LrIt>
struct TokenDivergence {
  LrIt lr;
  RsKind kind;
  __host__ __device__ float operator()(int64_t k) const { return RsDivergence(kind, lr[k]); }
};

// A given B x T statistic (compute_rs_metrics called directly).
struct ArrayAt {
  const float* p;
  __host__ __device__ float operator()(int64_t k) const { return p[k]; }
};

// Whether row i counts for the per-sequence metrics: a valid token (mask total > 0), or
// verl's seq_valid_mask as given (non-zero = True).
struct PositiveAt {
  const float* p;
  __host__ __device__ bool operator()(int64_t i) const { return p[i] > 0.0f; }
};
struct NonZeroAt {
  const float* p;
  __host__ __device__ bool operator()(int64_t i) const { return p[i] != 0.0f; }
};

// ---- a sequence option's per-row value

// (masked statistic, statistic of a valid token or -inf): a row's sum and maximum.
template <class StatAt>
struct RowValueTerms {
  StatAt stat;
  const float* mask;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float x = stat(k), m = mask[k];
    return thrust::make_tuple(MaskedTerm(x, m), m != 0.0f ? x : -PosInf());
  }
};

struct SumAndMaxOp {
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& a,
                                                             const thrust::tuple<float, float>& b) const {
    return thrust::make_tuple(thrust::get<0>(a) + thrust::get<0>(b), NanMax(thrust::get<1>(a), thrust::get<1>(b)));
  }
};

// seq_sum: the sum; seq_mean: masked_mean along the row; seq_max: the maximum over valid
// tokens, 0 for a row without any.
struct RowValueOf {
  RsLevel level;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& sum_max, float total) const {
    if (level == RsLevel::kSeqSum) return thrust::get<0>(sum_max);
    if (level == RsLevel::kSeqMean) return MeanOf(thrust::get<0>(sum_max), total);
    const float mx = thrust::get<1>(sum_max);
    return mx == -PosInf() ? 0.0f : mx;
  }
};

// ---- compute_rs_metrics

// One row's sums for the token-level metrics: the masked statistic, the mask, the
// fraction indicators, the statistic clamped for the std, the option's rejections of
// valid tokens; the extrema over valid tokens.
struct RsTerms {
  float stat, m, high, low, clamped, rejected, max, min;
};

struct RsTermsOp {
  __host__ __device__ RsTerms operator()(const RsTerms& a, const RsTerms& b) const {
    return {a.stat + b.stat,       a.m + b.m,
            a.high + b.high,       a.low + b.low,
            a.clamped + b.clamped, a.rejected + b.rejected,
            NanMax(a.max, b.max),  NanMin(a.min, b.min)};
  }
};

// The thresholds compute_rs_metrics compares with (float32), and the option's keep range
// (the rejection counts; unused by a direct compute_rs_metrics).
struct RsThresholds {
  float hi = 0.0f, lo = 0.0f;
  bool apply_lower = false;
  KeepRange keep;
};

template <class StatAt>
struct RsTokenTerms {
  StatAt stat;
  const float* mask;
  RsThresholds th;
  __host__ __device__ RsTerms operator()(int64_t k) const {
    const float x = stat(k), m = mask[k];
    const bool valid = m != 0.0f;
    RsTerms t;
    t.stat = MaskedTerm(x, m);
    t.m = m;
    t.high = MaskedTerm(x > th.hi ? 1.0f : 0.0f, m);
    t.low = MaskedTerm(x < th.lo ? 1.0f : 0.0f, m);
    t.clamped = MaskedTerm(TorchClamp(x, th.apply_lower ? th.lo : 0.0f, th.hi), m);
    t.rejected = MaskedTerm(th.keep.Keeps(x) ? 0.0f : 1.0f, m);
    t.max = valid ? x : -PosInf();
    t.min = valid ? x : PosInf();
    return t;
  }
};

template <class StatAt>
struct RsSpreadTerm {
  StatAt stat;
  const float* mask;
  RsThresholds th;
  float mean;
  __host__ __device__ float operator()(int64_t k) const {
    const float d = TorchClamp(stat(k), th.apply_lower ? th.lo : 0.0f, th.hi) - mean;
    return MaskedTerm(d * d, mask[k]);
  }
};

struct RowMeanOfTerms {
  __host__ __device__ float operator()(const RsTerms& t) const { return MeanOf(t.stat, t.m); }
};

// Over the rows that count: how many, the sum, extrema and largest |x| of their values,
// the fraction counts, and the rows the option rejected a valid token of.
struct RsRowSums {
  float n, sum, max, min, max_abs, high, low, dropped;
};

struct RsRowSumsOp {
  __host__ __device__ RsRowSums operator()(const RsRowSums& a, const RsRowSums& b) const {
    return {a.n + b.n,       a.sum + b.sum, NanMax(a.max, b.max), NanMin(a.min, b.min), NanMax(a.max_abs, b.max_abs),
            a.high + b.high, a.low + b.low, a.dropped + b.dropped};
  }
};

__host__ __device__ inline RsRowSums RsRowSumsZero() { return {0, 0, -PosInf(), PosInf(), -PosInf(), 0, 0, 0}; }

template <class ValidAt>
struct RsRowOf {
  const float* values;
  const RsTerms* rows;
  ValidAt valid;
  float hi, lo;
  __host__ __device__ RsRowSums operator()(int64_t i) const {
    if (!valid(i)) return RsRowSumsZero();
    const float x = values[i];
    return {
        1.0f, x, x, x, fabsf(x), x > hi ? 1.0f : 0.0f, x < lo ? 1.0f : 0.0f, rows[i].rejected != 0.0f ? 1.0f : 0.0f};
  }
};

template <class ValidAt>
struct RsRowSpread {
  const float* values;
  ValidAt valid;
  float mean;
  __host__ __device__ float operator()(int64_t i) const {
    if (!valid(i)) return 0.0f;
    const float d = values[i] - mean;
    return d * d;
  }
};

// verl: compute_rs_metrics for the statistic `stat` (B x T, read through a functor) and
// the per-row values `seq_values` (B, system memory; null: the masked row means, computed
// here), counting the rows `valid` selects. `sequence`: level "sequence". With
// `rejections`, also the option's own rejected fractions (compute_rollout_rejection_mask).
template <class Policy, class StatAt, class ValidAt>
std::map<std::string, double> RsMetrics(Policy&& policy, const std::string& option, StatAt stat, const float* mask,
                                        int64_t rows, int64_t cols, const float* seq_values, ValidAt valid,
                                        bool sequence, const RsThresholds& th, bool rejections) {
  using P = std::remove_reference_t<Policy>;
  PolicyScratch<RsTerms, P> row_terms(policy, rows);
  RowReduce(policy, IndexIterator(RsTokenTerms<StatAt>{stat, mask, th}), rows, cols, row_terms.get(), RsTermsOp());
  const RsTerms t = thrust::reduce(policy, row_terms.get(), row_terms.get() + rows,
                                   RsTerms{0, 0, 0, 0, 0, 0, -PosInf(), PosInf()}, RsTermsOp());
  PolicyScratch<float, P> row_means(policy, rows);
  if (!seq_values) {
    thrust::transform(policy, row_terms.get(), row_terms.get() + rows, row_means.get(), RowMeanOfTerms());
    seq_values = row_means.get();
  }
  const RsRowSums rs = thrust::transform_reduce(
      policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows),
      RsRowOf<ValidAt>{seq_values, row_terms.get(), valid, th.hi, th.lo}, RsRowSumsZero(), RsRowSumsOp());
  const float nvalid = rs.n;

  std::map<std::string, double> m;
  const std::string p = "rollout_rs_" + option;
  m[p + "_mean"] = MeanOf(t.stat, t.m);
  if (sequence && nvalid > 0) {
    m[p + "_max"] = rs.max;
    m[p + "_min"] = rs.min;
    m[p + "_fraction_high"] = Float32Fraction(rs.high, nvalid);
    m[p + "_fraction_low"] = th.apply_lower ? Float32Fraction(rs.low, nvalid) : 0.0;
  } else {
    m[p + "_max"] = t.max;
    m[p + "_min"] = t.min;
    m[p + "_fraction_high"] = MeanOf(t.high, t.m);
    m[p + "_fraction_low"] = th.apply_lower ? MeanOf(t.low, t.m) : 0.0f;
  }
  if (t.m > 1.0f) {
    const float mean_c = MeanOf(t.clamped, t.m);
    const float spread =
        ChunkedSum(policy, IndexIterator(RsSpreadTerm<StatAt>{stat, mask, th, mean_c}), rows * cols, 0.0f);
    m[p + "_std"] = MaskedStdOf(spread, mean_c, t.m);
  } else {
    m[p + "_std"] = 0.0;
  }
  if (nvalid > 0) {
    const float seq_mean = rs.sum / nvalid;
    m[p + "_seq_mean"] = seq_mean;
    if (nvalid > 1) {
      const float ss = thrust::transform_reduce(
          policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows),
          RsRowSpread<ValidAt>{seq_values, valid, seq_mean}, 0.0f, thrust::plus<float>());
      m[p + "_seq_std"] = std::sqrt(ss / (nvalid - 1.0f));
    } else {
      m[p + "_seq_std"] = 0.0;
    }
    m[p + "_seq_max"] = rs.max;
    m[p + "_seq_min"] = rs.min;
    m[p + "_seq_max_deviation"] = rs.max_abs;
    m[p + "_seq_fraction_high"] = Float32Fraction(rs.high, nvalid);
    if (th.apply_lower) m[p + "_seq_fraction_low"] = Float32Fraction(rs.low, nvalid);
  } else {
    for (const char* k : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high",
                          "_seq_fraction_low"})
      m[p + k] = 0.0;
  }
  if (rejections) {
    m[p + "_masked_fraction"] = MeanOf(t.rejected, t.m);
    // Over the rows with a valid token, as a Python float division.
    m[p + "_seq_masked_fraction"] = nvalid > 0 ? static_cast<double>(rs.dropped) / static_cast<double>(nvalid) : 0.0;
  }
  return m;
}

// ---- compute_rollout_rejection_mask

// mask[k] * keep: the output mask after one more option.
template <class StatAt>
struct ApplyKeep {
  StatAt stat;
  KeepRange keep;
  __host__ __device__ float operator()(int64_t k, float current) const { return keep.Keeps(stat(k)) ? current : 0.0f; }
};

// (masked rejection by the chain, mask): a valid token is rejected where the output
// mask went to 0.
struct ChainRejected {
  const float* out;
  const float* mask;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float m = mask[k];
    return thrust::make_tuple(m != 0.0f && out[k] == 0.0f ? m : 0.0f, m);
  }
};

// (rejections, mask, rows with a rejected valid token) over the rows.
struct ChainRowOf {
  __host__ __device__ thrust::tuple<float, float, float> operator()(const thrust::tuple<float, float>& r) const {
    return thrust::make_tuple(thrust::get<0>(r), thrust::get<1>(r), thrust::get<0>(r) != 0.0f ? 1.0f : 0.0f);
  }
};

template <class Policy, class StatAt>
std::map<std::string, double> ApplyOption(Policy&& policy, const RsOption& o, StatAt stat, const float* mask,
                                          int64_t rows, int64_t cols, const float* seq_values, const float* totals,
                                          float* out) {
  const RsThresholds th{o.range.hi, o.range.lo, o.range.two_sided, o.range};
  std::map<std::string, double> m = RsMetrics(policy, o.name, stat, mask, rows, cols, seq_values, PositiveAt{totals},
                                              o.level != RsLevel::kToken, th, /*rejections=*/true);
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows * cols),
                    static_cast<const float*>(out), out, ApplyKeep<StatAt>{stat, o.range});
  return m;
}

// verl: compute_rollout_rejection_mask on log-ratios `lr` and the mask (rows x cols):
// writes the modified response mask into `out` and returns the metrics. The caller has
// checked the configuration (oracle's parsers) and that the mask has a valid token.
template <class Policy, class LrIt>
std::map<std::string, double> compute_rollout_rejection_mask(Policy&& policy, LrIt lr, const float* mask, int64_t rows,
                                                             int64_t cols, const std::vector<RsOption>& options,
                                                             float* out) {
  using P = std::remove_reference_t<Policy>;
  const int64_t n = rows * cols;
  PolicyScratch<float, P> totals(policy, rows), values(policy, rows);
  PolicyScratch<thrust::tuple<float, float>, P> sum_max(policy, rows);
  RowMaskTotals(policy, mask, rows, cols, totals.get());
  thrust::copy(policy, mask, mask + n, out);
  std::map<std::string, double> metrics;
  for (const RsOption& o : options) {
    const TokenDivergence<LrIt> divergence{lr, o.kind};
    std::map<std::string, double> m;
    if (o.level == RsLevel::kToken) {
      m = ApplyOption(policy, o, divergence, mask, rows, cols, nullptr, totals.get(), out);
    } else {
      RowReduce(policy, IndexIterator(RowValueTerms<TokenDivergence<LrIt>>{divergence, mask}), rows, cols,
                sum_max.get(), SumAndMaxOp());
      thrust::transform(policy, sum_max.get(), sum_max.get() + rows, totals.get(), values.get(), RowValueOf{o.level});
      m = ApplyOption(policy, o, RowBroadcast{values.get(), cols}, mask, rows, cols, values.get(), totals.get(), out);
    }
    for (const auto& [k, v] : m) metrics[k] = v;
  }

  PolicyScratch<thrust::tuple<float, float>, P> chain_rows(policy, rows);
  RowReduce(policy, IndexIterator(ChainRejected{out, mask}), rows, cols, chain_rows.get(), TuplePlus());
  const thrust::tuple<float, float, float> c =
      thrust::transform_reduce(policy, chain_rows.get(), chain_rows.get() + rows, ChainRowOf(),
                               thrust::make_tuple(0.0f, 0.0f, 0.0f), TuplePlus());
  metrics["rollout_rs_masked_fraction"] = MeanOf(thrust::get<0>(c), thrust::get<1>(c));
  // Rows with a rejected valid token over every row, padding-only ones included.
  metrics["rollout_rs_seq_masked_fraction"] = Float32Fraction(thrust::get<2>(c), static_cast<double>(rows));
  return metrics;
}

// verl: compute_rs_metrics on given tensors: `stat` and the mask B x T, `seq_valid` B,
// `per_sequence_values` B or null. Thresholds are the Python floats.
template <class Policy>
std::map<std::string, double> compute_rs_metrics(Policy&& policy, const std::string& option_name, const float* stat,
                                                 const float* mask, const float* seq_valid,
                                                 const float* per_sequence_values, int64_t rows, int64_t cols,
                                                 bool sequence, double threshold, double threshold_lower,
                                                 bool apply_lower) {
  RsThresholds th;
  th.hi = static_cast<float>(threshold);
  th.lo = static_cast<float>(threshold_lower);
  th.apply_lower = apply_lower;
  return RsMetrics(policy, option_name, ArrayAt{stat}, mask, rows, cols, per_sequence_values, NonZeroAt{seq_valid},
                   sequence, th, /*rejections=*/false);
}

}  // namespace verlconf::cuda
