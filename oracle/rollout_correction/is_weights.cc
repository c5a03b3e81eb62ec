// Importance-sampling weights (verl: compute_rollout_correction_weights) and their
// metrics (compute_is_metrics). The formulas are in rollout_correction.h; what this file
// adds is where verl's dtypes decide a comparison, and which decisions sit close enough
// to a bound to be marked in Result::boundary.
#include <algorithm>
#include <cmath>

#include "oracle/core/sum.h"
#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
using namespace rollout_internal;
namespace {

// torch.log(torch.tensor(x)): a Python float becomes a float32 tensor (the default
// dtype), whose log is taken in float32.
double TorchDefaultDtypeLog(double x) {
  const double f = ToFloat32(x);
  return static_cast<double>(std::log(static_cast<float>(f)));
}

// Whether a log-ratio (or a row's log-ratio sum) compared with such a float32 log
// threshold sits within the threshold's own uncertainty, whatever the case's dtype. torch
// takes that log with its vectorised float32 kernel, which is not correctly rounded: for
// 1.5 it gives 0.40546513 where libm gives 0.40546510, one float32 ulp apart. A float64
// sum of exactly log(1.5) then lies between the two, and verl and the oracle count it on
// opposite sides; the oracle cannot know torch's last bit, so it marks the decision.
bool NearFloat32Log(double x, double log_bound) {
  // log(1) = 0 is exact in every implementation: no last bit to disagree on.
  return std::isfinite(x) && std::isfinite(log_bound) && log_bound != 0.0 &&
         std::fabs(x - log_bound) <= kDecisionUlps * kEps32 * std::max(std::fabs(log_bound), 1e-30);
}

// torch.clamp(x, max=hi) (NaN bound or value gives NaN).
double ClampMax(double x, double hi) { return (std::isnan(x) || std::isnan(hi)) ? kNaN : std::min(x, hi); }

// verl: compute_is_metrics (the metrics of the applied weights `w`, the raw masked
// weights `raw`, and the unclamped log-ratios: per token, or per row for "sequence").
std::map<std::string, double> IsMetrics(const Array& w, const Array& raw, const std::vector<double>& log_for_metrics,
                                        const Array& mask, bool sequence, double upper_py,
                                        std::optional<double> lower_in) {
  if (!AnyValid(mask)) NoValidToken();
  const double lower_py = lower_in ? *lower_in : 1.0 / upper_py;
  std::map<std::string, double> m;
  const double upper = TensorScalar(upper_py, mask.dtype), lower = TensorScalar(lower_py, mask.dtype);
  const int64_t B = mask.rows();
  if (sequence) {
    const double log_max = Max(log_for_metrics), log_min = Min(log_for_metrics);
    m["rollout_is_max"] = std::exp(ClampMax(log_max, kRolloutSafetyBound));
    m["rollout_is_min"] = ExpIn(log_min, mask.dtype);  // unclamped: inf in float32 past 88.7
    m["rollout_is_mean"] = masked_mean(w, mask);
    // The log thresholds are float32 tensors (torch.tensor of a Python float).
    const double log_upper = TorchDefaultDtypeLog(upper_py), log_lower = TorchDefaultDtypeLog(lower_py);
    int64_t high = 0, low = 0;
    for (double s : log_for_metrics) {
      high += s > log_upper;
      low += s < log_lower;
    }
    // `.float().mean()` over every element of the (B, 1) tensor.
    const int64_t n = static_cast<int64_t>(log_for_metrics.size());
    m["rollout_is_ratio_fraction_high"] = Float32Fraction(high, n);
    m["rollout_is_ratio_fraction_low"] = Float32Fraction(low, n);
  } else {
    m["rollout_is_mean"] = masked_mean(w, mask);
    Array above(mask.shape, mask.dtype), below(mask.shape, mask.dtype);
    std::vector<double> valid_w;
    for (int64_t k = 0; k < mask.size(); ++k) {
      above[k] = raw[k] > upper ? 1.0 : 0.0;
      below[k] = raw[k] < lower ? 1.0 : 0.0;
      if (mask[k] != 0.0) valid_w.push_back(w[k]);
    }
    m["rollout_is_ratio_fraction_high"] = masked_mean(above, mask);
    m["rollout_is_ratio_fraction_low"] = masked_mean(below, mask);
    m["rollout_is_max"] = Max(valid_w);
    m["rollout_is_min"] = Min(valid_w);
  }
  // Standard deviation and ESS of the applied weights, clamped to [0, upper].
  Array clamped(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) clamped[k] = ClampBoth(w[k], 0.0, upper);
  if (MaskTotal(mask) > 1) {
    m["rollout_is_std"] = MaskedStd(clamped, mask);
  } else {
    m["rollout_is_std"] = 0.0;
  }
  const double mean_ess = masked_mean(clamped, mask);
  Array normalized_sq(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double n = clamped[k] / (mean_ess + 1e-8);
    normalized_sq[k] = n * n;
  }
  // A Python float division (`1.0 / tensor.item()`): every applied weight zero (an IcePop
  // band no token falls in) raises ZeroDivisionError instead of giving inf.
  m["rollout_is_eff_sample_size"] = PyFloatDivide(1.0, masked_mean(normalized_sq, mask));
  // Per-row means over every row, padding-only rows (mean 0) included.
  const Array seq = RowMeans(w, mask);
  const std::vector<double> seq_w(seq.data.begin(), seq.data.end());
  m["rollout_is_seq_mean"] = Mean(seq_w);
  m["rollout_is_seq_std"] = seq_w.size() > 1 ? UnbiasedStd(seq_w) : 0.0;
  m["rollout_is_seq_max"] = Max(seq_w);
  m["rollout_is_seq_min"] = Min(seq_w);
  std::vector<double> deviation;
  for (double s : seq_w) deviation.push_back(std::fabs(s - 1.0));
  m["rollout_is_seq_max_deviation"] = Max(deviation);
  const Array raw_seq = RowMeans(raw, mask);
  int64_t seq_high = 0, seq_low = 0;
  for (double s : raw_seq.data) {
    seq_high += s > upper;
    seq_low += s < lower;
  }
  m["rollout_is_seq_fraction_high"] = Float32Fraction(seq_high, B);
  m["rollout_is_seq_fraction_low"] = Float32Fraction(seq_low, B);
  return m;
}

// The weights before truncation (exp of the clamped log-ratio, zero on padding) and the
// log-ratios compute_is_metrics reads: per token, or the row sums for "sequence".
struct RawWeights {
  Array raw;
  std::vector<double> log_for_metrics;
};

// token: w = exp(clamp(lr, +-20)) * mask, held in the case's dtype as verl's tensor is:
// in a float32 case exp(float32(log 2)) is 2.0000000028, which float32 stores as 2.0, on
// IcePop's upper bound and kept, where the unrounded value would be dropped. Besides each token's weight, the per-row
// means of the raw weights decide rollout_is_seq_fraction_*, so rows near a bound are marked too.
RawWeights TokenWeights(const Array& log_ratio, const Array& mask, LogRatioError lr_err, double upper,
                        double metric_lower, Boundary& boundary) {
  const int64_t B = mask.rows(), T = mask.cols();
  RawWeights out{Array(mask.shape, mask.dtype), log_ratio.data};
  Array& raw = out.raw;
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double w = TensorScalar(std::exp(Clamp(log_ratio[k], -kRolloutSafetyBound, kRolloutSafetyBound)), mask.dtype);
    raw[k] = w * mask[k];
    if (mask[k] == 0.0) continue;
    // exp is exact only at an exact 0 (w = 1): there a weight on a bound of 1 is decided
    // by the comparison alone (Boundary::Near).
    const double el = LrErr(lr_err, k);
    const double err = el == 0.0 && log_ratio[k] == 0.0 ? 0.0 : w * (el + 2.0);
    if (boundary.Near(w, upper, err) || boundary.Near(w, metric_lower, err)) boundary.Mark(k);
  }
  const Array raw_seq = RowMeans(raw, mask);
  for (int64_t i = 0; i < B; ++i) {
    double err = 0, n = 0;
    bool exact_terms = true;
    std::vector<double> terms;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t k = i * T + t;
      if (mask[k] == 0.0) continue;
      const double el = LrErr(lr_err, k);
      err += raw[k] * (el + 3.0);
      exact_terms = exact_terms && el == 0.0 && log_ratio[k] == 0.0;
      terms.push_back(raw[k]);
      n += 1;
    }
    if (n == 0) continue;
    if (exact_terms && RowMeanIsExact(terms, raw_seq[i], n, mask.dtype)) err = 0.0;
    if (boundary.Near(raw_seq[i], upper, err / n) || boundary.Near(raw_seq[i], metric_lower, err / n))
      boundary.MarkRow(i);
  }
  return out;
}

