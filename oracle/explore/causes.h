// What a judged case's failures are, one per cause: a field's failing elements grouped by
// what the reference did there (a valid or a masked token, its ratio above or below 1 or
// its log-ratio beyond verl's clamp, the advantage's sign, a reference of exactly 0 where a
// clip or a mask stopped it, a decision boundary), how they fail (a wrong value, or a non-finite one) and how much
// (grade.h's grades, element by element). A field with a missing dual clip and a missing
// log-ratio clamp then shows two failures, each shrunk to its own minimal case.
#pragma once

#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/explore/golden.h"
#include "oracle/judge/case_report.h"

namespace verlconf::explore {

// The failures of `report` (the judge on `golden` and `got`), in field order; a field
// without elements to group (a scalar, a wrong shape) is one failure with no cause. A
// case failed on its error semantics is the one failure {"error", "exception vs result"},
// its cause what each side did ("IndexError where verl returns", "a result where verl
// raises ValueError").
std::vector<Failure> CaseFailures(const FunctionSpec& spec, const Case& golden, const Case& got,
                                  const CaseReport& report);

// The same from the report alone (no element is grouped): what a sharded row shows; the
// cases, where given, name an error difference's cause.
std::vector<Failure> ReportFailures(const CaseReport& report, const Case* golden = nullptr, const Case* got = nullptr);

}  // namespace verlconf::explore
