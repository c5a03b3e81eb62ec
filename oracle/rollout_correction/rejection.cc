// Rejection sampling (verl: compute_rollout_rejection_mask) and its metrics
// (compute_rs_metrics). Each option turns the clamped log-ratio into a divergence (k1,
// k2, k3), per token or per row (sum, mean, max), and keeps what lies in its range; a
// chain keeps only what every option keeps. The formulas are in rollout_correction.h.
#include <algorithm>
#include <cmath>

#include "oracle/core/sum.h"
#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
using namespace rollout_internal;
namespace {

// One option's statistic as compute_rs_metrics receives it.
struct RsOptionStats {
  bool sequence = false;
  Array token_stat;                // per token (sequence options: the row's value broadcast)
  std::vector<double> seq_values;  // per row (token options: the row's masked mean)
};

// verl: compute_rs_metrics for one option.
void RsMetrics(const std::string& option, const RsOptionStats& st, const Array& mask,
               const std::vector<bool>& seq_valid, double thr_upper, double thr_lower, bool apply_lower,
               std::map<std::string, double>& m) {
  if (!AnyValid(mask)) NoValidToken();
  const std::string p = "rollout_rs_" + option;
  std::vector<double> valid_seq;
  for (size_t i = 0; i < st.seq_values.size(); ++i)
    if (seq_valid[i]) valid_seq.push_back(st.seq_values[i]);
  const int64_t nvalid = static_cast<int64_t>(valid_seq.size());

  m[p + "_mean"] = masked_mean(st.token_stat, mask);
  std::vector<double> valid_tokens;
  for (int64_t k = 0; k < mask.size(); ++k)
    if (mask[k] != 0.0) valid_tokens.push_back(st.token_stat[k]);
  if (st.sequence && nvalid > 0) {
    m[p + "_max"] = Max(valid_seq);
    m[p + "_min"] = Min(valid_seq);
  } else {
    m[p + "_max"] = Max(valid_tokens);
    m[p + "_min"] = Min(valid_tokens);
  }

  auto count = [](const std::vector<double>& v, auto pred) {
    int64_t n = 0;
    for (double x : v) n += pred(x);
    return n;
  };
  if (st.sequence && nvalid > 0) {
    m[p + "_fraction_high"] = Float32Fraction(count(valid_seq, [&](double x) { return x > thr_upper; }), nvalid);
    m[p + "_fraction_low"] =
        apply_lower ? Float32Fraction(count(valid_seq, [&](double x) { return x < thr_lower; }), nvalid) : 0.0;
  } else {
    Array high(mask.shape, mask.dtype), low(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k) {
      high[k] = st.token_stat[k] > thr_upper ? 1.0 : 0.0;
      low[k] = st.token_stat[k] < thr_lower ? 1.0 : 0.0;
    }
    m[p + "_fraction_high"] = masked_mean(high, mask);
    m[p + "_fraction_low"] = apply_lower ? masked_mean(low, mask) : 0.0;
  }

  if (MaskTotal(mask) > 1) {
    const double clamp_min = apply_lower ? thr_lower : 0.0;
    Array c(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k) c[k] = ClampBoth(st.token_stat[k], clamp_min, thr_upper);
    m[p + "_std"] = MaskedStd(c, mask);
  } else {
    m[p + "_std"] = 0.0;
  }

  if (nvalid > 0) {
    m[p + "_seq_mean"] = Mean(valid_seq);
    m[p + "_seq_std"] = nvalid > 1 ? UnbiasedStd(valid_seq) : 0.0;
    m[p + "_seq_max"] = Max(valid_seq);
    m[p + "_seq_min"] = Min(valid_seq);
    std::vector<double> dev;
    for (double x : valid_seq) dev.push_back(std::fabs(x - 0.0));
    m[p + "_seq_max_deviation"] = Max(dev);
    m[p + "_seq_fraction_high"] = Float32Fraction(count(valid_seq, [&](double x) { return x > thr_upper; }), nvalid);
    if (apply_lower)
      m[p + "_seq_fraction_low"] = Float32Fraction(count(valid_seq, [&](double x) { return x < thr_lower; }), nvalid);
  } else {
    for (const char* k : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high",
                          "_seq_fraction_low"})
      m[p + k] = 0.0;
  }
}

