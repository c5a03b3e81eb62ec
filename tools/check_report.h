// What `conform check` prints and writes: the per-function table, the totals line and
// the Markdown report (the table, a function x field matrix, the failures).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "oracle/core/check.h"

namespace verlconf::tools {

// What was not provided: UNSUPPORTED cases, and UNSUPPORTED fields (of partial cases
// and of cases not provided at all).
struct Coverage {
  int unsupported_cases = 0;
  int unsupported_fields = 0;
  int partial_cases = 0;
};
Coverage CountCoverage(const std::vector<CaseReport>& reports);

// "N cases: P passed, F failed, ...; K partial, M field(s) not provided"
std::string Totals(const std::vector<CaseReport>& reports);

// One row per function: case outcomes, worst errors, flips, partial cases and fields
// not provided.
void PrintTable(const std::vector<CaseReport>& reports, std::ostream& out);

std::string MarkdownReport(const std::string& title, const std::vector<CaseReport>& reports);

}  // namespace verlconf::tools
