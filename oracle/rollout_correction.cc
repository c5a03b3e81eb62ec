// Mirrors verl 0.9.1 verl/trainer/ppo/rollout_corr_helper.py (and
// core_algos.compute_policy_loss_bypass_mode). Each function names the verl function
// it follows; the formulas are written out in rollout_correction.h.
#include "oracle/rollout_correction.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "oracle/errors.h"
#include "oracle/masked.h"
#include "oracle/policy_loss_legacy.h"
#include "oracle/sum.h"
#include "oracle/torch_rules.h"

namespace verlconf::oracle {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsPySpace(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v' ||
         (ch >= '\x1c' && ch <= '\x1f');
}

// Python's str.strip() for ASCII text.
std::string Strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsPySpace(s[b])) ++b;
  while (e > b && IsPySpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t k = 0; k <= s.size(); ++k)
    if (k == s.size() || s[k] == sep) {
      parts.push_back(s.substr(start, k - start));
      start = k + 1;
    }
  return parts;
}

// Python's repr of a str, for messages: 'abc'.
std::string PyQuote(const std::string& s) { return "'" + s + "'"; }

// float32(x) with round-to-nearest overflow to infinity (a plain cast is undefined
// beyond FLT_MAX).
double ToFloat32(double x) {
  if (!std::isfinite(x)) return x;
  const double max32 = static_cast<double>(std::numeric_limits<float>::max());
  if (std::fabs(x) > max32) return std::fabs(x) < 3.4028235677973366e38 ? std::copysign(max32, x) : std::copysign(kInf, x);
  return static_cast<double>(static_cast<float>(x));
}

// `bool_tensor.float().mean()`: verl reduces these indicators in float32 whatever the
// input dtype, so a fraction like 1/3 is float32(1/3) even in a float64 case. (The
// count is exact; torch's CPU mean divides the float32 sum by n, correctly rounded,
// which rounding the double quotient reproduces.)
double Float32Fraction(int64_t count, int64_t n) {
  return ToFloat32(static_cast<double>(count) / static_cast<double>(n));
}

// A Python float next to a tensor (a comparison, a clamp bound) takes the tensor's dtype
// under torch's type promotion: in a float32 case verl compares with float32(threshold).
double TensorScalar(double v, DType d) { return d == DType::kFloat32 ? ToFloat32(v) : v; }

// torch.log(torch.tensor(x)): a Python float becomes a float32 tensor (the default
// dtype), whose log is taken in float32.
double TorchDefaultDtypeLog(double x) {
  const double f = ToFloat32(x);
  return static_cast<double>(std::log(static_cast<float>(f)));
}

// Ceil of log2 as torch's utils::CeilLog2 (1 for x <= 2).
int64_t TorchCeilLog2(int64_t x) {
  if (x <= 2) return 1;
  int64_t bits = 0;
  for (uint64_t v = static_cast<uint64_t>(x) - 1; v; v >>= 1) ++bits;
  return bits;
}

}  // namespace

// torch's single-threaded CPU float64 sum (aten/src/ATen/native/cpu/SumKernel.cpp): the
// elements are read as 4-wide vectors in 4 interleaved accumulators whose partial sums
// cascade through 4 levels every 2^p vectors; then the accumulators are combined, the
// scalar tail is summed and the 4 lanes are added to it in order.
double TorchCpuSum(const std::vector<double>& x) {
  constexpr int64_t kWidth = 4, kIlp = 4, kLevels = 4;
  using Vec = std::array<double, kWidth>;
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t vec_count = n / kWidth;
  const int64_t rows = vec_count / kIlp;
  auto load = [&](int64_t v) {
    Vec out;
    for (int64_t l = 0; l < kWidth; ++l) out[static_cast<size_t>(l)] = x[static_cast<size_t>(v * kWidth + l)];
    return out;
  };
  auto add = [](Vec& a, const Vec& b) {
    for (size_t l = 0; l < a.size(); ++l) a[l] += b[l];
  };
  const int64_t level_power = std::max<int64_t>(4, TorchCeilLog2(rows) / kLevels);
  const int64_t level_step = int64_t{1} << level_power;
  const int64_t level_mask = level_step - 1;
  Vec acc[kLevels][kIlp] = {};
  int64_t i = 0;
  while (i + level_step <= rows) {
    for (int64_t j = 0; j < level_step; ++j, ++i)
      for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], load(i * kIlp + k));
    for (int64_t j = 1; j < kLevels; ++j) {
      for (int64_t k = 0; k < kIlp; ++k) {
        add(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Vec{};
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < rows; ++i)
    for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], load(i * kIlp + k));
  for (int64_t j = 1; j < kLevels; ++j)
    for (int64_t k = 0; k < kIlp; ++k) add(acc[0][k], acc[j][k]);
  Vec partial = acc[0][0];
  for (int64_t v = rows * kIlp; v < vec_count; ++v) add(partial, load(v));
  for (int64_t k = 1; k < kIlp; ++k) add(partial, acc[0][k]);
  double total = 0.0;
  for (int64_t k = vec_count * kWidth; k < n; ++k) total += x[static_cast<size_t>(k)];
  for (double lane : partial) total += lane;
  return total;
}

