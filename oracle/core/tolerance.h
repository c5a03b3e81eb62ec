// What "close" means: |got - want| <= atol + rtol * |want| elementwise, and the default
// tolerance of each dtype. The registry's tolerance tables (FunctionSpec::tolerances) are
// written in these terms; the judge (oracle/judge/) applies them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/tensor.h"

namespace verlconf {

struct Tolerance {
  Tolerance() = default;
  Tolerance(double r, double a, std::string why = "") : rtol(r), atol(a), reason(std::move(why)) {}
  double rtol = 0.0;
  double atol = 0.0;
  std::string reason;  // why it differs from the default ("" for the default)
  // Per element of the field (flat index), a factor in [0, 1] on atol: an element that is a
  // small coefficient times a quantity of order one (a KL penalty of 1e-3 * kld) rounds at
  // that scale, not at 1. Null: 1 everywhere.
  std::shared_ptr<const std::vector<double>> atol_scale;
  double AtolAt(int64_t k) const {
    return atol_scale && k >= 0 && static_cast<size_t>(k) < atol_scale->size() ? atol * (*atol_scale)[k] : atol;
  }
};

// The default per dtype, as multiples of that dtype's machine epsilon:
//   float64: rtol = 2^18 eps64 (5.8e-11), atol = 2^10 eps64 (2.3e-13). Oracle and
//            verl compute the same formulas in the same precision; only rounding
//            differs, so anything beyond means different semantics.
//   float32: rtol = 2^8 eps32 (3.1e-5), atol = 2^8 eps32. verl computes in float32,
//            the oracle in float64 from the same float32 inputs.
Tolerance DefaultTolerance(DType d);
// Tolerance for discrete outputs (masks, fractions): exact.
Tolerance ExactTolerance();

// |got - want| as a multiple of what the tolerance allows at `want`, atol + rtol * |want|.
// This is the element test itself: an element is within tolerance exactly when the ratio
// is <= 1 (Close), so a figure reported from it can never contradict the verdict. 0 for
// matching non-finite values (NaN and NaN, the same infinity); +inf for any other pair
// with a non-finite value, and for any difference where nothing is allowed (exact).
double ErrorRatio(double got, double want, const Tolerance& tol);
// The same at element k of the field (Tolerance::atol_scale).
double ErrorRatio(double got, double want, const Tolerance& tol, int64_t k);

// How many epsilons of the sum of |terms| a float sum of `terms` terms may be off by:
// ceil(log2 n) for a pairwise order (torch's reductions), and a few more for the reduction
// tail and the operations around it.
double SumRoundingEps(int64_t terms);
inline bool Close(double got, double want, const Tolerance& tol) { return ErrorRatio(got, want, tol) <= 1.0; }
inline bool Close(double got, double want, const Tolerance& tol, int64_t k) {
  return ErrorRatio(got, want, tol, k) <= 1.0;
}

}  // namespace verlconf
