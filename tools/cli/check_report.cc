#include "tools/cli/check_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "oracle/core/json.h"
#include "oracle/judge/grade.h"
#include "tools/cli/check_dp.h"
#include "tools/cli/commands.h"
#include "tools/cli/version.h"

namespace verlconf::tools {

std::string RatioText(const std::optional<double>& ratio) {
  if (!ratio) return "-";
  if (std::isinf(*ratio)) return "inf";
  // Three significant digits, more where rounding would show a failing ratio as 1.
  char b[40];
  for (int digits = 3; digits <= 17; ++digits) {
    std::snprintf(b, sizeof b, "%.*g", digits, *ratio);
    if (!(*ratio > 1.0) || std::strtod(b, nullptr) > 1.0) break;
  }
  return b;
}

void WorstElement::Offer(const WorstElement& other) {
  if (!other.Empty() && other.err_tol > err_tol) *this = other;
}

std::string WorstElement::InField() const {
  if (Empty()) return "-";
  return case_name + (flat >= 0 && !shape.empty() ? FormatIndex(flat, shape) : "");
}

std::string WorstElement::Where() const {
  if (Empty() || field.empty()) return Empty() ? "-" : case_name;
  return case_name + " " + field + (flat >= 0 && !shape.empty() ? FormatIndex(flat, shape) : "");
}

WorstElement FieldWorst(const FieldReport& f, const std::string& case_name, DType dtype) {
  WorstElement w;
  const bool compared = f.outcome == Outcome::kFailed || (f.outcome != Outcome::kUnsupported && f.total > 0);
  if (!compared) return w;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  w.err_tol = f.err_tol;
  w.case_name = case_name;
  w.field = f.field;
  w.dtype = dtype;
  if (f.worst_index >= 0 && std::isfinite(f.err_tol)) {
    w.abs = f.abs_at_worst;
    w.rel = f.rel_at_worst;
    w.flat = f.worst_index;
    w.shape = f.shape;
  } else {
    w.abs = w.rel = nan;  // no element shows it: a shape or dtype
  }
  return w;
}

WorstElement CaseWorst(const CaseReport& r) {
  WorstElement w;
  if (!r.err_tol) return w;
  for (const auto& f : r.fields) w.Offer(FieldWorst(f, r.case_name, r.dtype));
  if (w.Empty() || w.err_tol < *r.err_tol) {
    // Failed on its error semantics: no field holds the figure.
    w = WorstElement{};
    w.err_tol = *r.err_tol;
    w.abs = w.rel = std::numeric_limits<double>::quiet_NaN();
    w.case_name = r.case_name;
    w.dtype = r.dtype;
  }
  return w;
}

std::string ErrorText(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

namespace {

std::optional<double> Ratio(const WorstElement& w) {
  return w.Empty() ? std::nullopt : std::optional<double>(w.err_tol);
}

struct Row {
  std::string family;
  int cases = 0;
  std::map<Outcome, int> by;
  WorstElement worst64, worst32, worst;  // per dtype, and over both
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
    const WorstElement w = CaseWorst(r);
    (r.dtype == DType::kFloat64 ? row.worst64 : row.worst32).Offer(w);
    row.worst.Offer(w);
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
        case Outcome::kBaselined: ++c.failed; break;  // accepted, still a difference
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
        case Outcome::kSkipped:
        case Outcome::kBaselined:  // a case's outcome, never a field's
          break;
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

std::string GradeCounts(const std::vector<CaseReport>& reports) {
  int n[4] = {0, 0, 0, 0};
  for (const auto& r : reports)
    if (r.outcome == Outcome::kFailed) ++n[static_cast<int>(CaseGrade(r))];
  if (!n[1] && !n[2] && !n[3]) return "";
  return "; failed by size: " + std::to_string(n[3]) + " material, " + std::to_string(n[2]) + " small, " +
         std::to_string(n[1]) + " rounding";
}

std::string Totals(const std::vector<CaseReport>& reports) {
  int t[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& r : reports) ++t[static_cast<int>(r.outcome)];
  const Coverage c = CountCoverage(reports);
  return std::to_string(reports.size()) + " cases: " + std::to_string(t[0]) + " passed, " + std::to_string(t[1]) +
         " failed, " + (t[5] ? std::to_string(t[5]) + " baselined, " : std::string()) + std::to_string(t[2]) +
         " mistrusted, " + std::to_string(t[4]) + " unsupported, " + std::to_string(t[3]) + " skipped; " +
         std::to_string(c.partial_cases) + " partial, " + std::to_string(c.unsupported_fields) +
         " field(s) not provided" + GradeCounts(reports);
}

std::vector<std::pair<std::string, std::string>> FunctionsNotProvided(const std::vector<CaseReport>& reports) {
  std::map<std::pair<std::string, std::string>, bool> all;  // (function, family) -> every case not provided
  for (const auto& r : reports) {
    auto [it, fresh] = all.emplace(std::make_pair(r.function, r.family), true);
    it->second = it->second && r.not_provided;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, none] : all)
    if (none) out.push_back(key);
  return out;
}

void PrintTable(const std::vector<CaseReport>& reports, std::ostream& out, bool show_unsupported) {
  const auto absent = FunctionsNotProvided(reports);
  const std::set<std::pair<std::string, std::string>> hidden =
      show_unsupported ? std::set<std::pair<std::string, std::string>>{}
                       : std::set<std::pair<std::string, std::string>>(absent.begin(), absent.end());
  const auto rows = Tabulate(reports);
  // Name columns as wide as the longest name shown, so that the figures stay near them.
  int fw = 8, famw = 6;
  for (const auto& [key, row] : rows) {
    if (hidden.count(key)) continue;
    fw = std::max(fw, static_cast<int>(key.first.size()));
    famw = std::max(famw, static_cast<int>(row.family.size()));
  }
  // A baselined run has one more count column, after the others.
  bool baselined = false;
  for (const auto& r : reports) baselined |= r.outcome == Outcome::kBaselined;
  const std::string baselined_head = baselined ? " baselined" : "";
  // The worst element's err/tol, abs and rel are one element's, and "worst at" names it
  // (case, field, index); it goes last since its width varies.
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %-*s %5s %6s %6s %6s %6s %6s %6s %7s %9s%s %11s %9s %9s  %s\n", fw, "function",
                famw, "family", "cases", "passed", "failed", "mistr", "unsup", "skip", "flips", "partial", "unsup-fld",
                baselined_head.c_str(), "err/tol", "abs", "rel", "worst at");
  out << line;
  for (const auto& [key, row] : rows) {
    if (hidden.count(key)) continue;
    const WorstElement& w = row.worst;
    char baselined_count[16] = "";
    if (baselined) std::snprintf(baselined_count, sizeof baselined_count, " %9d", row.n(Outcome::kBaselined));
    std::snprintf(line, sizeof line, "%-*s %-*s %5d %6d %6d %6d %6d %6d %6lld %7d %9d%s %11s %9s %9s  %s\n", fw,
                  key.first.c_str(), famw, row.family.c_str(), row.cases, row.n(Outcome::kPassed),
                  row.n(Outcome::kFailed), row.n(Outcome::kMistrusted), row.n(Outcome::kUnsupported),
                  row.n(Outcome::kSkipped), static_cast<long long>(row.flips), row.partial, row.fields_unsupported,
                  baselined_count, RatioText(Ratio(w)).c_str(), w.Empty() ? "-" : ErrorText(w.abs).c_str(),
                  w.Empty() ? "-" : ErrorText(w.rel).c_str(), w.Where().c_str());
    out << line;
  }
  if (!hidden.empty()) {
    // Functions not provided at all would be rows of zeros; one line names them all. A
    // dp-invariance row goes with its function: named only where the function is provided.
    int cases = 0;
    for (const auto& r : reports) cases += hidden.count({r.function, r.family}) > 0;
    std::string names;
    size_t functions = 0, dp_rows = 0;
    for (const auto& [fn, family] : absent) {
      if (DpRanksOfRow(fn) && hidden.count({DpBaseFunction(fn), family})) continue;
      int same_name = 0;
      for (const auto& [f2, fam2] : absent) same_name += f2 == fn;
      names += (names.empty() ? "" : ", ") + (same_name > 1 ? family + "/" + fn : fn);
      ++(DpRanksOfRow(fn) ? dp_rows : functions);
    }
    out << "\n";
    if (functions) out << functions << " function(s)" << (dp_rows ? " and " : "");
    if (dp_rows) out << dp_rows << " dp-invariance row(s)";
    out << " not provided (" << cases << " case(s) UNSUPPORTED; --show-unsupported lists them): " << names << "\n";
  }
  out << "\n" << Totals(reports) << "\n";
}

namespace {

// A failing (function, field): its count and its worst element, with that case's report.
struct Difference {
  int cases = 0;
  WorstElement worst;
  const CaseReport* worst_case = nullptr;
};

std::map<std::tuple<std::string, std::string, std::string>, Difference> Differences(
    const std::vector<CaseReport>& reports) {
  std::map<std::tuple<std::string, std::string, std::string>, Difference> d;
  auto add = [](Difference& e, const WorstElement& w, const CaseReport& r) {
    ++e.cases;
    if (!e.worst_case || w.err_tol > e.worst.err_tol) e.worst = w, e.worst_case = &r;
  };
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    bool any_field = false;
    for (const auto& f : r.fields) {
      if (f.outcome != Outcome::kFailed) continue;
      any_field = true;
      add(d[{r.function, r.family, f.field}], FieldWorst(f, r.case_name, r.dtype), r);
    }
    // An error case: raised where verl returned, returned where verl raised, or another error.
    if (!any_field) add(d[{r.function, r.family, "(raises as verl does)"}], CaseWorst(r), r);
  }
  return d;
}

std::string MarkdownCell(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '|') c = c == '|' ? '/' : ' ';
  return s;
}

void ProvenanceMarkdown(std::ostream& o, const Provenance& p) {
  o << "\n## Provenance\n\n| side | attribute | value |\n|---|---|---|\n";
  o << "| conform | revision | " << MarkdownCell(Revision()) << " |\n";
  o << "| goldens | directory | `" << MarkdownCell(p.goldens_dir) << "` |\n";
  for (const auto& [k, v] : p.goldens) o << "| goldens | " << k << " | " << MarkdownCell(v) << " |\n";
  o << "| candidate | checked | `" << MarkdownCell(p.candidate) << "` |\n";
  for (const auto& [k, v] : p.candidate_attrs) o << "| candidate | " << k << " | " << MarkdownCell(v) << " |\n";
}

}  // namespace

