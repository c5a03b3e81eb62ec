// A baseline: a reviewed file of accepted differences, so that a framework can adopt the
// check in CI before every difference is fixed, and still fail on any new one.
//
// One entry a line:  FUNCTION [ROW]  FIELD  [CASE-GLOB]  [cause="CAUSE"]  # reason
//   FUNCTION   NAME or FAMILY/NAME, a registry function
//   ROW        `[dp k=K]` one dp-invariance row, `[dp k=*]` all of them; left out, the
//              function's own cases and every dp-invariance row of it
//   FIELD      a compared field (outputs/advantages, grads/log_prob, metrics/..., vjps/...),
//              or `error`: a case that failed on its error semantics (raised where verl
//              did not, or the other way round). Only an entry naming `error` covers those.
//   CASE-GLOB  which cases (shell glob on the case name); every case when left out
//   CAUSE      explore's cause group of the field (as its report prints it: "valid token,
//              ratio above 1, A < 0"): only those elements; left out, every cause
//   reason     required, after `#`; the placeholder --write-baseline writes is refused
// Blank lines and lines starting with `#` are comments.
#pragma once

#include <string>
#include <vector>

#include "oracle/judge/judge.h"

namespace verlconf::tools {

inline constexpr const char* kBaselinePlaceholder = "TODO: why this difference is accepted";

struct BaselineEntry {
  std::string file;
  int line = 0;
  std::string family;  // "" for any
  std::string function, field, case_glob, reason;
  // Which rows: kAllRows (the function and its dp rows), kEveryDpRow, or k for one row.
  static constexpr int64_t kAllRows = -1, kEveryDpRow = -2;
  int64_t dp_row = kAllRows;
  std::string cause;  // "" for every cause
  int covered = 0;    // failing fields it covered in this run
};

// A failing field of a report, with the cause group explore found it in ("" in check).
struct FailingKey {
  std::string field, cause;
};

struct Baseline {
  std::string file;
  std::vector<BaselineEntry> entries;
  // Entries that covered nothing although their function was judged in this run.
  std::vector<const BaselineEntry*> Stale(const std::vector<CaseReport>& reports) const;
  // Whether some entry accepts this failing key of `report` (a case that stays FAILED
  // through another key still has this one accepted: explore lists no difference for it);
  // the entry counts as having covered something.
  bool Accepts(const CaseReport& report, const FailingKey& key);
};

// BadInput naming the file and line on anything malformed.
Baseline LoadBaseline(const std::string& path);

// Every FAILED case whose failing fields (its error semantics as the field `error`) are
// all covered becomes BASELINED, its detail saying by which entries. Other outcomes are
// never touched: a baseline does not make a MISTRUSTED, UNSUPPORTED or SKIPPED case pass.
// `keys`, where given, lists each report's failing keys by cause (explore's groups);
// otherwise a report's failing fields are its keys, with no cause.
void ApplyBaseline(Baseline& baseline, std::vector<CaseReport>& reports,
                   const std::vector<std::vector<FailingKey>>* keys = nullptr);

// The failing (function, field) pairs of FAILED and BASELINED cases, one entry each, with
// the reason of the entry that covers it in `previous` (or the placeholder).
std::string BaselineText(const std::vector<CaseReport>& reports, const Baseline* previous);

}  // namespace verlconf::tools
