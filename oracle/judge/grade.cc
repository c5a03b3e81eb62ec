#include "oracle/judge/grade.h"

#include <algorithm>
#include <cmath>

namespace verlconf {
namespace {

constexpr double kMaterialRel = 1e-3;

// About 84 float32 ulps, as a different summation order or a fused operation leaves; for
// float64 the same reasoning over the long reductions a batch has (thousands of ulps).
struct Rounding {
  double rel, abs_at_zero;
};
Rounding RoundingOf(DType dtype) { return dtype == DType::kFloat32 ? Rounding{1e-5, 1e-6} : Rounding{1e-12, 1e-13}; }

Grade Sized(double rel, double abs_at_zero, DType dtype) {
  if (!(rel <= kMaterialRel) || !(abs_at_zero <= kMaterialRel)) return Grade::kMaterial;
  const Rounding r = RoundingOf(dtype);
  if (rel <= r.rel && abs_at_zero <= r.abs_at_zero) return Grade::kRounding;
  return Grade::kSmall;
}

}  // namespace

const char* GradeName(Grade g) {
  switch (g) {
    case Grade::kRounding: return "rounding";
    case Grade::kSmall: return "small";
    case Grade::kMaterial: return "material";
    case Grade::kNone: break;
  }
  return "";
}

Grade FieldGrade(const FieldReport& f) {
  if (f.outcome != Outcome::kFailed && f.outcome != Outcome::kBaselined) return Grade::kNone;
  // Nothing element-wise: the other float dtype with every value within tolerance, or a
  // shape or a field missing its values.
  if (f.mismatched == 0) return f.dtype_differs ? Grade::kRounding : Grade::kMaterial;
  // Only the mismatched elements, each from the nearest value the reference allows it: an
  // element that took the other decision at a boundary is no measure of a miss elsewhere,
  // and one that took it with rounding on top is off by that rounding.
  if (f.grade_non_finite) return Grade::kMaterial;
  return Sized(f.grade_rel, f.grade_abs_at_zero, f.dtype);
}

Grade ValueGrade(double got, double want, DType dtype) {
  if (std::isfinite(got) != std::isfinite(want) || (!std::isfinite(got) && got != want)) return Grade::kMaterial;
  const double diff = std::fabs(got - want);
  return want == 0.0 ? Sized(0.0, diff, dtype) : Sized(diff / std::fabs(want), 0.0, dtype);
}

}  // namespace verlconf