std::string MarkdownReport(const std::string& title, const std::vector<CaseReport>& reports,
                           const Provenance& provenance) {
  std::ostringstream o;
  o << "# " << title << "\n\n" << Totals(reports) << "\n\n";
  o << "err/tol: the worst element's error as a multiple of the tolerance (<= 1 passes; - where nothing was "
       "compared); abs and rel: that same element's absolute and relative error; worst at: its case, field and "
       "index. A row `FUNCTION [dp k=K]` is the dp-invariance check: each golden case sharded over K ranks and "
       "micro-batches as verl's trainer shards it, the candidate's results combined as DDP/FSDP combine them and "
       "compared with what verl's semantics give for that sharding.\n\n";
  o << "| function | family | cases | passed | failed | mistrusted | unsupported | skipped | flips | partial | "
       "fields not provided | worst err/tol | abs | rel | worst at |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, row] : Tabulate(reports)) {
    const WorstElement& w = row.worst;
    o << "| `" << key.first << "` | " << row.family << " | " << row.cases << " | " << row.n(Outcome::kPassed) << " | "
      << row.n(Outcome::kFailed) << " | " << row.n(Outcome::kMistrusted) << " | " << row.n(Outcome::kUnsupported)
      << " | " << row.n(Outcome::kSkipped) << " | " << row.flips << " | " << row.partial << " | "
      << row.fields_unsupported << " | " << RatioText(Ratio(w)) << " | " << (w.Empty() ? "-" : ErrorText(w.abs))
      << " | " << (w.Empty() ? "-" : ErrorText(w.rel)) << " | "
      << (w.Empty() ? "-" : "`" + MarkdownCell(w.Where()) + "`") << " |\n";
  }
  ProvenanceMarkdown(o, provenance);
  o << "\n## Fields\n\nPer function and field, over its cases: how many times the field passed, failed, was not "
       "provided (UNSUPPORTED), or agreed where agreement proves nothing (mistrusted). A framework that computes "
       "some fields of a function is conforming on those it computes.\n\n"
       "| function | family | field | passed | failed | not provided | mistrusted |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [key, fields] : FieldMatrix(reports))
    for (const auto& [field, c] : fields)
      o << "| `" << key.first << "` | " << key.second << " | `" << field << "` | " << c.passed << " | " << c.failed
        << " | " << c.not_provided << " | " << c.mistrusted << " |\n";
  const auto diffs = Differences(reports);
  if (!diffs.empty()) {
    o << "\n## Differences\n\nEach field that failed: in how many cases, and its worst element (err/tol, and "
         "that element's absolute and relative error) with the case it is in and the command that repeats it (the "
         "full message is under Failures).\n\n| function | family | field | failed cases | worst err/tol | abs | rel "
         "| worst case | repro |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& [key, d] : diffs) {
      const auto& [fn, family, field] = key;
      const WorstElement& w = d.worst;
      o << "| `" << fn << "` | " << family << " | `" << field << "` | " << d.cases << " | " << RatioText(w.err_tol)
        << " | " << ErrorText(w.abs) << " | " << ErrorText(w.rel) << " | `" << MarkdownCell(w.Where()) << "` ("
        << DTypeName(w.dtype) << ")";
      if (w.field.empty()) o << ": " << MarkdownCell(d.worst_case->detail);
      o << " | `" << MarkdownCell(d.worst_case->repro) << "` |\n";
    }
  }
  bool first = true;
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    if (first) o << "\n## Failures\n";
    first = false;
    o << "\n```\n" << r.Describe() << "\n```\n";
  }
  return o.str();
}

