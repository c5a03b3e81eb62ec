#include "oracle/judge/grade.h"

#include <algorithm>
#include <cmath>

namespace verlconf {
namespace {

constexpr double kMaterialRel = 1e-3;
constexpr double kRoundingRel = 1e-5;
constexpr double kRoundingAbsAtZero = 1e-6;

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
  if (f.mismatched == 0) return Grade::kMaterial;  // a shape, a dtype, a field missing its values
  // Only the mismatched elements, each from the nearest value the reference allows it: an
  // element that took the other decision at a boundary is no measure of a miss elsewhere,
  // and one that took it with rounding on top is off by that rounding.
  if (f.grade_non_finite) return Grade::kMaterial;
  const double rel = f.grade_rel, abs_at_zero = f.grade_abs_at_zero;
  if (!(rel <= kMaterialRel) || !(abs_at_zero <= kMaterialRel)) return Grade::kMaterial;
  if (rel <= kRoundingRel && abs_at_zero <= kRoundingAbsAtZero) return Grade::kRounding;
  return Grade::kSmall;
}

}  // namespace verlconf
