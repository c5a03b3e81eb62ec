// `conform check`: the conformance table of an implementation or a candidate file
// against a golden set.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "cuda_impl/entries.h"
#include "oracle/check.h"
#include "oracle/errors.h"
#include "tools/commands.h"
#include "tools/golden_set.h"
#include "tools/junit.h"
#include "tools/paths.h"
#include "tools/progress.h"

namespace verlconf::tools {
namespace {

// `only`: comma-separated "function" or "function/case" entries ("" selects everything).
bool Selected(const std::string& only, const Case& c) {
  if (only.empty()) return true;
  size_t start = 0;
  while (start <= only.size()) {
    const size_t comma = std::min(only.find(',', start), only.size());
    const std::string one = only.substr(start, comma - start);
    const size_t slash = one.find('/');
    if (slash == std::string::npos ? c.function == one
                                   : c.function == one.substr(0, slash) && c.name == one.substr(slash + 1))
      return true;
    start = comma + 1;
  }
  return false;
}

std::string Repro(const CheckOptions& o, const Case& c) {
  std::string r = "bazel run //tools:conform -- check";
  if (o.against_given) r += " --against " + o.against;
  if (!o.candidate.empty()) r += " --candidate " + o.candidate;
  if (o.impl != "oracle") r += " --impl " + o.impl;
  return r + " --only " + c.function + "/" + c.name;
}

CaseReport Unsupported(const Case& c, const std::string& why) {
  return CaseReport::NotCompared(c, Outcome::kUnsupported, why);
}

CaseReport Skipped(const Case& c, const std::string& why) { return CaseReport::NotCompared(c, Outcome::kSkipped, why); }

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
  int n(Outcome o) const {
    auto it = by.find(o);
    return it == by.end() ? 0 : it->second;
  }
};

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
  }
  return rows;
}

std::string Totals(const std::vector<CaseReport>& reports) {
  int t[5] = {0, 0, 0, 0, 0};
  for (const auto& r : reports) ++t[static_cast<int>(r.outcome)];
  return std::to_string(reports.size()) + " cases: " + std::to_string(t[0]) + " passed, " + std::to_string(t[1]) +
         " failed, " + std::to_string(t[2]) + " mistrusted, " + std::to_string(t[4]) + " unsupported, " +
         std::to_string(t[3]) + " skipped";
}

void PrintTable(const std::vector<CaseReport>& reports, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%-46s %-18s %5s %6s %6s %6s %6s %10s %10s %6s\n", "function", "family", "cases",
                "passed", "failed", "mistr", "unsup", "worst f64", "worst f32", "flips");
  out << line;
  for (const auto& [key, row] : Tabulate(reports)) {
    std::snprintf(line, sizeof line, "%-46s %-18s %5d %6d %6d %6d %6d %10s %10s %6lld\n", key.first.c_str(),
                  row.family.c_str(), row.cases, row.n(Outcome::kPassed), row.n(Outcome::kFailed),
                  row.n(Outcome::kMistrusted), row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped),
                  Sci(row.worst64).c_str(), Sci(row.worst32).c_str(), static_cast<long long>(row.flips));
    out << line;
  }
  out << "\n" << Totals(reports) << "\n";
}

// The same table and the failures as Markdown (`--report`).
std::string MarkdownReport(const std::string& title, const std::vector<CaseReport>& reports) {
  std::ostringstream o;
  o << "# " << title << "\n\n" << Totals(reports) << "\n\n";
  o << "| function | family | cases | passed | failed | mistrusted | unsupported/skipped | worst rel f64 | worst rel f32 | "
       "flips |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, row] : Tabulate(reports))
    o << "| `" << key.first << "` | " << row.family << " | " << row.cases << " | " << row.n(Outcome::kPassed) << " | "
      << row.n(Outcome::kFailed) << " | " << row.n(Outcome::kMistrusted) << " | "
      << row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped) << " | " << Sci(row.worst64) << " | "
      << Sci(row.worst32) << " | " << row.flips << " |\n";
  bool first = true;
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    if (first) o << "\n## Failures\n";
    first = false;
    o << "\n```\n" << r.Describe() << "\n```\n";
  }
  return o.str();
}

}  // namespace