namespace {

bool AnyValid(const Array& mask) {
  for (double m : mask.data)
    if (m != 0.0) return true;
  return false;
}

double MaskTotal(const Array& mask) {
  ExactSum s;
  for (double m : mask.data) s.Add(m);
  return s.Value();
}

// verl's masked_mean(values, mask) over the whole tensor with torch's own float64
// summation order (TorchCpuSum): for the metrics whose formula cancels.
double TorchOrderMaskedMean(const Array& values, const Array& mask) {
  std::vector<double> terms(values.data.size());
  for (size_t k = 0; k < terms.size(); ++k) terms[k] = mask.data[k] != 0.0 ? values.data[k] * mask.data[k] : 0.0;
  return TorchCpuSum(terms) / (TorchCpuSum(mask.data) + kMaskedMeanEps);
}

// sqrt(clamp(E[x^2] - E[x]^2, min=0)) with verl's masked means: the std metrics of
// compute_is_metrics and compute_rs_metrics. E[x^2] and E[x]^2 nearly cancel when the
// clamped values hardly spread (all at the threshold: the std is then ~ x * sqrt(1e-8 / n),
// the masked_mean's 1e-8 offset), so the sums follow torch's order.
double MaskedStd(const Array& x, const Array& mask) {
  Array sq(x.shape, x.dtype);
  for (int64_t k = 0; k < x.size(); ++k) sq[k] = x[k] * x[k];
  const double mean = TorchOrderMaskedMean(x, mask);
  const double var = TorchOrderMaskedMean(sq, mask) - mean * mean;
  return std::sqrt(std::isnan(var) ? var : std::max(var, 0.0));
}

// masked_mean's denominator sum(mask) + 1e-8 as verl evaluates it: in a float32 case the
// 1e-8 vanishes (float32(n + 1e-8) == n for n >= 1), which decides a per-row mean sitting
// exactly on a threshold (a row of ratio-1 tokens against a bound of 1).
double MeanDenominator(double n, DType d) {
  return d == DType::kFloat32 ? ToFloat32(n + static_cast<double>(static_cast<float>(kMaskedMeanEps)))
                              : n + kMaskedMeanEps;
}

// masked_mean(values, mask, axis=-1) with that denominator: one value per row.
Array RowMeans(const Array& values, const Array& mask) {
  Array out({values.rows()}, values.dtype);
  for (int64_t i = 0; i < values.rows(); ++i) {
    ExactSum s, n;
    for (int64_t t = 0; t < values.cols(); ++t) {
      s.Add(MaskedTerm(values.at(i, t), mask.at(i, t)));
      n.Add(mask.at(i, t));
    }
    out[i] = s.Value() / MeanDenominator(n.Value(), mask.dtype);
  }
  return out;
}

std::vector<double> RowMaskedSums(const Array& values, const Array& mask) {
  std::vector<double> out(static_cast<size_t>(values.rows()));
  for (int64_t i = 0; i < values.rows(); ++i) {
    ExactSum s;
    for (int64_t t = 0; t < values.cols(); ++t) s.Add(MaskedTerm(values.at(i, t), mask.at(i, t)));
    out[static_cast<size_t>(i)] = s.Value();
  }
  return out;
}

std::vector<double> RowMaskTotals(const Array& mask) {
  std::vector<double> out(static_cast<size_t>(mask.rows()));
  for (int64_t i = 0; i < mask.rows(); ++i) {
    ExactSum s;
    for (int64_t t = 0; t < mask.cols(); ++t) s.Add(mask.at(i, t));
    out[static_cast<size_t>(i)] = s.Value();
  }
  return out;
}

double Mean(const std::vector<double>& v) {
  ExactSum s;
  for (double x : v) s.Add(x);
  return s.Value() / static_cast<double>(v.size());
}

// torch's Tensor.std(): unbiased.
double UnbiasedStd(const std::vector<double>& v) {
  const double m = Mean(v);
  ExactSum s;
  for (double x : v) s.Add((x - m) * (x - m));
  return std::sqrt(s.Value() / static_cast<double>(v.size() - 1));
}

// torch max / min propagate NaN.
double Max(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
double Min(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}

// torch.clamp(x, max=hi) (NaN bound or value gives NaN).
double ClampMax(double x, double hi) { return (std::isnan(x) || std::isnan(hi)) ? kNaN : std::min(x, hi); }
double ClampBoth(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNaN;
  return std::min(std::max(x, lo), hi);  // torch: lo > hi gives hi
}

// Marks decisions within rounding of their threshold (Result::boundary).
class Boundary {
 public:
  explicit Boundary(const Array& mask)
      : b_(mask.shape, mask.dtype), eps_(mask.dtype == DType::kFloat32 ? kEps32 : kEps64) {}
  // |x - bound| within kDecisionUlps epsilons of everything that fed the comparison:
  // err (the caller's estimate of x's accumulated rounding, in units of x), |x|, |bound|.
  bool Near(double x, double bound, double err) const {
    if (!std::isfinite(bound) || !std::isfinite(x)) return false;
    return std::fabs(x - bound) <= kDecisionUlps * eps_ * (std::fabs(err) + std::fabs(x) + std::fabs(bound));
  }
  void Mark(int64_t k) { b_[k] = 1.0; }
  void MarkRow(int64_t i) {
    for (int64_t t = 0; t < b_.cols(); ++t) b_.at(i, t) = 1.0;
  }
  Array Take() { return std::move(b_); }

 private:
  Array b_;
  double eps_;
};

double LrErr(const Array& lr, LogRatioError err, int64_t k) { return err ? (*err)[k] : 1.0 + std::fabs(lr[k]); }

void ElementwiseMax(Array& into, const Array& other) {
  if (!other.size()) return;
  if (!into.size()) {
    into = other;
    return;
  }
  for (int64_t k = 0; k < into.size(); ++k) into[k] = std::max(into[k], other[k]);
}

[[noreturn]] void NoValidToken() {
  throw VerlError("ValueError", "response_mask must contain at least one valid token (1).");
}

std::string DescribeValue(const ConfigValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return PyStr(v);
}

}  // namespace

bool IsRolloutRsOption(const std::string& name) {
  for (const char* o : kRolloutRsOptions)
    if (name == o) return true;
  return false;
}

// ------------------------------------------------------------------ Python number text

std::optional<double> PyFloatFromString(const std::string& s) {
  const std::string t = Strip(s);
  if (t.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    ++i;
  }
  std::string word = t.substr(i);
  for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (word == "inf" || word == "infinity") return negative ? -kInf : kInf;
  if (word == "nan") return kNaN;
  std::string clean = negative ? "-" : "";
  // digitpart: digit (["_"] digit)*
  auto digits = [&](size_t& k) {
    if (k >= t.size() || !std::isdigit(static_cast<unsigned char>(t[k]))) return false;
    clean += t[k++];
    while (k < t.size()) {
      if (std::isdigit(static_cast<unsigned char>(t[k]))) {
        clean += t[k++];
      } else if (t[k] == '_' && k + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[k + 1]))) {
        ++k;
      } else {
        break;
      }
    }
    return true;
  };
  const bool whole = digits(i);
  bool fraction = false;
  if (i < t.size() && t[i] == '.') {
    clean += '.';
    ++i;
    fraction = digits(i);
  }
  if (!whole && !fraction) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    clean += 'e';
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
    if (!digits(i)) return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::string PyFloatRepr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0.0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s(buf);
  const bool negative = s[0] == '-';
  if (negative) s = s.substr(1);
  const size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent > -5 && exponent < 16) {  // Python: fixed notation for 1e-4 <= |x| < 1e16
    if (exponent >= 0) {
      std::string whole = digits.substr(0, std::min<size_t>(digits.size(), static_cast<size_t>(exponent) + 1));
      while (whole.size() < static_cast<size_t>(exponent) + 1) whole += '0';
      std::string frac = digits.size() > static_cast<size_t>(exponent) + 1 ? digits.substr(static_cast<size_t>(exponent) + 1) : "0";
      out = whole + "." + frac;
    } else {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ex;
  }
  return negative ? "-" + out : out;
}