namespace {

// err/tol in JSON: a number, "inf" (JSON has no infinity), or null where nothing was compared.
void RatioJson(JsonWriter& j, const std::optional<double>& ratio) {
  if (!ratio)
    j.Null();
  else if (std::isinf(*ratio))
    j.String("inf");
  else
    j.Number(*ratio);
}

void IndexJson(JsonWriter& j, int64_t flat, const std::vector<int64_t>& shape) {
  j.BeginArray();
  if (flat >= 0) {
    std::vector<int64_t> idx(shape.size());
    for (size_t k = shape.size(); k-- > 0;) {
      idx[k] = shape[k] ? flat % shape[k] : 0;
      flat = shape[k] ? flat / shape[k] : 0;
    }
    for (int64_t i : idx) j.Int(i);
  }
  j.EndArray();
}

void FieldJson(JsonWriter& j, const FieldReport& f) {
  j.BeginObject();
  j.Key("field").String(f.field);
  j.Key("outcome").String(OutcomeName(f.outcome));
  j.Key("grade").String(GradeName(FieldGrade(f)));
  j.Key("note").String(f.note);
  const bool compared = f.outcome != Outcome::kUnsupported;
  j.Key("err_tol");
  RatioJson(
      j, compared && (f.total > 0 || f.outcome == Outcome::kFailed) ? std::optional<double>(f.err_tol) : std::nullopt);
  if (compared) {
    j.Key("worst_abs").Number(f.worst_abs);
    j.Key("worst_rel").Number(f.worst_rel);
    j.Key("worst_index");
    IndexJson(j, f.worst_index, f.shape);
    j.Key("mismatched").Int(f.mismatched);
    j.Key("total").Int(f.total);
    j.Key("flips").Int(f.flips);
    j.Key("tolerance").BeginObject();
    j.Key("rtol").Number(f.tol.rtol);
    j.Key("atol").Number(f.tol.atol);
    j.Key("reason").String(f.tol.reason);
    j.EndObject();
  }
  j.EndObject();
}

}  // namespace

