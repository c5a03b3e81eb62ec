// Checking one case: run an implementation (or take a candidate's stored result) and
// compare it with the golden, field by field, into one outcome per case.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/compare.h"
#include "oracle/core/registry.h"
#include "oracle/core/validate.h"

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

// The tolerance for one field: the dtype default, or the spec's override; for float32
// cases scaled by the spec's condition number of the case, when it defines one.
Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, DType dtype);
Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, const Case& c);

// The registry's rules for a spec's tolerance table: every override loosens the dtype's
// default and says why, and no field is given twice. std::logic_error otherwise (the
// registry refuses to build).
void ValidateTolerances(const FunctionSpec& spec);

// Compares `got` (or the error the implementation raised) with the golden case.
// `raised` is "<Kind>: <message>" when the implementation raised a verl error.
// `verl_version`: the golden's release. A non-finite golden where the oracle's semantics
// give a number is a file verl did not produce only for the release the oracle mirrors.
CaseReport CompareResult(const FunctionSpec& spec, const Case& golden, const Result* got,
                         const std::optional<std::string>& raised,
                         const std::string& verl_version = kOracleVerlVersion);

// A golden case whose capture declined it (the captured verl lacks the function: a drift
// set): UNSUPPORTED with the reason. BadInput if it also carries a result.
CaseReport DeclinedGolden(const Case& golden);

// Runs `impl` on the golden's inputs and compares. Unsupported → UNSUPPORTED.
// BadInput propagates (the CLI exits 2).
// `verl_version`: the golden's release (ValidateGolden).
CaseReport CheckImplementation(const FunctionSpec& spec, const Case& golden, const RunFn& impl,
                               const std::string& verl_version = kOracleVerlVersion);

}  // namespace verlconf