// The three per-token divergences of the clamped log-ratio, and their rounding (in
// units of epsilon) for the boundary.
struct Divergences {
  Array k1, k2, k3;
  Array e1, e2, e3;
  const Array& Stat(const std::string& option) const {
    return EndsWith(option, "k1") ? k1 : EndsWith(option, "k2") ? k2 : k3;
  }
  const Array& Err(const std::string& option) const {
    return EndsWith(option, "k1") ? e1 : EndsWith(option, "k2") ? e2 : e3;
  }
};

Divergences ComputeDivergences(const Array& log_ratio, const Array& mask, LogRatioError lr_err) {
  Divergences d{Array(mask.shape, mask.dtype), Array(mask.shape, mask.dtype), Array(mask.shape, mask.dtype),
                Array(mask.shape, mask.dtype), Array(mask.shape, mask.dtype), Array(mask.shape, mask.dtype)};
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double l = Clamp(log_ratio[k], -kRolloutSafetyBound, kRolloutSafetyBound);
    const double el = LrErr(lr_err, k);
    const double r = std::exp(l);
    d.k1[k] = -l;
    d.k2[k] = 0.5 * l * l;
    d.k3[k] = r - 1.0 - l;
    // A zero rounding says the statistic is exact (Boundary::Near): -l always, l^2 / 2
    // where the square fits the dtype, r - 1 - l only at l = 0 (exp is exact there alone).
    const bool exact_l = el == 0.0;
    d.e1[k] = el;
    d.e2[k] = exact_l && ProductIsExact(l, l, mask.dtype) && ProductIsExact(0.5, l * l, mask.dtype)
                  ? 0.0
                  : std::fabs(l) * el + d.k2[k];
    d.e3[k] = exact_l && l == 0.0 ? 0.0 : std::fabs(r - 1.0) * el + r + 1.0 + std::fabs(l);
  }
  return d;
}

// Which rows have a valid token: per-option sequence metrics average over those only.
struct Rows {
  std::vector<double> totals;  // valid tokens per row
  std::vector<bool> valid;
  int64_t nvalid = 0;
};

Rows CountRows(const Array& mask) {
  Rows r;
  r.totals = RowMaskTotals(mask);
  r.valid.resize(static_cast<size_t>(mask.rows()));
  for (size_t i = 0; i < r.valid.size(); ++i) {
    r.valid[i] = r.totals[i] > 0;
    r.nvalid += r.valid[i];
  }
  return r;
}

// What one option keeps, in the tensor's dtype: k1 log(lower) <= stat <= log(upper)
// (math.log of the Python bounds), k2 / k3 stat <= upper. lo / hi are also the
// thresholds compute_rs_metrics compares with (lo = 0 for k2 / k3).
struct KeepRange {
  bool two_sided = false;  // k1
  double lo = 0.0, hi = 0.0;
  bool Keeps(double x) const { return two_sided ? (x >= lo && x <= hi) : x <= hi; }
  bool Near(const Boundary& b, double x, double e) const {
    return two_sided ? (b.Near(x, lo, e) || b.Near(x, hi, e)) : b.Near(x, hi, e);
  }
};

KeepRange RangeOf(const std::string& option, const RsThreshold& th, DType d) {
  if (EndsWith(option, "k1")) return {true, TensorScalar(std::log(*th.lower), d), TensorScalar(std::log(th.upper), d)};
  return {false, 0.0, TensorScalar(th.upper, d)};
}

