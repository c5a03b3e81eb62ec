// One case's verdict: the outcome, each field's comparison, and the line that says why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/grade.h"

namespace verlconf {

struct CaseReport {
  std::string family;
  std::string function;
  std::string case_name;
  std::string where;  // file:/function/case
  DType dtype = DType::kFloat64;
  Outcome outcome = Outcome::kPassed;
  std::string detail;  // one line: why FAILED / MISTRUSTED / UNSUPPORTED
  std::vector<FieldReport> fields;
  std::string repro;  // a command line that reproduces this check
  double worst_rel = 0.0;
  // The worst FieldReport::err_tol over the compared fields (+inf when the case failed on
  // its error semantics): <= 1 for a case that did not fail, > 1 for one that did. nullopt
  // when nothing numeric was compared (UNSUPPORTED, SKIPPED, raised as verl does).
  std::optional<double> err_tol;
  // The implementation or candidate gave nothing for this case: no result, no error and
  // no decline (a candidate without the case or without its outputs, an implementation
  // without the function). `conform check` folds a function whose every case is so into
  // one line.
  bool not_provided = false;
  // Elements that differ only where rounding can flip a threshold decision (the fields
  // still pass; the count is shown so that a decision difference is never invisible).
  int64_t flips = 0;
  // Some expected fields were not produced: the case is judged on the others, and each
  // missing one is an UNSUPPORTED field.
  bool partial = false;

  std::string Describe() const;  // multi-line, for failures

  // A report about `c` that compared nothing: UNSUPPORTED or SKIPPED, with the reason.
  static CaseReport NotCompared(const Case& c, Outcome outcome, const std::string& detail);
};

// The case's outcome from its fields': FAILED if any failed; UNSUPPORTED if none was
// produced; MISTRUSTED if none that passed proves anything (zeros, no finite number);
// PASSED otherwise. Fills err_tol, worst_rel, flips, partial and detail.
void FoldOutcome(CaseReport& r);

// The worst of the failed fields' grades; material for a case failed on its error semantics.
Grade CaseGrade(const CaseReport& r);

}  // namespace verlconf