std::string PyStr(const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "None";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return PyFloatRepr(*d);
  return std::get<std::string>(v);
}

// ------------------------------------------------------------------ threshold parsers

// verl: _parse_rollout_is_threshold.
IsThreshold ParseRolloutIsThreshold(const ConfigValue& spec) {
  IsThreshold th;
  if (const auto* i = std::get_if<int64_t>(&spec)) {
    th.upper = static_cast<double>(*i);
  } else if (const auto* d = std::get_if<double>(&spec)) {
    th.upper = *d;
  } else if (const auto* str = std::get_if<std::string>(&spec)) {
    const std::string s = Strip(*str);
    if (s.empty()) throw VerlError("ValueError", "rollout_is_threshold must not be an empty string.");
    const std::string invalid = "Invalid rollout_is_threshold " + PyQuote(*str) + ".";
    const size_t us = s.find('_');
    if (us != std::string::npos) {
      const auto lower = PyFloatFromString(s.substr(0, us));
      const auto upper = PyFloatFromString(s.substr(us + 1));
      if (!lower || !upper) throw VerlError("ValueError", invalid);
      th.lower = *lower;
      th.upper = *upper;
    } else {
      const auto upper = PyFloatFromString(s);
      if (!upper) throw VerlError("ValueError", invalid);
      th.upper = *upper;
    }
  } else {
    throw VerlError("TypeError", "rollout_is_threshold must be a float or a string threshold specification.");
  }
  if (th.upper <= 0)
    throw VerlError("ValueError", "rollout_is_threshold upper bound must be positive, got " + PyFloatRepr(th.upper) + ".");
  if (th.lower) {
    if (*th.lower <= 0)
      throw VerlError("ValueError",
                      "rollout_is_threshold lower bound must be positive, got " + PyFloatRepr(*th.lower) + ".");
    if (*th.lower > th.upper) throw VerlError("ValueError", "rollout_is_threshold lower bound must be <= upper bound.");
  }
  return th;
}

std::vector<std::string> ParseRolloutRsOptions(const std::string& rollout_rs) {
  std::vector<std::string> modes;
  for (const std::string& part : Split(rollout_rs, ',')) {
    const std::string opt = Strip(part);
    if (!opt.empty()) modes.push_back(opt);
  }
  if (modes.empty()) throw VerlError("ValueError", "rollout_rs must contain at least one valid option.");
  std::vector<std::string> options;
  std::set<std::string> seen;
  for (const std::string& opt : modes) {
    if (!IsRolloutRsOption(opt)) {
      std::vector<std::string> sorted(std::begin(kRolloutRsOptions), std::end(kRolloutRsOptions));
      std::sort(sorted.begin(), sorted.end());
      std::string all;
      for (const auto& o : sorted) all += (all.empty() ? "" : ", ") + PyQuote(o);
      throw VerlError("ValueError", "Invalid rollout_rs option: " + opt + ". Must be one of [" + all + "].");
    }
    if (seen.insert(opt).second) options.push_back(opt);
  }
  return options;
}

namespace {
std::vector<std::string> RsThresholdEntries(const ConfigValue& spec) {
  std::vector<std::string> raw;
  if (std::holds_alternative<int64_t>(spec) || std::holds_alternative<double>(spec)) {
    raw.push_back(PyStr(spec));  // str(threshold_spec)
  } else if (const auto* s = std::get_if<std::string>(&spec)) {
    for (const std::string& part : Split(*s, ',')) {
      const std::string p = Strip(part);
      if (!p.empty()) raw.push_back(p);
    }
  }
  return raw;
}
}  // namespace

int CountRsThresholdEntries(const ConfigValue& spec) { return static_cast<int>(RsThresholdEntries(spec).size()); }