// token_*: every token is decided on its own statistic; compute_rs_metrics' per-row
// values are the row means of it, so rows whose mean sits on a bound are marked too.
void DecideTokens(const Array& stat, const Array& err, const Array& mask, const Rows& rows, const KeepRange& range,
                  RsOptionStats& st, Array& keep, Boundary& boundary) {
  for (int64_t k = 0; k < mask.size(); ++k) {
    st.token_stat[k] = stat[k];
    keep[k] = range.Keeps(stat[k]) ? 1.0 : 0.0;
    if (mask[k] != 0.0 && range.Near(boundary, stat[k], err[k])) boundary.Mark(k);
  }
  const Array means = RowMeans(stat, mask);
  for (int64_t i = 0; i < mask.rows(); ++i) {
    st.seq_values[static_cast<size_t>(i)] = means[i];
    double e = 0;
    bool exact_terms = true;
    std::vector<double> terms;
    for (int64_t t = 0; t < mask.cols(); ++t)
      if (mask.at(i, t) != 0.0) {
        e += err.at(i, t) + std::fabs(stat.at(i, t));
        exact_terms = exact_terms && err.at(i, t) == 0.0;
        terms.push_back(stat.at(i, t));
      }
    const double total = rows.totals[static_cast<size_t>(i)];
    if (exact_terms && RowMeanIsExact(terms, means[i], total, mask.dtype)) e = 0.0;
    if (rows.valid[static_cast<size_t>(i)] && range.Near(boundary, means[i], e / total)) boundary.MarkRow(i);
  }
}

// seq_sum_* / seq_mean_* / seq_max_*: one value per row decides the whole row.
void DecideRows(const std::string& option, const Array& stat, const Array& err, const Array& mask, const Rows& rows,
                const KeepRange& range, RsOptionStats& st, Array& keep, Boundary& boundary) {
  st.sequence = true;
  const bool seq_sum = option.rfind("seq_sum", 0) == 0, seq_mean = option.rfind("seq_mean", 0) == 0;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    const double total = rows.totals[static_cast<size_t>(i)];
    double value, e = 0;
    if (seq_sum || seq_mean) {
      ExactSum s;
      bool exact_terms = true;
      std::vector<double> terms;
      for (int64_t t = 0; t < mask.cols(); ++t) {
        s.Add(MaskedTerm(stat.at(i, t), mask.at(i, t)));
        if (mask.at(i, t) != 0.0) {
          e += err.at(i, t) + std::fabs(stat.at(i, t));
          exact_terms = exact_terms && err.at(i, t) == 0.0;
          terms.push_back(stat.at(i, t));
        }
      }
      value = s.Value();
      bool exact = exact_terms && SumIsExactInAnyOrder(terms, mask.dtype);
      if (seq_mean) {
        const double sum = value;
        value /= MeanDenominator(total, mask.dtype);  // masked_mean(axis=-1)
        e /= std::max(total, 1.0);
        exact = exact && QuotientIsExact(value, sum, MeanDenominator(total, mask.dtype), mask.dtype);
      }
      if (exact) e = 0.0;
    } else {  // seq_max: max over valid tokens, 0 for a row without any
      value = -kInf;
      for (int64_t t = 0; t < mask.cols(); ++t)
        if (mask.at(i, t) != 0.0) {
          if (std::isnan(stat.at(i, t)) || stat.at(i, t) > value) value = stat.at(i, t);
          e = std::max(e, err.at(i, t));
        }
      if (value == -kInf) value = 0.0;
    }
    st.seq_values[static_cast<size_t>(i)] = value;
    const double kept = range.Keeps(value) ? 1.0 : 0.0;
    for (int64_t t = 0; t < mask.cols(); ++t) {
      st.token_stat.at(i, t) = value;
      keep.at(i, t) = kept;
    }
    if (rows.valid[static_cast<size_t>(i)] && range.Near(boundary, value, e)) boundary.MarkRow(i);
  }
}

