// The reductions behind rollout correction's metrics, evaluated as torch evaluates them:
// in the dtype verl's tensors have (float32 indicators and thresholds) and, where the
// formula cancels, in torch's own summation order. Elsewhere sums are exact (ExactSum),
// the value any correctly rounded float64 implementation approaches.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "oracle/core/sum.h"
#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
namespace {

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

namespace rollout_internal {

// float32(x) with round-to-nearest overflow to infinity (a plain cast is undefined
// beyond FLT_MAX).
double ToFloat32(double x) {
  if (!std::isfinite(x)) return x;
  const double max32 = static_cast<double>(std::numeric_limits<float>::max());
  if (std::fabs(x) > max32)
    return std::fabs(x) < 3.4028235677973366e38 ? std::copysign(max32, x) : std::copysign(kInf, x);
  return static_cast<double>(static_cast<float>(x));
}

// `bool_tensor.float().mean()`: verl reduces these indicators in float32 whatever the
// input dtype, so a fraction like 1/3 is float32(1/3) even in a float64 case. (The
// count is exact; torch's CPU mean divides the float32 sum by n, correctly rounded,
// which rounding the double quotient reproduces.)
namespace {
bool FitsDtype(double v, DType d) { return std::isfinite(v) && (d != DType::kFloat32 || ToFloat32(v) == v); }
}  // namespace

bool DiffIsExact(double a, double b, DType d) {
  const double s = a - b;
  // TwoSum(a, -b): the rounding error of the double subtraction, exactly.
  const double bv = s - a, av = s - bv;
  const double err = (a - av) + (-b - bv);
  return FitsDtype(s, d) && err == 0.0;
}

bool ProductIsExact(double a, double b, DType d) {
  const double p = a * b;
  return FitsDtype(p, d) && std::fma(a, b, -p) == 0.0;
}

bool QuotientIsExact(double q, double num, double den, DType d) {
  return FitsDtype(q, d) && FitsDtype(den, d) && den != 0.0 && std::fma(q, den, -num) == 0.0;
}

bool SumIsExactInAnyOrder(const std::vector<double>& terms, DType d) {
  const int precision = d == DType::kFloat32 ? 24 : 53;
  int lowest = std::numeric_limits<int>::max();
  double abs_sum = 0.0;
  for (double t : terms) {
    if (!FitsDtype(t, d)) return false;
    if (t == 0.0) continue;
    int e = 0;
    const double m = std::frexp(std::fabs(t), &e);  // t = m 2^e, m in [0.5, 1)
    // The mantissa as a 53-bit integer; its trailing zeros place the lowest set bit.
    auto bits = static_cast<uint64_t>(std::ldexp(m, 53));
    int tz = 0;
    while ((bits & 1u) == 0) bits >>= 1, ++tz;
    lowest = std::min(lowest, e - 53 + tz);
    abs_sum += std::fabs(t);
  }
  if (lowest == std::numeric_limits<int>::max()) return true;  // every term zero
  // Every partial sum is a multiple of 2^lowest of magnitude at most abs_sum; below
  // 2^(lowest + precision - 1) (half the range, so abs_sum's own rounding cannot matter)
  // each one is representable.
  return abs_sum < std::ldexp(1.0, lowest + precision - 1);
}

bool RowMeanIsExact(const std::vector<double>& terms, double mean, double total, DType d) {
  if (!SumIsExactInAnyOrder(terms, d)) return false;
  double sum = 0.0;
  for (double t : terms) sum += t;  // exact: SumIsExactInAnyOrder
  return QuotientIsExact(mean, sum, MeanDenominator(total, d), d);
}

double Float32Fraction(int64_t count, int64_t n) {
  return ToFloat32(static_cast<double>(count) / static_cast<double>(n));
}

// A value sitting exactly on a threshold (a row of ratio-1 tokens against a bound of 1)
// is decided by whether the 1e-8 survives: in a float32 case float32(n + 1e-8) == n for
// n >= 1.
double MeanDenominator(double n, DType d) {
  return d == DType::kFloat32 ? ToFloat32(n + static_cast<double>(static_cast<float>(kMaskedMeanEps)))
                              : n + kMaskedMeanEps;
}

namespace {

// verl's masked_mean(values, mask) over the whole tensor with torch's own float64
// summation order (TorchCpuSum): for the metrics whose formula cancels.
double TorchOrderMaskedMean(const Array& values, const Array& mask) {
  std::vector<double> terms(values.data.size());
  for (size_t k = 0; k < terms.size(); ++k) terms[k] = mask.data[k] != 0.0 ? values.data[k] * mask.data[k] : 0.0;
  return TorchCpuSum(terms) / (TorchCpuSum(mask.data) + kMaskedMeanEps);
}

}  // namespace

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

// E[x^2] and E[x]^2 nearly cancel when the clamped values hardly spread (all at the
// threshold: the std is then ~ x * sqrt(1e-8 / n), the masked_mean's 1e-8 offset), so
// the sums follow torch's order.
double MaskedStd(const Array& x, const Array& mask) {
  Array sq(x.shape, x.dtype);
  for (int64_t k = 0; k < x.size(); ++k) sq[k] = x[k] * x[k];
  const double mean = TorchOrderMaskedMean(x, mask);
  const double var = TorchOrderMaskedMean(sq, mask) - mean * mean;
  return std::sqrt(std::isnan(var) ? var : std::max(var, 0.0));
}

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

double UnbiasedStd(const std::vector<double>& v) {
  const double m = Mean(v);
  ExactSum s;
  for (double x : v) s.Add((x - m) * (x - m));
  return std::sqrt(s.Value() / static_cast<double>(v.size() - 1));
}

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

double ClampBoth(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNaN;
  return std::min(std::max(x, lo), hi);  // torch: lo > hi gives hi
}

}  // namespace rollout_internal
}  // namespace verlconf::oracle
