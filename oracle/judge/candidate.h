// Checking a candidate's stored case (a file another framework wrote, in the fixture
// schema) against the golden case of the same name.
//
// The candidate is held to the schema as strictly as a golden: its inputs and config
// must be the golden's, every output, gradient and metric name must be one the
// function has, and every stored dataset must be floating. What it computed is then
// judged field by field; what it did not compute is UNSUPPORTED, never passed.
#pragma once

#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/judge/judge.h"

namespace verlconf {

// Every field a case holds, as "outputs/<name>", "grads/<name>", "metrics/<name>".
std::vector<std::string> FieldNames(const Case& c);

// A golden case nobody computed: UNSUPPORTED with `why`, and one UNSUPPORTED
// FieldReport per golden field, so that coverage counts see each field not provided.
CaseReport NotProvided(const Case& golden, const std::string& why);

// Whether `name` is one the registry's `pattern` stands for: a "<...>" placeholder (the
// registry writes "rollout_rs_<option>_mean" for names that depend on the config) is one
// or more characters other than '/'.
bool MatchesNamePattern(const std::string& pattern, const std::string& name);

// Compares a candidate's stored case with the golden one.
//  - BadInput: the candidate's inputs or config differ from the golden's, it has an
//    input the golden lacks, an output/gradient/metric name the function does not
//    have, a nested group under outputs/ or grads/, a non-float dataset, or both a
//    result and `expect_error` / `declined`.
//  - UNSUPPORTED: the case is declined (attribute `declined`, the reason shown) or
//    carries neither a result nor an error.
//  - Partial: some golden fields are missing; the case is judged on the others
//    (CaseReport::partial) and each missing field is an UNSUPPORTED FieldReport.
//  - A float32 dataset in a float64 case (or the reverse) is the candidate's real
//    result: that field FAILS, saying which dtype it returned.
// `verl_version`: the golden's release (ValidateGolden).
CaseReport CheckCandidate(const FunctionSpec& spec, const Case& golden, const Case& candidate,
                          const std::string& verl_version = kOracleVerlVersion);

}  // namespace verlconf