// sequence: w = exp(clamp(sum_t mask*lr, +-20)) on every valid token of the row, in the
// case's dtype (as for tokens). The
// metrics compare the log sums with float32 log thresholds, so a row is marked when its
// weight or its log sum sits on a bound. `upper_py` / `metric_lower_py` are the Python
// floats, `upper` / `metric_lower` the same in the tensor's dtype.
RawWeights SequenceWeights(const Array& log_ratio, const Array& mask, LogRatioError lr_err, double upper_py,
                           double metric_lower_py, double upper, double metric_lower, Boundary& boundary) {
  const int64_t B = mask.rows(), T = mask.cols();
  RawWeights out{Array(mask.shape, mask.dtype), {}};
  Array& raw = out.raw;
  const std::vector<double> sums = RowMaskedSums(log_ratio, mask);
  const double log_upper = TorchDefaultDtypeLog(upper_py), log_lower = TorchDefaultDtypeLog(metric_lower_py);
  for (int64_t i = 0; i < B; ++i) {
    const double s = sums[static_cast<size_t>(i)];
    out.log_for_metrics.push_back(s);
    const double w = TensorScalar(std::exp(Clamp(s, -kRolloutSafetyBound, kRolloutSafetyBound)), mask.dtype);
    double err_s = 0, n = 0;
    bool exact_terms = true;
    std::vector<double> terms;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t k = i * T + t;
      raw[k] = w * mask[k];
      if (mask[k] == 0.0) continue;
      const double el = LrErr(lr_err, k);
      err_s += el + std::fabs(log_ratio[k]);
      exact_terms = exact_terms && el == 0.0;
      terms.push_back(log_ratio[k]);
      n += 1;
    }
    if (n == 0) continue;
    // An exact sum (in every order) is decided by the comparison alone; so is its exp
    // where that is exact (a sum of exactly 0: w = 1).
    if (exact_terms && SumIsExactInAnyOrder(terms, mask.dtype)) err_s = 0.0;
    const double err_w = err_s == 0.0 && s == 0.0 ? 0.0 : w * (err_s + 3.0);
    if (boundary.Near(w, upper, err_w) || boundary.Near(w, metric_lower, err_w) || boundary.Near(s, log_upper, err_s) ||
        boundary.Near(s, log_lower, err_s) || NearFloat32Log(s, log_upper) || NearFloat32Log(s, log_lower))
      boundary.MarkRow(i);
  }
  return out;
}

