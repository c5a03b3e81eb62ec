// The judge: run an implementation (or take a candidate's stored result) on one golden
// case and compare it with the reference, field by field, into one outcome per case.
// Tolerances are tolerance.h's, the reference side's decisions reference.h's, the
// folding of fields into a case case_report.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/judge/case_report.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/tolerance.h"
#include "oracle/judge/validate.h"

namespace verlconf {

// Compares `got` (or the error the implementation raised) with the golden case.
// `raised` is "<Kind>: <message>" when the implementation raised a verl error.
// `verl_version`: the golden's release. A non-finite golden where the oracle's semantics
// give a number is a file verl did not produce only for the release the oracle mirrors.
// `reference`: the function whose values the golden holds, where it is not the oracle on
// the golden's inputs (a sharded case's, sharding::ShardedSemantics): the decisions at a
// boundary are pushed through it.
CaseReport CompareResult(const FunctionSpec& spec, const Case& golden, const Result* got,
                         const std::optional<std::string>& raised, const std::string& verl_version = kOracleVerlVersion,
                         const RunFn* reference = nullptr);

// A golden case whose capture declined it (the captured verl lacks the function: a drift
// set): UNSUPPORTED with the reason. BadInput if it also carries a result.
CaseReport DeclinedGolden(const Case& golden);

// Runs `impl` on the golden's inputs and compares. Unsupported → UNSUPPORTED.
// BadInput propagates (the CLI exits 2).
// `verl_version`: the golden's release (ValidateGolden).
CaseReport CheckImplementation(const FunctionSpec& spec, const Case& golden, const RunFn& impl,
                               const std::string& verl_version = kOracleVerlVersion);

}  // namespace verlconf