void WorstJson(JsonWriter& j, const WorstElement& w) {
  if (w.Empty()) {
    j.Null();
    return;
  }
  auto number = [&](double v) {
    if (std::isnan(v))
      j.Null();
    else
      RatioJson(j, v);
  };
  j.BeginObject();
  j.Key("err_tol");
  RatioJson(j, w.err_tol);
  j.Key("abs");
  number(w.abs);
  j.Key("rel");
  number(w.rel);
  j.Key("case").String(w.case_name);
  j.Key("field").String(w.field);
  j.Key("index");
  IndexJson(j, w.flat, w.shape);
  j.EndObject();
}

bool BitForBit(const std::vector<CaseReport>& reports, int& cases) {
  cases = 0;
  for (const auto& r : reports) {
    if (r.outcome == Outcome::kUnsupported || r.outcome == Outcome::kSkipped) continue;
    if (r.outcome == Outcome::kFailed) return false;
    bool any = false;
    for (const auto& f : r.fields) {
      if (f.outcome == Outcome::kUnsupported) continue;
      if (!f.identical) return false;
      any = true;
    }
    cases += any;
  }
  return cases > 0;
}

std::string CheckJson(const std::vector<CaseReport>& reports, const Provenance& provenance, int exit_code) {
  int t[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& r : reports) ++t[static_cast<int>(r.outcome)];
  const Coverage c = CountCoverage(reports);
  JsonWriter j;
  j.BeginObject();
  j.Key("schema").String(kCheckSchema);
  j.Key("schema_version").Int(kSchemaVersion);
  j.Key("implementation").String(provenance.candidate);
  j.Key("against").String(provenance.goldens_dir);
  auto verl = provenance.goldens.find("verl_version");
  j.Key("verl_version").String(verl == provenance.goldens.end() ? "" : verl->second);
  j.Key("conform_revision").String(Revision());
  j.Key("exit_code").Int(exit_code);
  int identical_cases = 0;
  j.Key("bit_for_bit").Bool(BitForBit(reports, identical_cases));
  j.Key("provenance").BeginObject();
  j.Key("goldens").BeginObject();
  for (const auto& [k, v] : provenance.goldens) j.Key(k).String(v);
  j.EndObject();
  j.Key("candidate").BeginObject();
  for (const auto& [k, v] : provenance.candidate_attrs) j.Key(k).String(v);
  j.EndObject();
  j.EndObject();
  j.Key("totals").BeginObject();
  j.Key("cases").Int(static_cast<int64_t>(reports.size()));
  for (Outcome o : {Outcome::kPassed, Outcome::kFailed, Outcome::kMistrusted, Outcome::kUnsupported, Outcome::kSkipped,
                    Outcome::kBaselined}) {
    std::string name = OutcomeName(o);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    j.Key(name).Int(t[static_cast<int>(o)]);
  }
  j.Key("partial").Int(c.partial_cases);
  {
    int n[4] = {0, 0, 0, 0};
    for (const auto& r : reports)
      if (r.outcome == Outcome::kFailed) ++n[static_cast<int>(CaseGrade(r))];
    j.Key("failed_by_grade").BeginObject();
    j.Key("material").Int(n[3]).Key("small").Int(n[2]).Key("rounding").Int(n[1]);
    j.EndObject();
  }
  j.Key("fields_not_provided").Int(c.unsupported_fields);
  j.EndObject();
  const auto absent = FunctionsNotProvided(reports);
  const std::set<std::pair<std::string, std::string>> not_provided(absent.begin(), absent.end());
  // Functions in the table's order; cases in the order they were checked.
  std::map<std::pair<std::string, std::string>, std::vector<const CaseReport*>> by_function;
  for (const auto& r : reports) by_function[{r.function, r.family}].push_back(&r);
  const auto rows = Tabulate(reports);
  j.Key("functions").BeginArray();
  for (const auto& [key, cases] : by_function) {
    const Row& row = rows.at(key);
    j.BeginObject();
    j.Key("function").String(key.first);
    j.Key("family").String(key.second);
    // "golden": the golden cases as they are; "dp-invariance": each sharded over dp_ranks ranks.
    j.Key("check").String(DpRanksOfRow(key.first) ? "dp-invariance" : "golden");
    j.Key("dp_ranks").Int(DpRanksOfRow(key.first));
    j.Key("provided").Bool(!not_provided.count(key));
    j.Key("cases_total").Int(row.cases);
    j.Key("outcomes").BeginObject();
    for (Outcome o : {Outcome::kPassed, Outcome::kFailed, Outcome::kMistrusted, Outcome::kUnsupported,
                      Outcome::kSkipped, Outcome::kBaselined})
      j.Key(OutcomeName(o)).Int(row.n(o));
    j.EndObject();
    j.Key("err_tol").BeginObject();
    j.Key("float64");
    RatioJson(j, Ratio(row.worst64));
    j.Key("float32");
    RatioJson(j, Ratio(row.worst32));
    j.EndObject();
    // Per dtype, the one element the err/tol above is from (null where nothing was compared).
    j.Key("worst").BeginObject();
    for (const auto& [name, w] : {std::pair<const char*, const WorstElement*>{"float64", &row.worst64},
                                  std::pair<const char*, const WorstElement*>{"float32", &row.worst32}})
      WorstJson(j.Key(name), *w);
    j.EndObject();
    j.Key("flips").Int(row.flips);
    j.Key("partial").Int(row.partial);
    j.Key("fields_not_provided").Int(row.fields_unsupported);
    j.Key("cases").BeginArray();
    for (const CaseReport* r : cases) {
      j.BeginObject();
      j.Key("case").String(r->case_name);
      j.Key("dtype").String(DTypeName(r->dtype));
      j.Key("outcome").String(OutcomeName(r->outcome));
      j.Key("grade").String(GradeName(CaseGrade(*r)));
      j.Key("detail").String(r->detail);
      // What the text output prints for a failure, so that a consumer (the pytest plugin)
      // shows the same; only for the cases that have failing fields, to keep the document small.
      const bool failing = r->outcome == Outcome::kFailed || r->outcome == Outcome::kBaselined;
      j.Key("text").String(failing ? r->Describe() : "");
      j.Key("err_tol");
      RatioJson(j, r->err_tol);
      j.Key("partial").Bool(r->partial);
      j.Key("flips").Int(r->flips);
      j.Key("where").String(r->where);
      j.Key("repro").String(r->repro);
      j.Key("fields").BeginArray();
      for (const auto& f : r->fields) FieldJson(j, f);
      j.EndArray();
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str();
}

}  // namespace verlconf::tools
