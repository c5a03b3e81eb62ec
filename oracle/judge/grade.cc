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
  double rel = std::isfinite(f.worst_rel) ? f.worst_rel : 0.0;
  double abs_at_zero = 0.0;
  for (const auto& p : f.worst_mismatches) {
    if (std::isfinite(p.got) != std::isfinite(p.want)) return Grade::kMaterial;
    if (!std::isfinite(p.want)) return Grade::kMaterial;  // a different infinity or NaN
    if (p.want == 0.0)
      abs_at_zero = std::max(abs_at_zero, std::fabs(p.got));
    else
      rel = std::max(rel, std::fabs(p.got - p.want) / std::fabs(p.want));
  }
  if (!std::isfinite(f.worst_abs)) return Grade::kMaterial;
  if (rel > kMaterialRel || abs_at_zero > kMaterialRel) return Grade::kMaterial;
  if (rel <= kRoundingRel && abs_at_zero <= kRoundingAbsAtZero) return Grade::kRounding;
  return Grade::kSmall;
}

Grade CaseGrade(const CaseReport& r) {
  if (r.outcome != Outcome::kFailed && r.outcome != Outcome::kBaselined) return Grade::kNone;
  Grade g = Grade::kNone;
  for (const auto& f : r.fields) g = std::max(g, FieldGrade(f));
  return g == Grade::kNone ? Grade::kMaterial : g;
}

}  // namespace verlconf
