#include "tools/check_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace verlconf::tools {
namespace {

std::string Sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", v);
  return b;
}

struct Row {
  std::string family;
  int cases = 0;
  std::map<Outcome, int> by;
  double worst64 = 0.0, worst32 = 0.0;
  int64_t flips = 0;
  int partial = 0;
  int fields_unsupported = 0;
  int n(Outcome o) const {
    auto it = by.find(o);
    return it == by.end() ? 0 : it->second;
  }
};

int UnsupportedFields(const CaseReport& r) {
  int n = 0;
  for (const auto& f : r.fields) n += f.outcome == Outcome::kUnsupported;
  return n;
}

// One row per (function, family), in name order.
std::map<std::pair<std::string, std::string>, Row> Tabulate(const std::vector<CaseReport>& reports) {
  std::map<std::pair<std::string, std::string>, Row> rows;
  for (const auto& r : reports) {
    Row& row = rows[{r.function, r.family}];
    row.family = r.family.empty() ? "?" : r.family;
    ++row.cases;
    ++row.by[r.outcome];
    double& w = r.dtype == DType::kFloat64 ? row.worst64 : row.worst32;
    w = std::max(w, r.worst_rel);
    row.flips += r.flips;
    row.partial += r.partial;
    row.fields_unsupported += UnsupportedFields(r);
  }
  return rows;
}

// Per (function, family) and field: how each field fared over the function's cases.
struct FieldCounts {
  int passed = 0, failed = 0, not_provided = 0, mistrusted = 0;
};

std::map<std::pair<std::string, std::string>, std::map<std::string, FieldCounts>> FieldMatrix(
    const std::vector<CaseReport>& reports) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, FieldCounts>> m;
  for (const auto& r : reports) {
    auto& fields = m[{r.function, r.family}];
    if (r.fields.empty()) {
      // Error cases (verl raised) and cases compared as a whole.
      const char* what = r.outcome == Outcome::kUnsupported ? "(whole case)" : "(raises as verl does)";
      FieldCounts& c = fields[what];
      switch (r.outcome) {
        case Outcome::kPassed: ++c.passed; break;
        case Outcome::kFailed: ++c.failed; break;
        case Outcome::kMistrusted: ++c.mistrusted; break;
        case Outcome::kUnsupported: ++c.not_provided; break;
        case Outcome::kSkipped: break;
      }
      continue;
    }
    for (const auto& f : r.fields) {
      FieldCounts& c = fields[f.field];
      switch (f.outcome) {
        // A field that agrees in a case that proves nothing is no evidence either.
        case Outcome::kPassed: ++(r.outcome == Outcome::kMistrusted ? c.mistrusted : c.passed); break;
        case Outcome::kFailed: ++c.failed; break;
        case Outcome::kMistrusted: ++c.mistrusted; break;
        case Outcome::kUnsupported: ++c.not_provided; break;
        case Outcome::kSkipped: break;
      }
    }
  }
  return m;
}

}  // namespace

Coverage CountCoverage(const std::vector<CaseReport>& reports) {
  Coverage c;
  for (const auto& r : reports) {
    c.unsupported_cases += r.outcome == Outcome::kUnsupported;
    c.unsupported_fields += UnsupportedFields(r);
    c.partial_cases += r.partial;
  }
  return c;
}

std::string Totals(const std::vector<CaseReport>& reports) {
  int t[5] = {0, 0, 0, 0, 0};
  for (const auto& r : reports) ++t[static_cast<int>(r.outcome)];
  const Coverage c = CountCoverage(reports);
  return std::to_string(reports.size()) + " cases: " + std::to_string(t[0]) + " passed, " + std::to_string(t[1]) +
         " failed, " + std::to_string(t[2]) + " mistrusted, " + std::to_string(t[4]) + " unsupported, " +
         std::to_string(t[3]) + " skipped; " + std::to_string(c.partial_cases) + " partial, " +
         std::to_string(c.unsupported_fields) + " field(s) not provided";
}

void PrintTable(const std::vector<CaseReport>& reports, std::ostream& out) {
  char line[320];
  std::snprintf(line, sizeof line, "%-46s %-18s %5s %6s %6s %6s %6s %10s %10s %6s %7s %9s\n", "function", "family",
                "cases", "passed", "failed", "mistr", "unsup", "worst f64", "worst f32", "flips", "partial",
                "unsup-fld");
  out << line;
  for (const auto& [key, row] : Tabulate(reports)) {
    std::snprintf(line, sizeof line, "%-46s %-18s %5d %6d %6d %6d %6d %10s %10s %6lld %7d %9d\n", key.first.c_str(),
                  row.family.c_str(), row.cases, row.n(Outcome::kPassed), row.n(Outcome::kFailed),
                  row.n(Outcome::kMistrusted), row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped),
                  Sci(row.worst64).c_str(), Sci(row.worst32).c_str(), static_cast<long long>(row.flips), row.partial,
                  row.fields_unsupported);
    out << line;
  }
  out << "\n" << Totals(reports) << "\n";
}

std::string MarkdownReport(const std::string& title, const std::vector<CaseReport>& reports) {
  std::ostringstream o;
  o << "# " << title << "\n\n" << Totals(reports) << "\n\n";
  o << "| function | family | cases | passed | failed | mistrusted | unsupported/skipped | worst rel f64 | worst rel "
       "f32 | "
       "flips | partial | fields not provided |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, row] : Tabulate(reports))
    o << "| `" << key.first << "` | " << row.family << " | " << row.cases << " | " << row.n(Outcome::kPassed) << " | "
      << row.n(Outcome::kFailed) << " | " << row.n(Outcome::kMistrusted) << " | "
      << row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped) << " | " << Sci(row.worst64) << " | "
      << Sci(row.worst32) << " | " << row.flips << " | " << row.partial << " | " << row.fields_unsupported << " |\n";
  o << "\n## Fields\n\nPer function and field, over its cases: how many times the field passed, failed, was not "
       "provided (UNSUPPORTED), or agreed where agreement proves nothing (mistrusted). A framework that computes "
       "some fields of a function is conforming on those it computes.\n\n"
       "| function | family | field | passed | failed | not provided | mistrusted |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [key, fields] : FieldMatrix(reports))
    for (const auto& [field, c] : fields)
      o << "| `" << key.first << "` | " << key.second << " | `" << field << "` | " << c.passed << " | " << c.failed
        << " | " << c.not_provided << " | " << c.mistrusted << " |\n";
  bool first = true;
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    if (first) o << "\n## Failures\n";
    first = false;
    o << "\n```\n" << r.Describe() << "\n```\n";
  }
  return o.str();
}

}  // namespace verlconf::tools
