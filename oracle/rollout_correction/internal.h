// What the files implementing rollout_correction.h (and spec_common.cc) share and nothing
// else needs: the dtype and order rules under which verl's reductions run (reductions.cc),
// the boundary marker, and the text of a config value. Not part of the oracle's interface
// (rollout_correction.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/errors.h"
#include "oracle/core/tensor.h"
#include "oracle/core/torch_rules.h"

namespace verlconf::oracle::rollout_internal {

// torch.exp of a tensor of dtype d, in float64: beyond float32's range a float32 tensor
// holds inf (exp(89) already overflows), so a float32 case's unclamped exp does too.
inline double ExpIn(double x, DType d) {
  const double e = std::exp(x);
  return d == DType::kFloat32 && e > static_cast<double>(std::numeric_limits<float>::max())
             ? std::numeric_limits<double>::infinity()
             : e;
}

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---------------------------------------------------------------- dtype rules

// float32(x), overflowing to infinity as a float32 tensor would.
double ToFloat32(double x);

// `bool_tensor.float().mean()`: verl reduces these indicators in float32 whatever the
// input dtype, so a fraction like 1/3 is float32(1/3) even in a float64 case.
double Float32Fraction(int64_t count, int64_t n);

// A Python float next to a tensor (a comparison, a clamp bound) takes the tensor's dtype
// under torch's type promotion: in a float32 case verl compares with float32(threshold).
inline double TensorScalar(double v, DType d) { return d == DType::kFloat32 ? ToFloat32(v) : v; }

// masked_mean's denominator sum(mask) + 1e-8 as verl evaluates it (the 1e-8 vanishes in
// float32).
double MeanDenominator(double n, DType d);

// ---------------------------------------------------------------- reductions

bool AnyValid(const Array& mask);
double MaskTotal(const Array& mask);
// sqrt(clamp(E[x^2] - E[x]^2, min=0)) with verl's masked means, summed in torch's order.
double MaskedStd(const Array& x, const Array& mask);
// masked_mean(values, mask, axis=-1): one value per row.
Array RowMeans(const Array& values, const Array& mask);
std::vector<double> RowMaskedSums(const Array& values, const Array& mask);
std::vector<double> RowMaskTotals(const Array& mask);
double Mean(const std::vector<double>& v);
// torch's Tensor.std(): unbiased.
double UnbiasedStd(const std::vector<double>& v);
// torch max / min propagate NaN.
double Max(const std::vector<double>& v);
double Min(const std::vector<double>& v);
// torch.clamp(x, lo, hi): a NaN bound or value gives NaN, lo > hi gives hi.
double ClampBoth(double x, double lo, double hi);

// ---------------------------------------------------------------- decisions and errors

// ---------------------------------------------------------------- exactness
// A decision is a rounding question only where the statistic's own computation rounds.
// These say, for values of the case's dtype d, whether an operation verl performs on a
// tensor of d gives its exact result: then every correct formulation gets the same
// number, and a statistic exactly on its bound is decided by the comparison alone.

// a - b.
bool DiffIsExact(double a, double b, DType d);
// a * b.
bool ProductIsExact(double a, double b, DType d);
// q = num / den: q representable and q * den == num exactly.
bool QuotientIsExact(double q, double num, double den, DType d);
// The sum of `terms` in every order: each term and every partial sum representable in d
// (all terms multiples of one power of two, and their absolute sum below the precision).
bool SumIsExactInAnyOrder(const std::vector<double>& terms, DType d);

// The mean verl takes of a row's valid `terms` (masked_mean over the last axis), given
// that each term is exact: whether the sum and the division are exact too.
bool RowMeanIsExact(const std::vector<double>& terms, double mean, double total, DType d);

// Marks decisions within rounding of their threshold (Result::boundary).
class Boundary {
 public:
  explicit Boundary(const Array& mask)
      : b_(mask.shape, mask.dtype), eps_(mask.dtype == DType::kFloat32 ? kEps32 : kEps64) {}
  // |x - bound| within kDecisionUlps epsilons of everything that fed the comparison:
  // err (the caller's estimate of x's accumulated rounding, in units of x), |x|, |bound|.
  // err == 0 says x was computed exactly (every operation exact in the dtype): then no
  // formulation can land elsewhere, and x exactly on its bound is not a rounding
  // question but the comparison's own (inclusive or exclusive) decision.
  bool Near(double x, double bound, double err) const {
    if (!std::isfinite(bound) || !std::isfinite(x) || err == 0.0) return false;
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

// The rounding of log_ratio[k] in epsilons: the caller's estimate, or 0 when it gave
// none (the log-ratio is the function's input: every implementation receives that very
// number).
inline double LrErr(const Array* err, int64_t k) { return err ? (*err)[k] : 0.0; }

[[noreturn]] inline void NoValidToken() {
  throw VerlError("ValueError", "response_mask must contain at least one valid token (1).");
}

// A config value as verl's f-string shows it in a message: a string bare, else PyStr.
std::string DescribeValue(const ConfigValue& v);

}  // namespace verlconf::oracle::rollout_internal