// verl: _parse_rollout_rs_thresholds.
std::vector<std::pair<std::string, RsThreshold>> ParseRolloutRsThresholds(const std::vector<std::string>& options,
                                                                          const ConfigValue& spec) {
  if (std::holds_alternative<std::monostate>(spec))
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  std::vector<std::string> raw = RsThresholdEntries(spec);
  if (raw.empty()) throw VerlError("ValueError", "rollout_rs_threshold must contain at least one threshold value.");
  if (raw.size() != 1 && raw.size() != options.size())
    throw VerlError("ValueError",
                    "rollout_rs_threshold expects either one threshold shared by all options or exactly " +
                        std::to_string(options.size()) + " thresholds to match the provided rollout_rs options.");
  if (raw.size() == 1 && options.size() > 1) raw.assign(options.size(), raw[0]);

  std::vector<std::pair<std::string, RsThreshold>> out;
  for (size_t k = 0; k < options.size(); ++k) {
    const std::string& option = options[k];
    const std::string& entry = raw[k];
    const std::string invalid = "Invalid numeric threshold " + PyQuote(entry) + " for option " + PyQuote(option) + ".";
    RsThreshold th;
    if (EndsWith(option, "k1")) {
      std::optional<double> lower, upper;
      const size_t us = entry.find('_');
      if (us != std::string::npos) {
        lower = PyFloatFromString(entry.substr(0, us));
        upper = PyFloatFromString(entry.substr(us + 1));
      } else {
        // lower_str = str(1.0 / float(upper_str)), outside verl's try block: Python's own
        // errors surface (ValueError for text, ZeroDivisionError for a zero bound).
        upper = PyFloatFromString(entry);
        if (!upper) throw VerlError("ValueError", "could not convert string to float: " + PyQuote(entry));
        if (*upper == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
        lower = 1.0 / *upper;  // repr round-trips exactly
      }
      if (!lower || !upper) throw VerlError("ValueError", invalid);
      if (*lower <= 0 || *upper <= 0)
        throw VerlError("ValueError", "Thresholds for option " + PyQuote(option) + " must be positive, got " + entry + ".");
      if (*lower > *upper)
        throw VerlError("ValueError",
                        "Thresholds for option " + PyQuote(option) + " must be lower <= upper, got " + entry + ".");
      th.lower = *lower;
      th.upper = *upper;
    } else {
      if (entry.find('_') != std::string::npos)
        throw VerlError("ValueError", "rollout_rs_threshold for option " + PyQuote(option) +
                                          " must provide a single upper bound without '_'. Received " + PyQuote(entry) +
                                          ".");
      const auto upper = PyFloatFromString(entry);
      if (!upper) throw VerlError("ValueError", invalid);
      if (*upper <= 0)
        throw VerlError("ValueError", "Threshold for option " + PyQuote(option) + " must be positive, got " + entry + ".");
      th.upper = *upper;
    }
    out.emplace_back(option, th);
  }
  return out;
}

// ------------------------------------------------------------------ IS weights

namespace {

// verl: compute_is_metrics (the metrics of the applied weights `w`, the raw masked
// weights `raw`, and the unclamped log-ratios: per token, or per row for "sequence").
std::map<std::string, double> IsMetrics(const Array& w, const Array& raw, const std::vector<double>& log_for_metrics,
                                        const Array& mask, bool sequence, double upper_py, std::optional<double> lower_in) {
  if (!AnyValid(mask)) NoValidToken();
  std::map<std::string, double> m;
  const double lower_py = lower_in ? *lower_in : 1.0 / upper_py;
  const double upper = TensorScalar(upper_py, mask.dtype), lower = TensorScalar(lower_py, mask.dtype);
  const int64_t B = mask.rows();
  if (sequence) {
    const double log_max = Max(log_for_metrics), log_min = Min(log_for_metrics);
    m["rollout_is_max"] = std::exp(ClampMax(log_max, kRolloutSafetyBound));
    m["rollout_is_min"] = std::exp(log_min);
    m["rollout_is_mean"] = masked_mean(w, mask);
    // The log thresholds are float32 tensors (torch.tensor of a Python float).
    const double log_upper = TorchDefaultDtypeLog(upper_py), log_lower = TorchDefaultDtypeLog(lower_py);
    int64_t high = 0, low = 0;
    for (double s : log_for_metrics) {
      high += s > log_upper;
      low += s < log_lower;
    }
    m["rollout_is_ratio_fraction_high"] = Float32Fraction(high, B);
    m["rollout_is_ratio_fraction_low"] = Float32Fraction(low, B);
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
  const double ess_den = masked_mean(normalized_sq, mask);
  if (ess_den == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
  m["rollout_is_eff_sample_size"] = 1.0 / ess_den;
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

}  // namespace

// verl: compute_rollout_correction_weights (torch.distributed not initialised).
IsWeightsResult compute_rollout_correction_weights(const Array& log_ratio, const Array& mask,
                                                   const ConfigValue& rollout_is, const ConfigValue& threshold,
                                                   bool batch_normalize, LogRatioError lr_err) {
  const auto* level = std::get_if<std::string>(&rollout_is);
  if (!level || (*level != "token" && *level != "sequence"))
    throw VerlError("ValueError",
                    "Invalid rollout_is: " + DescribeValue(rollout_is) + ". Must be one of {'token', 'sequence'}.");
  const IsThreshold th = ParseRolloutIsThreshold(threshold);
  const bool icepop = th.lower.has_value();
  const bool sequence = *level == "sequence";
  const int64_t B = mask.rows(), T = mask.cols();
  const double metric_lower_py = icepop ? *th.lower : 1.0 / th.upper;
  // The bounds as verl's comparisons and clamps see them (float32 in a float32 case).
  const double upper = TensorScalar(th.upper, mask.dtype);
  const double lower = icepop ? TensorScalar(*th.lower, mask.dtype) : 0.0;
  const double metric_lower = TensorScalar(metric_lower_py, mask.dtype);

  Array raw(mask.shape, mask.dtype);
  std::vector<double> log_for_metrics;
  Boundary boundary(mask);
  if (!sequence) {
    log_for_metrics = log_ratio.data;
    for (int64_t k = 0; k < mask.size(); ++k) {
      const double w = std::exp(Clamp(log_ratio[k], -kRolloutSafetyBound, kRolloutSafetyBound));
      raw[k] = w * mask[k];
      if (mask[k] == 0.0) continue;
      const double err = w * (LrErr(log_ratio, lr_err, k) + 2.0);
      if (boundary.Near(w, upper, err) || boundary.Near(w, metric_lower, err)) boundary.Mark(k);
    }
    // The per-row means of the raw weights decide rollout_is_seq_fraction_*.
    const Array raw_seq = RowMeans(raw, mask);
    for (int64_t i = 0; i < B; ++i) {
      double err = 0, n = 0;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t k = i * T + t;
        if (mask[k] == 0.0) continue;
        err += raw[k] * (LrErr(log_ratio, lr_err, k) + 3.0);
        n += 1;
      }
      if (n == 0) continue;
      if (boundary.Near(raw_seq[i], upper, err / n) || boundary.Near(raw_seq[i], metric_lower, err / n))
        boundary.MarkRow(i);
    }
  } else {
    const std::vector<double> sums = RowMaskedSums(log_ratio, mask);
    const double log_upper = TorchDefaultDtypeLog(th.upper), log_lower = TorchDefaultDtypeLog(metric_lower_py);
    for (int64_t i = 0; i < B; ++i) {
      const double s = sums[static_cast<size_t>(i)];
      log_for_metrics.push_back(s);
      const double w = std::exp(Clamp(s, -kRolloutSafetyBound, kRolloutSafetyBound));
      double err_s = 0, n = 0;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t k = i * T + t;
        raw[k] = w * mask[k];
        if (mask[k] == 0.0) continue;
        err_s += LrErr(log_ratio, lr_err, k) + std::fabs(log_ratio[k]);
        n += 1;
      }
      if (n == 0) continue;
      const double err_w = w * (err_s + 3.0);
      if (boundary.Near(w, upper, err_w) || boundary.Near(w, metric_lower, err_w) ||
          boundary.Near(s, log_upper, err_s) || boundary.Near(s, log_lower, err_s))
        boundary.MarkRow(i);
    }
  }

  Array w(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    if (!icepop) {
      w[k] = ClampMax(raw[k], upper);  // TIS
    } else {
      const bool kept = raw[k] >= lower && raw[k] <= upper;  // IcePop
      w[k] = kept ? raw[k] : 0.0;
    }
  }

  IsWeightsResult out;
  out.metrics = IsMetrics(w, raw, log_for_metrics, mask, sequence, th.upper, th.lower);
  if (icepop) {
    Array oob(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k) oob[k] = (raw[k] < lower || raw[k] > upper) ? 1.0 : 0.0;
    out.metrics["rollout_is_oob_ratio"] = masked_mean(oob, mask);
  }

  if (batch_normalize) {
    double weights_mean;
    if (!sequence) {
      weights_mean = masked_mean(w, mask);
    } else {
      const Array seq_w = RowMeans(w, mask);
      const std::vector<double> totals = RowMaskTotals(mask);
      ExactSum num, den;
      for (int64_t i = 0; i < B; ++i) {
        const double alive = totals[static_cast<size_t>(i)] > 0 ? 1.0 : 0.0;
        num.Add(seq_w[i] * alive);
        den.Add(alive);
      }
      weights_mean = num.Value() / std::max(den.Value(), 1e-8);
    }
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

// ------------------------------------------------------------------ rejection sampling

namespace {

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
    for (const char* k : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation",
                          "_seq_fraction_high", "_seq_fraction_low"})
      m[p + k] = 0.0;
  }
}

}  // namespace

// verl: compute_rollout_rejection_mask.
RejectionResult compute_rollout_rejection_mask(const Array& log_ratio, const Array& mask, const ConfigValue& rollout_rs,
                                               const ConfigValue& threshold, LogRatioError lr_err) {
  const auto* rs = std::get_if<std::string>(&rollout_rs);
  if (!rs) throw VerlError("ValueError", "rollout_rs must be a non-empty string (comma separated for multiple options).");
  if (std::holds_alternative<std::monostate>(threshold))
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  const std::vector<std::string> options = ParseRolloutRsOptions(*rs);
  const auto thresholds = ParseRolloutRsThresholds(options, threshold);

  const int64_t B = mask.rows(), T = mask.cols();
  // The three per-token divergences of the clamped log-ratio, and their rounding (in
  // units of epsilon) for the boundary.
  Array k1(mask.shape, mask.dtype), k2(mask.shape, mask.dtype), k3(mask.shape, mask.dtype);
  Array e1(mask.shape, mask.dtype), e2(mask.shape, mask.dtype), e3(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double l = Clamp(log_ratio[k], -kRolloutSafetyBound, kRolloutSafetyBound);
    const double el = LrErr(log_ratio, lr_err, k);
    const double r = std::exp(l);
    k1[k] = -l;
    k2[k] = 0.5 * l * l;
    k3[k] = r - 1.0 - l;
    e1[k] = el;
    e2[k] = std::fabs(l) * el + k2[k];
    e3[k] = std::fabs(r - 1.0) * el + r + 1.0 + std::fabs(l);
  }
  const std::vector<double> totals = RowMaskTotals(mask);
  std::vector<bool> seq_valid(static_cast<size_t>(B));
  int64_t nvalid = 0;
  for (int64_t i = 0; i < B; ++i) {
    seq_valid[static_cast<size_t>(i)] = totals[static_cast<size_t>(i)] > 0;
    nvalid += seq_valid[static_cast<size_t>(i)];
  }

  Boundary boundary(mask);
  Array combined(mask.shape, mask.dtype);
  for (double& x : combined.data) x = 1.0;
  RejectionResult out;

  for (const auto& [option, th] : thresholds) {
    const bool is_k1 = EndsWith(option, "k1");
    // math.log of the Python bounds; every comparison and clamp then sees them in the
    // tensor's dtype.
    const DType d = mask.dtype;
    const double lower_log = is_k1 ? TensorScalar(std::log(*th.lower), d) : 0.0;
    const double upper_log = is_k1 ? TensorScalar(std::log(th.upper), d) : 0.0;
    const double upper = TensorScalar(th.upper, d);
    const double thr_upper = is_k1 ? upper_log : upper;  // metrics' thresholds
    const double thr_lower = is_k1 ? lower_log : 0.0;
    const Array& stat = EndsWith(option, "k1") ? k1 : EndsWith(option, "k2") ? k2 : k3;
    const Array& err = EndsWith(option, "k1") ? e1 : EndsWith(option, "k2") ? e2 : e3;
    auto keeps = [&](double x) { return is_k1 ? (x >= lower_log && x <= upper_log) : x <= upper; };
    auto near = [&](double x, double e) {
      return is_k1 ? (boundary.Near(x, lower_log, e) || boundary.Near(x, upper_log, e)) : boundary.Near(x, upper, e);
    };

    RsOptionStats st;
    st.token_stat = Array(mask.shape, mask.dtype);
    st.seq_values.assign(static_cast<size_t>(B), 0.0);
    Array keep(mask.shape, mask.dtype);
    if (option.rfind("token_", 0) == 0) {
      for (int64_t k = 0; k < mask.size(); ++k) {
        st.token_stat[k] = stat[k];
        keep[k] = keeps(stat[k]) ? 1.0 : 0.0;
        if (mask[k] != 0.0 && near(stat[k], err[k])) boundary.Mark(k);
      }
      // compute_rs_metrics' per-row values: masked means of the token statistic.
      const Array means = RowMeans(stat, mask);
      for (int64_t i = 0; i < B; ++i) {
        st.seq_values[static_cast<size_t>(i)] = means[i];
        double e = 0;
        for (int64_t t = 0; t < T; ++t)
          if (mask.at(i, t) != 0.0) e += err.at(i, t) + std::fabs(stat.at(i, t));
        if (seq_valid[static_cast<size_t>(i)] && near(means[i], e / totals[static_cast<size_t>(i)])) boundary.MarkRow(i);
      }
    } else {
      st.sequence = true;
      const bool seq_sum = option.rfind("seq_sum", 0) == 0, seq_mean = option.rfind("seq_mean", 0) == 0;
      for (int64_t i = 0; i < B; ++i) {
        double value, e = 0;
        if (seq_sum || seq_mean) {
          ExactSum s;
          for (int64_t t = 0; t < T; ++t) {
            s.Add(MaskedTerm(stat.at(i, t), mask.at(i, t)));
            if (mask.at(i, t) != 0.0) e += err.at(i, t) + std::fabs(stat.at(i, t));
          }
          value = s.Value();
          if (seq_mean) {
            value /= MeanDenominator(totals[static_cast<size_t>(i)], mask.dtype);  // masked_mean(axis=-1)
            e /= std::max(totals[static_cast<size_t>(i)], 1.0);
          }
        } else {  // seq_max: max over valid tokens, 0 for a row without any
          value = -kInf;
          for (int64_t t = 0; t < T; ++t)
            if (mask.at(i, t) != 0.0) {
              if (std::isnan(stat.at(i, t)) || stat.at(i, t) > value) value = stat.at(i, t);
              e = std::max(e, err.at(i, t));
            }
          if (value == -kInf) value = 0.0;
        }
        st.seq_values[static_cast<size_t>(i)] = value;
        const double kept = keeps(value) ? 1.0 : 0.0;
        for (int64_t t = 0; t < T; ++t) {
          st.token_stat.at(i, t) = value;
          keep.at(i, t) = kept;
        }
        if (seq_valid[static_cast<size_t>(i)] && near(value, e)) boundary.MarkRow(i);
      }
    }

    RsMetrics(option, st, mask, seq_valid, thr_upper, thr_lower, is_k1, out.metrics);

    Array rejected(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k) {
      combined[k] *= keep[k];
      rejected[k] = 1.0 - keep[k];
    }
    out.metrics["rollout_rs_" + option + "_masked_fraction"] = masked_mean(rejected, mask);
    double seq_masked = 0.0;
    if (nvalid > 0) {
      int64_t dropped = 0;
      for (int64_t i = 0; i < B; ++i) {
        bool row_keep = true;
        for (int64_t t = 0; t < T; ++t) row_keep &= !(keep.at(i, t) == 0.0 && mask.at(i, t) != 0.0);
        dropped += (!row_keep && seq_valid[static_cast<size_t>(i)]);
      }
      seq_masked = static_cast<double>(dropped) / static_cast<double>(nvalid);
    }
    out.metrics["rollout_rs_" + option + "_seq_masked_fraction"] = seq_masked;
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

// ------------------------------------------------------------------ off-policy metrics

// verl: compute_offpolicy_metrics.
std::map<std::string, double> compute_offpolicy_metrics(const Array& old_log_prob, const Array* rollout_log_prob,
                                                        const Array& mask) {
  if (!AnyValid(mask)) throw VerlError("AssertionError", "Expected at least one valid token in response_mask");
  std::map<std::string, double> m;
  const Array train_rows = masked_mean_rows(old_log_prob, mask);
  std::vector<double> ppl, log_ppl;
  for (double v : train_rows.data) {
    ppl.push_back(std::exp(-v));
    log_ppl.push_back(-v);
  }
  m["training_ppl"] = Mean(ppl);
  m["training_log_ppl"] = Mean(log_ppl);
  if (!rollout_log_prob) return m;
  const Array& rollout = *rollout_log_prob;

  Array diff(mask.shape, mask.dtype), k3(mask.shape, mask.dtype), rho2(mask.shape, mask.dtype), lr(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    diff[k] = rollout[k] - old_log_prob[k];
    lr[k] = old_log_prob[k] - rollout[k];
    k3[k] = std::exp(lr[k]) - lr[k] - 1.0;  // unclamped
    const double rho = std::exp(Clamp(lr[k], -kRolloutSafetyBound, kRolloutSafetyBound));
    rho2[k] = rho * rho;
  }
  m["kl"] = masked_mean(diff, mask);
  m["k3_kl"] = masked_mean(k3, mask);

  const Array rollout_rows = masked_mean_rows(rollout, mask);
  std::vector<double> r_ppl, r_log_ppl, d, abs_d, ratio;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    r_ppl.push_back(std::exp(-rollout_rows[i]));
    r_log_ppl.push_back(-rollout_rows[i]);
    const double di = rollout_rows[i] - train_rows[i];
    d.push_back(di);
    abs_d.push_back(std::fabs(di));
    ratio.push_back(std::exp(di));
  }
  m["rollout_ppl"] = Mean(r_ppl);
  m["rollout_log_ppl"] = Mean(r_log_ppl);
  m["log_ppl_diff"] = Mean(d);
  m["log_ppl_abs_diff"] = Mean(abs_d);
  m["log_ppl_diff_max"] = Max(d);
  m["log_ppl_diff_min"] = Min(d);
  m["ppl_ratio"] = Mean(ratio);
  m["chi2_token"] = masked_mean(rho2, mask) - 1.0;
  std::vector<double> seq_rho2;
  for (double s : RowMaskedSums(lr, mask))
    seq_rho2.push_back(std::exp(2.0 * Clamp(s, -kRolloutSafetyBound, kRolloutSafetyBound)));
  m["chi2_seq"] = Mean(seq_rho2) - 1.0;
  return m;
}

// ------------------------------------------------------------------ pipeline

// verl: compute_rollout_correction_and_rejection_mask.
CorrectionResult compute_rollout_correction_and_rejection_mask(const Array& old_log_prob,
                                                               const Array& rollout_log_prob, const Array& mask,
                                                               const RolloutCorrectionSettings& s) {
  if (!AnyValid(mask)) NoValidToken();
  if (old_log_prob.shape != rollout_log_prob.shape || old_log_prob.shape != mask.shape)
    throw VerlError("ValueError", "old_log_prob, rollout_log_prob and response_mask shapes differ.");
  Array lr(mask.shape, mask.dtype), err(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    lr[k] = old_log_prob[k] - rollout_log_prob[k];
    err[k] = 1.0 + std::fabs(old_log_prob[k]) + std::fabs(rollout_log_prob[k]);
  }
  CorrectionResult out;
  std::map<std::string, double> metrics;
  Array boundary;
  if (!std::holds_alternative<std::monostate>(s.rollout_is) &&
      !std::holds_alternative<std::monostate>(s.rollout_is_threshold)) {
    IsWeightsResult is = compute_rollout_correction_weights(lr, mask, s.rollout_is, s.rollout_is_threshold,
                                                            s.rollout_is_batch_normalize, &err);
    metrics.insert(is.metrics.begin(), is.metrics.end());
    out.rollout_is_weights = std::move(is.weights);
    ElementwiseMax(boundary, is.boundary);
  }
  out.modified_response_mask = mask;
  if (!std::holds_alternative<std::monostate>(s.rollout_rs)) {
    if (std::holds_alternative<std::monostate>(s.rollout_rs_threshold))
      throw VerlError("ValueError",
                      "rollout_rs_threshold must be explicitly provided when rollout_rs is enabled. Set "
                      "rollout_rs_threshold to the desired threshold value.");
    RejectionResult rs = compute_rollout_rejection_mask(lr, mask, s.rollout_rs, s.rollout_rs_threshold, &err);
    for (const auto& [k, v] : rs.metrics) metrics[k] = v;
    out.modified_response_mask = std::move(rs.modified_response_mask);
    ElementwiseMax(boundary, rs.boundary);
  }
  for (const auto& [k, v] : compute_offpolicy_metrics(old_log_prob, &rollout_log_prob, mask)) metrics[k] = v;
  for (const auto& [k, v] : metrics) out.metrics["rollout_corr/" + k] = v;
  if (!boundary.size()) boundary = Array(mask.shape, mask.dtype);
  out.boundary = std::move(boundary);
  return out;
}

// ------------------------------------------------------------------ bypass_mode loss

// verl: core_algos.compute_policy_loss_bypass_mode.
PolicyLossResult policy_loss_bypass_mode(const PolicyLossInputs& in, const VanillaConfig& cfg,
                                         const std::string& loss_type, const RolloutCorrectionSettings& settings,
                                         const CorrectionResult* frozen) {
  // The pipeline sees the current policy as "old" and the rollout as "rollout".
  CorrectionResult local;
  if (!frozen) local = compute_rollout_correction_and_rejection_mask(in.log_prob, in.old_log_prob, in.response_mask, settings);
  const CorrectionResult& pipe = frozen ? *frozen : local;
  const Array* weights = pipe.rollout_is_weights ? &*pipe.rollout_is_weights : nullptr;
  PolicyLossResult out;
  if (loss_type == "reinforce") {
    const PolicyLossInputs eff{in.old_log_prob, in.log_prob, in.advantages, pipe.modified_response_mask, weights};
    out = policy_loss_reinforce(eff, cfg.loss_agg_mode, cfg.global);
  } else if (loss_type == "ppo_clip") {
    const PolicyLossInputs eff{in.old_log_prob, in.log_prob, in.advantages, pipe.modified_response_mask, nullptr};
    out = policy_loss_vanilla(eff, cfg);
  } else {
    throw VerlError("ValueError", "Invalid loss_type: " + loss_type + ". Must be 'reinforce' or 'ppo_clip'.");
  }
  for (const auto& [k, v] : pipe.metrics) out.metrics[k] = v;
  ElementwiseMax(out.boundary, pipe.boundary);
  return out;
}

// ------------------------------------------------------------------ config checks

ConfigRefusal CheckIsConfig(const ConfigValue& rollout_is, const ConfigValue& threshold) {
  const auto* level = std::get_if<std::string>(&rollout_is);
  if (!level || (*level != "token" && *level != "sequence"))
    return {"rollout_is", "ValueError: Invalid rollout_is: " + DescribeValue(rollout_is) +
                              ". Must be one of {'token', 'sequence'}."};
  try {
    ParseRolloutIsThreshold(threshold);
  } catch (const VerlError& e) {
    return {"rollout_is_threshold", e.what()};
  }
  return {};
}

ConfigRefusal CheckRsConfig(const ConfigValue& rollout_rs, const ConfigValue& threshold) {
  const auto* rs = std::get_if<std::string>(&rollout_rs);
  if (!rs)
    return {"rollout_rs", "ValueError: rollout_rs must be a non-empty string (comma separated for multiple options)."};
  if (std::holds_alternative<std::monostate>(threshold))
    return {"rollout_rs_threshold", "ValueError: rollout_rs_threshold must be provided for rejection sampling."};
  std::vector<std::string> options;
  try {
    options = ParseRolloutRsOptions(*rs);
  } catch (const VerlError& e) {
    return {"rollout_rs", e.what()};
  }
  try {
    ParseRolloutRsThresholds(options, threshold);
  } catch (const VerlError& e) {
    return {"rollout_rs_threshold", e.what()};
  }
  return {};
}

ConfigRefusal CheckPipelineConfig(const RolloutCorrectionSettings& s) {
  if (!std::holds_alternative<std::monostate>(s.rollout_is) &&
      !std::holds_alternative<std::monostate>(s.rollout_is_threshold)) {
    ConfigRefusal r = CheckIsConfig(s.rollout_is, s.rollout_is_threshold);
    if (!r.key.empty()) return r;
  }
  if (!std::holds_alternative<std::monostate>(s.rollout_rs)) {
    if (std::holds_alternative<std::monostate>(s.rollout_rs_threshold))
      return {"rollout_rs_threshold", "ValueError: rollout_rs_threshold must be explicitly provided when rollout_rs is "
                                      "enabled."};
    return CheckRsConfig(s.rollout_rs, s.rollout_rs_threshold);
  }
  return {};
}

void ThrowIfRefused(const Case& c, const ConfigRefusal& r, const std::string& case_key) {
  if (r.key.empty()) return;
  const std::string key = case_key.empty() ? r.key : case_key;
  const std::string noun = r.key == "rollout_is"   ? "an IS level"
                           : r.key == "rollout_rs" ? "an RS option list"
                           : r.key == "loss_type"  ? "a loss_type"
                                                   : "a threshold";
  const ConfigValue v = RawConfig(c.config, key, std::monostate{});
  const std::string text = std::holds_alternative<std::string>(v) ? PyQuote(std::get<std::string>(v)) : PyStr(v);
  throw BadInput(c.Where() + ": cfg." + key + ": " + text + " is not " + noun + " verl accepts (" + r.error +
                 "): verl raises for it, so the file did not come from verl");
}

// ------------------------------------------------------------------ names

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

std::vector<std::string> OffpolicyMetricNames(bool with_rollout) {
  std::vector<std::string> out = {"training_ppl", "training_log_ppl"};
  if (with_rollout)
    for (const char* k : {"kl", "k3_kl", "rollout_ppl", "rollout_log_ppl", "log_ppl_diff", "log_ppl_abs_diff",
                          "log_ppl_diff_max", "log_ppl_diff_min", "ppl_ratio", "chi2_token", "chi2_seq"})
      out.push_back(k);
  return out;
}

// ------------------------------------------------------------------ config and inputs

ConfigValue RawConfig(const Config& c, const std::string& key, const ConfigValue& verl_default) {
  auto it = c.values().find(key);
  if (it == c.values().end() || std::holds_alternative<std::monostate>(it->second)) return verl_default;
  return it->second;
}

Array RandomLogRatio(InputGen& g, int64_t b, int64_t t, DType d) {
  Array lr = Array::Matrix(b, t, d);
  const int regime = static_cast<int>(g.Int(0, 2));
  for (int64_t i = 0; i < b; ++i) {
    const bool stale = regime == 1 || (regime == 2 && g.Coin(0.5));
    const double sd = stale ? g.UniformScalar(0.5, 3.0) : g.UniformScalar(0.003, 0.03);
    std::normal_distribution<double> n(0.0, sd);
    const bool identical_row = g.Coin(0.1);
    for (int64_t j = 0; j < t; ++j) {
      const double v = n(g.rng());
      lr.at(i, j) = (identical_row || g.Coin(0.1)) ? 0.0 : v;
    }
  }
  RoundToDType(lr);
  return lr;
}

ConfigValue RandomIsThreshold(InputGen& g, bool icepop) {
  if (icepop) {
    static const char* const bands[] = {"0.5_2.0", "0.8_1.25", "1.0_2.0", "0.5_1.0", "0.5_5.0", "0.999_1.001", " 0.2_3 "};
    return std::string(bands[g.Int(0, 6)]);
  }
  switch (g.Int(0, 3)) {
    case 0: {
      static const double values[] = {1.0, 1.5, 2.0, 5.0, 10.0};
      return values[g.Int(0, 4)];
    }
    case 1:
      return g.UniformScalar(1.01, 4.0);
    case 2: {
      static const char* const texts[] = {"2.0", "1.5", "1", " 3.0 ", "1e1"};
      return std::string(texts[g.Int(0, 4)]);
    }
    default:
      return int64_t{2};
  }
}

std::string RandomRsThresholdEntry(InputGen& g, const std::string& option) {
  if (EndsWith(option, "k1")) {
    static const char* const k1[] = {"0.5_2.0", "0.999_1.001", "1.0_2.0", "0.5_1.0", "2.0",
                                     "1.5",     "0.8_1.25",    "0.9_1.1", "0.01_100", "1"};
    return k1[g.Int(0, 9)];
  }
  static const char* const upper[] = {"0.01", "0.001", "0.1", "0.5", "2.0", "5e-05", "1.0", "10"};
  return upper[g.Int(0, 7)];
}

}  // namespace verlconf::oracle