// TIS: min(w, upper). IcePop: w where lower <= w <= upper, else 0.
Array Truncate(const Array& raw, bool icepop, double lower, double upper) {
  Array w(raw.shape, raw.dtype);
  for (int64_t k = 0; k < raw.size(); ++k) {
    if (!icepop) {
      w[k] = ClampMax(raw[k], upper);
    } else {
      const bool kept = raw[k] >= lower && raw[k] <= upper;
      w[k] = kept ? raw[k] : 0.0;
    }
  }
  return w;
}

// The mean batch normalisation divides by: over valid tokens (token), or over the
// per-row means of the rows that have a valid token (sequence).
double BatchMean(const Array& w, const Array& mask, bool sequence) {
  if (!sequence) return masked_mean(w, mask);
  const Array seq_w = RowMeans(w, mask);
  const std::vector<double> totals = RowMaskTotals(mask);
  ExactSum num, den;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    const double alive = totals[static_cast<size_t>(i)] > 0 ? 1.0 : 0.0;
    num.Add(seq_w[i] * alive);
    den.Add(alive);
  }
  return num.Value() / std::max(den.Value(), 1e-8);
}

}  // namespace

IsArguments ParseRolloutIsArguments(const ConfigValue& rollout_is, const ConfigValue& threshold) {
  const auto* level = std::get_if<std::string>(&rollout_is);
  if (!level || (*level != "token" && *level != "sequence"))
    throw VerlError("ValueError",
                    "Invalid rollout_is: " + DescribeValue(rollout_is) + ". Must be one of {'token', 'sequence'}.");
  return {*level == "sequence", ParseRolloutIsThreshold(threshold)};
}

double IsMetricsLowerBound(double upper_py, std::optional<double> lower) {
  return lower ? *lower : PyFloatDivide(1.0, upper_py);
}