int RunCheck(const CheckOptions& o, std::ostream& out) {
  if (o.impl != "oracle" && o.impl != "cuda") throw BadInput("--impl: expected oracle or cuda, got '" + o.impl + "'");
  const GoldenSet golden = GoldenSet::Load(o.against);
  std::vector<CaseReport> reports;
  std::string cuda_unavailable;
  if (o.impl == "cuda" && o.candidate.empty()) cuda_unavailable = cuda::DeviceUnavailableReason();

  if (!o.candidate.empty()) {
    // A candidate is one family file, or a directory of them (what the harness writes).
    const GoldenSet cand = IsDirectory(o.candidate) ? GoldenSet::Load(o.candidate) : GoldenSet::LoadFile(o.candidate);
    std::set<std::pair<std::string, std::string>> functions;  // (family, function)
    Progress progress(cand.index.size());
    for (const auto& [key, c] : cand.index) {
      progress.Step(c->function + "/" + c->name);
      if (!Selected(o.only, *c)) continue;
      functions.insert({c->family, c->function});
      auto g = golden.index.find(key);
      if (g == golden.index.end())
        throw BadInput(c->Where() + ": no golden case of that name in " + o.against);
      const FunctionSpec* spec = SpecFor(*c);
      if (!spec) throw BadInput(c->Where() + ": unknown function '" + c->function + "'");
      reports.push_back(CheckCandidate(*spec, *g->second, *c));
      reports.back().repro = Repro(o, *c);
    }
    // Golden cases of those functions that the candidate left out are not passes.
    for (const auto& [key, g] : golden.index)
      if (functions.count({g->family, g->function}) && !cand.index.count(key) && Selected(o.only, *g))
        reports.push_back(Unsupported(*g, "missing from the candidate file"));
  } else {
    Progress progress(golden.index.size());
    for (const auto& [key, g] : golden.index) {
      progress.Step(g->function + "/" + g->name);
      if (!Selected(o.only, *g)) continue;
      const FunctionSpec* spec = SpecFor(*g);
      CaseReport r;
      if (!spec) {
        r = Unsupported(*g, "no registry entry for '" + g->function + "'");
      } else if (o.impl == "oracle") {
        r = spec->oracle ? CheckImplementation(*spec, *g, spec->oracle) : Unsupported(*g, "no oracle entry");
      } else if (!cuda_unavailable.empty()) {
        r = Skipped(*g, cuda_unavailable);
      } else if (const RunFn* entry = cuda::FindEntry(g->function)) {
        r = CheckImplementation(*spec, *g, *entry);
      } else {
        r = Unsupported(*g, "no CUDA entry for '" + g->function + "'");
      }
      r.repro = Repro(o, *g);
      reports.push_back(std::move(r));
    }
  }
  if (reports.empty()) throw BadInput("--only " + o.only + ": no such function or case in " + o.against);

  out << "conform check: " << (o.candidate.empty() ? o.impl : o.candidate) << " against " << o.against
      << " (verl " << golden.VerlVersion() << ")\n";
  if (!cuda_unavailable.empty()) out << "CUDA: " << cuda_unavailable << "\n";
  PrintTable(reports, out);
  bool failed = false;
  for (const auto& r : reports) {
    const bool show = r.outcome == Outcome::kFailed || (o.verbose && r.outcome != Outcome::kPassed);
    if (show) out << "\n" << r.Describe() << "\n";
    failed |= r.outcome == Outcome::kFailed;
  }
  if (!o.report.empty())
    WriteFileAtomically(o.report, MarkdownReport("conform check: " + (o.candidate.empty() ? o.impl : o.candidate) +
                                                     " against verl " + golden.VerlVersion(),
                                                 reports));
  if (!o.junit.empty()) WriteJunit(o.junit, "conform." + (o.candidate.empty() ? o.impl : std::string("candidate")), reports);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace verlconf::tools
