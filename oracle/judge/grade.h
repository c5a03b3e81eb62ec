// How large a failure is, from the judged numbers alone, so that a reader sees the few
// material differences before the many at rounding level. The verdict does not depend on
// it: every grade is a failure. A case's grade (its fields' worst) is case_report.h's.
#pragma once

#include "oracle/judge/compare.h"

namespace verlconf {

// "Rounding" is the case dtype's: a float64 case off by float32 rounding (a framework
// computing in float32, an epsilon of 1e-8 placed differently) is systematic, not rounding.
enum class Grade {
  kNone,      // not a failure
  kRounding,  // every differing element within the dtype's rounding: float32 1e-5 relative
              // (1e-6 absolute where the reference is 0), float64 1e-12 (1e-13); or only
              // the dtype differs and every value agrees
  kSmall,     // larger than that, within 1e-3 relative
  kMaterial,  // a relative error above 1e-3 somewhere (1e-3 absolute where the reference is
              // 0), a non-finite value where the reference has a number or the other way
              // round, a wrong shape, or an error where verl returned (or the reverse)
};
const char* GradeName(Grade g);

Grade FieldGrade(const FieldReport& f);

// One element's grade: got against want in a case of `dtype`.
Grade ValueGrade(double got, double want, DType dtype);

}  // namespace verlconf
