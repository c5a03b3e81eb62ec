#include "oracle/core/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace verlconf {
namespace {

// The named factors of the default table (see tolerance.h).
constexpr double kF64RelUlps = 262144.0;  // 2^18
constexpr double kF64AbsUlps = 1024.0;    // 2^10
constexpr double kF32RelUlps = 256.0;     // 2^8
constexpr double kF32AbsUlps = 256.0;     // 2^8

// NaN matches NaN and an infinity matches the same infinity: verl's own NaN (0/0 on an
// empty batch) is a value to reproduce, not an error.
bool SameSpecial(double g, double w) {
  if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
  return g == w;  // infinities
}

}  // namespace

Tolerance DefaultTolerance(DType d) {
  if (d == DType::kFloat32) return {kF32RelUlps * kEps32, kF32AbsUlps * kEps32, ""};
  return {kF64RelUlps * kEps64, kF64AbsUlps * kEps64, ""};
}

Tolerance ExactTolerance() { return {0.0, 0.0, "discrete output: compared exactly"}; }

double ErrorRatio(double got, double want, const Tolerance& tol) { return ErrorRatio(got, want, tol, -1); }

double ErrorRatio(double got, double want, const Tolerance& tol, int64_t k) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(got) || !std::isfinite(want)) return SameSpecial(got, want) ? 0.0 : kInf;
  const double diff = std::fabs(got - want);  // +inf when the difference overflows
  const double allowed = tol.AtolAt(k) + tol.rtol * std::fabs(want);
  if (!(allowed > 0.0)) return diff == 0.0 ? 0.0 : kInf;
  // Correctly rounded division is monotone and allowed / allowed == 1, so diff <= allowed
  // gives a ratio <= 1; diff > allowed means diff >= the next double above allowed, whose
  // quotient exceeds 1 by more than half an ulp of 1 and so rounds above 1.
  return diff / allowed;
}

double SumRoundingEps(int64_t terms) {
  return std::ceil(std::log2(static_cast<double>(std::max<int64_t>(terms, 2)))) + 8.0;
}

}  // namespace verlconf
