// What `conform check` prints and writes: the per-function table, the totals line and
// the Markdown report (the table, a function x field matrix, the failures).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/json.h"
#include "oracle/judge/judge.h"

namespace verlconf::tools {

// What was not provided: UNSUPPORTED cases, and UNSUPPORTED fields (of partial cases
// and of cases not provided at all).
struct Coverage {
  int unsupported_cases = 0;
  int unsupported_fields = 0;
  int partial_cases = 0;
};
Coverage CountCoverage(const std::vector<CaseReport>& reports);

// Every compared field of every compared case equal to the reference bit for bit, and at
// least one such case (`cases` of them): worth saying, since a copy of the goldens gives it.
bool BitForBit(const std::vector<CaseReport>& reports, int& cases);

// "N cases: P passed, F failed, ...; K partial, M field(s) not provided"
std::string Totals(const std::vector<CaseReport>& reports);

// An err/tol figure as the reports print it: "-" for nothing compared, "inf", else three
// significant digits (more where that would round a ratio above 1 down to 1).
std::string RatioText(const std::optional<double>& ratio);

// (function, family) of the functions whose every case is CaseReport::not_provided.
std::vector<std::pair<std::string, std::string>> FunctionsNotProvided(const std::vector<CaseReport>& reports);

// The worst compared element over some cases: its err/tol and, of that same element, its
// absolute and relative error (NaN where no element shows it: a shape, an error raised),
// with the case, field and index it lies at. A summary quotes one element so that its
// figures never mix maxima taken in different cases.
struct WorstElement {
  double err_tol = -1.0;  // < 0: nothing compared
  double abs = 0.0, rel = 0.0;
  std::string case_name, field;
  int64_t flat = -1;  // the element's flat index in `shape`; -1 where no element shows it
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat64;
  bool Empty() const { return err_tol < 0.0; }
  // Keeps the larger err/tol; on a tie the one offered first (the order cases were checked).
  void Offer(const WorstElement& other);
  // "case field(i, j)" ("case field" for a scalar), or "-" when empty.
  std::string Where() const;
  // "case(i, j)": where the field is named elsewhere (a row per field).
  std::string InField() const;
};
// The field's worst element; Empty() when the field compared nothing.
WorstElement FieldWorst(const FieldReport& f, const std::string& case_name, DType dtype);
// The case's worst element over its compared fields (an error case: the case alone, inf).
WorstElement CaseWorst(const CaseReport& r);
// As JSON: {err_tol, abs, rel (null where no element shows them), case, field, index}, or
// null when empty.
void WorstJson(JsonWriter& j, const WorstElement& w);
// A figure as the tables print it: "-" for NaN, else three significant digits.
std::string ErrorText(double v);

// One row per function: case outcomes, the worst err/tol per dtype, flips, partial cases
// and fields not provided. Functions not provided at all are one summary line unless
// `show_unsupported`.
void PrintTable(const std::vector<CaseReport>& reports, std::ostream& out, bool show_unsupported = false);

// `check --format json`: one object, schema kCheckSchema (tools/cli/commands.h): totals, then
// per function its outcome counts, worst err/tol per dtype and its cases, each with its
// outcome, err/tol, repro command and fields (outcome, err/tol, raw worst errors, index,
// tolerance). err/tol is a number, "inf", or null where nothing was compared.
// Where both sides of a check come from: the goldens' root attributes, and the
// candidate's (its producer and versions; for a built-in implementation, what it is).
// Candidate attributes copied unchanged from the goldens are left out: they say nothing
// about the candidate.
struct Provenance {
  std::string goldens_dir;
  std::map<std::string, std::string> goldens;
  std::string candidate;  // the --candidate path or the --impl name
  std::map<std::string, std::string> candidate_attrs;
};

std::string CheckJson(const std::vector<CaseReport>& reports, const Provenance& provenance, int exit_code);

// The table, the provenance of both sides, the function x field matrix, the differences
// (per failing field: how many cases, the worst err/tol, the first failing case and its
// repro) and every failing case in full.
std::string MarkdownReport(const std::string& title, const std::vector<CaseReport>& reports,
                           const Provenance& provenance);

}  // namespace verlconf::tools