// verl: compute_rollout_correction_weights (torch.distributed not initialised).
IsWeightsResult compute_rollout_correction_weights(const Array& log_ratio, const Array& mask,
                                                   const ConfigValue& rollout_is, const ConfigValue& threshold,
                                                   bool batch_normalize, LogRatioError lr_err) {
  const IsArguments args = ParseRolloutIsArguments(rollout_is, threshold);
  const IsThreshold& th = args.threshold;
  const bool icepop = th.lower.has_value();
  const bool sequence = args.sequence;
  // compute_is_metrics' lower bound: IcePop's, or 1 / upper for TIS.
  const double metric_lower_py = icepop ? *th.lower : 1.0 / th.upper;
  // The bounds as verl's comparisons and clamps see them (float32 in a float32 case).
  const double upper = TensorScalar(th.upper, mask.dtype);
  const double lower = icepop ? TensorScalar(*th.lower, mask.dtype) : 0.0;
  const double metric_lower = TensorScalar(metric_lower_py, mask.dtype);

  Boundary boundary(mask);
  const RawWeights r =
      sequence ? SequenceWeights(log_ratio, mask, lr_err, th.upper, metric_lower_py, upper, metric_lower, boundary)
               : TokenWeights(log_ratio, mask, lr_err, upper, metric_lower, boundary);
  Array w = Truncate(r.raw, icepop, lower, upper);

  IsWeightsResult out;
  out.metrics = IsMetrics(w, r.raw, r.log_for_metrics, mask, sequence, th.upper, th.lower);
  if (icepop) {
    Array oob(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k) oob[k] = (r.raw[k] < lower || r.raw[k] > upper) ? 1.0 : 0.0;
    out.metrics["rollout_is_oob_ratio"] = masked_mean(oob, mask);
  }

  // After the metrics: they describe the weights before normalisation, as in verl.
  if (batch_normalize) {
    const double weights_mean = BatchMean(w, mask, sequence);
    if (weights_mean > 1e-8) {
      for (double& x : w.data) x /= weights_mean;
      out.metrics["rollout_is_batch_norm_factor"] = weights_mean;
    } else {
      out.metrics["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  out.weights = std::move(w);
  out.boundary = boundary.Take();
  return out;
}

// verl: compute_is_metrics on given tensors. Inputs are exact, so a fraction can only
// flip where verl computes what it compares: the float32 log thresholds (torch's log may
// differ from libm's in the last float32 bit) and the per-row means of the raw weights.
MetricsResult compute_is_metrics(const Array& w, const Array& raw, const Array& log_ratio_for_metrics,
                                 const Array& mask, const std::string& rollout_is, double upper_py,
                                 std::optional<double> lower_in) {
  if (!AnyValid(mask)) NoValidToken();
  const double lower_py = IsMetricsLowerBound(upper_py, lower_in);
  const bool sequence = rollout_is == "sequence";
  MetricsResult out;
  out.metrics = IsMetrics(w, raw, log_ratio_for_metrics.data, mask, sequence, upper_py, lower_in);

  const double upper = TensorScalar(upper_py, mask.dtype), lower = TensorScalar(lower_py, mask.dtype);
  Boundary boundary(mask);
  const int64_t B = mask.rows(), T = mask.cols();
  // rollout_is_seq_fraction_*: the raw weights' row means (summed in some order).
  const Array raw_seq = RowMeans(raw, mask);
  for (int64_t i = 0; i < B; ++i) {
    double err = 0;
    std::vector<double> terms;
    for (int64_t t = 0; t < T; ++t)
      if (mask.at(i, t) != 0.0) {
        err += std::fabs(raw.at(i, t));
        terms.push_back(raw.at(i, t));
      }
    if (RowMeanIsExact(terms, raw_seq[i], static_cast<double>(terms.size()), mask.dtype)) err = 0.0;
    if (boundary.Near(raw_seq[i], upper, err) || boundary.Near(raw_seq[i], lower, err)) boundary.MarkRow(i);
  }
  // rollout_is_ratio_fraction_* at sequence level: row i's log sum against the float32
  // log thresholds, which are good to a float32 ulp whatever the case's dtype.
  if (sequence && log_ratio_for_metrics.size() == B) {
    const double log_upper = TorchDefaultDtypeLog(upper_py), log_lower = TorchDefaultDtypeLog(lower_py);
    for (int64_t i = 0; i < B; ++i) {
      const double s = log_ratio_for_metrics[i];
      if (NearFloat32Log(s, log_upper) || NearFloat32Log(s, log_lower)) boundary.MarkRow(i);
    }
  }
  out.boundary = boundary.Take();
  return out;
}

std::vector<std::string> IsMetricNames() {
  return {"rollout_is_mean",
          "rollout_is_max",
          "rollout_is_min",
          "rollout_is_ratio_fraction_high",
          "rollout_is_ratio_fraction_low",
          "rollout_is_std",
          "rollout_is_eff_sample_size",
          "rollout_is_seq_mean",
          "rollout_is_seq_std",
          "rollout_is_seq_max",
          "rollout_is_seq_min",
          "rollout_is_seq_max_deviation",
          "rollout_is_seq_fraction_high",
          "rollout_is_seq_fraction_low",
          "rollout_is_oob_ratio",
          "rollout_is_batch_norm_factor"};
}

std::vector<std::string> IsDiscreteMetricNames() {
  return {"rollout_is_ratio_fraction_high", "rollout_is_ratio_fraction_low", "rollout_is_seq_fraction_high",
          "rollout_is_seq_fraction_low", "rollout_is_oob_ratio"};
}

}  // namespace verlconf::oracle