// rollout_rs_<option>_masked_fraction and _seq_masked_fraction: the option's own
// rejections (not the chain's), over valid tokens and over rows with a valid token.
void OptionRejectedFractions(const std::string& option, const Array& keep, const Array& mask, const Rows& rows,
                             std::map<std::string, double>& m) {
  Array rejected(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) rejected[k] = 1.0 - keep[k];
  m["rollout_rs_" + option + "_masked_fraction"] = masked_mean(rejected, mask);
  double seq_masked = 0.0;
  if (rows.nvalid > 0) {
    int64_t dropped = 0;
    for (int64_t i = 0; i < mask.rows(); ++i) {
      bool row_keep = true;
      for (int64_t t = 0; t < mask.cols(); ++t) row_keep &= !(keep.at(i, t) == 0.0 && mask.at(i, t) != 0.0);
      dropped += (!row_keep && rows.valid[static_cast<size_t>(i)]);
    }
    seq_masked = static_cast<double>(dropped) / static_cast<double>(rows.nvalid);
  }
  m["rollout_rs_" + option + "_seq_masked_fraction"] = seq_masked;
}

}  // namespace

std::vector<std::pair<std::string, RsThreshold>> ParseRolloutRsArguments(const ConfigValue& rollout_rs,
                                                                         const ConfigValue& threshold) {
  const auto* rs = std::get_if<std::string>(&rollout_rs);
  if (!rs)
    throw VerlError("ValueError", "rollout_rs must be a non-empty string (comma separated for multiple options).");
  if (std::holds_alternative<std::monostate>(threshold))
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  return ParseRolloutRsThresholds(ParseRolloutRsOptions(*rs), threshold);
}

// verl: compute_rollout_rejection_mask.
RejectionResult compute_rollout_rejection_mask(const Array& log_ratio, const Array& mask, const ConfigValue& rollout_rs,
                                               const ConfigValue& threshold, LogRatioError lr_err) {
  const auto thresholds = ParseRolloutRsArguments(rollout_rs, threshold);

  const int64_t B = mask.rows(), T = mask.cols();
  const Divergences div = ComputeDivergences(log_ratio, mask, lr_err);
  const Rows rows = CountRows(mask);
  Boundary boundary(mask);
  Array combined(mask.shape, mask.dtype);
  for (double& x : combined.data) x = 1.0;
  RejectionResult out;

  for (const auto& [option, th] : thresholds) {
    const KeepRange range = RangeOf(option, th, mask.dtype);
    RsOptionStats st;
    st.token_stat = Array(mask.shape, mask.dtype);
    st.seq_values.assign(static_cast<size_t>(B), 0.0);
    Array keep(mask.shape, mask.dtype);
    if (option.rfind("token_", 0) == 0)
      DecideTokens(div.Stat(option), div.Err(option), mask, rows, range, st, keep, boundary);
    else
      DecideRows(option, div.Stat(option), div.Err(option), mask, rows, range, st, keep, boundary);

    RsMetrics(option, st, mask, rows.valid, range.hi, range.lo, range.two_sided, out.metrics);
    OptionRejectedFractions(option, keep, mask, rows, out.metrics);
    for (int64_t k = 0; k < mask.size(); ++k) combined[k] *= keep[k];
  }

  Array rejected(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) rejected[k] = 1.0 - combined[k];
  out.metrics["rollout_rs_masked_fraction"] = masked_mean(rejected, mask);
  // Rows with at least one rejected valid token, over every row (padding-only included),
  // reduced in float32.
  int64_t rows_hit = 0;
  for (int64_t i = 0; i < B; ++i) {
    bool hit = false;
    for (int64_t t = 0; t < T; ++t) hit |= !(combined.at(i, t) > 0.5) && mask.at(i, t) != 0.0;
    rows_hit += hit;
  }
  out.metrics["rollout_rs_seq_masked_fraction"] = Float32Fraction(rows_hit, B);

  out.modified_response_mask = Array(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) out.modified_response_mask[k] = mask[k] * combined[k];
  out.boundary = boundary.Take();
  return out;
}

void CheckRsMetricsRows(size_t seq_valid_rows, size_t seq_value_rows) {
  if (seq_valid_rows != seq_value_rows)
    throw BadInput("compute_rs_metrics: seq_valid_mask has " + std::to_string(seq_valid_rows) +
                   " rows but the per-sequence values have " + std::to_string(seq_value_rows));
}

