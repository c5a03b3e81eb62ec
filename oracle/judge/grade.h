// How large a failure is, from the judged numbers alone, so that a reader sees the few
// material differences before the many at rounding level. The verdict does not depend on
// it: every grade is a failure. A case's grade (its fields' worst) is case_report.h's.
#pragma once

#include "oracle/judge/compare.h"

namespace verlconf {

enum class Grade {
  kNone,      // not a failure
  kRounding,  // every differing element within 1e-5 relative (1e-6 absolute where the
              // reference is 0): float32 rounding, an epsilon placed differently
  kSmall,     // larger than that, within 1e-3 relative
  kMaterial,  // a relative error above 1e-3 somewhere (1e-3 absolute where the reference is
              // 0), a non-finite value where the reference has a number or the other way
              // round, a wrong shape or dtype, or an error where verl returned (or the reverse)
};
const char* GradeName(Grade g);

Grade FieldGrade(const FieldReport& f);

}  // namespace verlconf