// verl: compute_rs_metrics on given tensors. Inputs are exact, so only the per-row means
// verl computes itself (no per_sequence_values) can flip a decision: rows whose mean sits
// on a threshold are marked.
MetricsResult compute_rs_metrics(const std::string& option_name, const Array& rs_statistic, const Array& mask,
                                 const Array& seq_valid_mask, const std::string& level,
                                 const Array* per_sequence_values, double threshold, double threshold_lower,
                                 bool apply_lower) {
  if (!AnyValid(mask)) NoValidToken();
  RsOptionStats st;
  st.sequence = level == "sequence";
  st.token_stat = rs_statistic;
  const Array seq = per_sequence_values ? *per_sequence_values : RowMeans(rs_statistic, mask);
  st.seq_values.assign(seq.data.begin(), seq.data.end());
  std::vector<bool> seq_valid(static_cast<size_t>(seq_valid_mask.size()));
  for (size_t i = 0; i < seq_valid.size(); ++i) seq_valid[i] = seq_valid_mask[static_cast<int64_t>(i)] != 0.0;
  CheckRsMetricsRows(seq_valid.size(), st.seq_values.size());
  // Python floats next to a tensor take its dtype (comparisons and clamp bounds).
  const double hi = TensorScalar(threshold, rs_statistic.dtype), lo = TensorScalar(threshold_lower, rs_statistic.dtype);
  MetricsResult out;
  RsMetrics(option_name, st, mask, seq_valid, hi, lo, apply_lower, out.metrics);

  Boundary boundary(mask);
  if (!per_sequence_values) {
    for (int64_t i = 0; i < mask.rows(); ++i) {
      if (!seq_valid[static_cast<size_t>(i)]) continue;
      double err = 0;
      std::vector<double> terms;
      for (int64_t t = 0; t < mask.cols(); ++t)
        if (mask.at(i, t) != 0.0) {
          err += std::fabs(rs_statistic.at(i, t));
          terms.push_back(rs_statistic.at(i, t));
        }
      const double v = st.seq_values[static_cast<size_t>(i)];
      if (RowMeanIsExact(terms, v, static_cast<double>(terms.size()), mask.dtype)) err = 0.0;
      if (boundary.Near(v, hi, err) || (apply_lower && boundary.Near(v, lo, err))) boundary.MarkRow(i);
    }
  }
  out.boundary = boundary.Take();
  return out;
}

std::vector<std::string> RsMetricsNames(const std::string& option_name) {
  std::vector<std::string> out;
  for (const char* k : {"_mean", "_max", "_min", "_fraction_high", "_fraction_low", "_std", "_seq_mean", "_seq_std",
                        "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high", "_seq_fraction_low"})
    out.push_back("rollout_rs_" + option_name + k);
  return out;
}

std::vector<std::string> RsMetricsDiscreteNames(const std::string& option_name) {
  std::vector<std::string> out;
  for (const char* k : {"_fraction_high", "_fraction_low", "_seq_fraction_high", "_seq_fraction_low"})
    out.push_back("rollout_rs_" + option_name + k);
  return out;
}

std::vector<std::string> RsOptionMetricNames(const std::string& option) {
  std::vector<std::string> out;
  for (const char* k : {"_mean", "_max", "_min", "_fraction_high", "_fraction_low", "_std", "_seq_mean", "_seq_std",
                        "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high"})
    out.push_back("rollout_rs_" + option + k);
  if (EndsWith(option, "k1")) out.push_back("rollout_rs_" + option + "_seq_fraction_low");
  out.push_back("rollout_rs_" + option + "_masked_fraction");
  out.push_back("rollout_rs_" + option + "_seq_masked_fraction");
  return out;
}

std::vector<std::string> RsOptionDiscreteMetricNames(const std::string& option) {
  std::vector<std::string> out;
  for (const char* k : {"_fraction_high", "_fraction_low", "_seq_fraction_high"})
    out.push_back("rollout_rs_" + option + k);
  if (EndsWith(option, "k1")) out.push_back("rollout_rs_" + option + "_seq_fraction_low");
  out.push_back("rollout_rs_" + option + "_masked_fraction");
  out.push_back("rollout_rs_" + option + "_seq_masked_fraction");
  return out;
}

}  // namespace verlconf::oracle
