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
#include "tools/cli/commands.h"

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

namespace {

struct Row {
  std::string family;
  int cases = 0;
  std::map<Outcome, int> by;
  std::optional<double> worst64, worst32;  // err/tol per dtype; nullopt: nothing compared
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
    std::optional<double>& w = r.dtype == DType::kFloat64 ? row.worst64 : row.worst32;
    if (r.err_tol) w = std::max(w.value_or(0.0), *r.err_tol);
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
        case Outcome::kSkipped: break;
        case Outcome::kBaselined: break;  // a case's outcome, never a field's
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
  int t[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& r : reports) ++t[static_cast<int>(r.outcome)];
  const Coverage c = CountCoverage(reports);
  return std::to_string(reports.size()) + " cases: " + std::to_string(t[0]) + " passed, " + std::to_string(t[1]) +
         " failed, " + (t[5] ? std::to_string(t[5]) + " baselined, " : std::string()) + std::to_string(t[2]) +
         " mistrusted, " + std::to_string(t[4]) + " unsupported, " + std::to_string(t[3]) + " skipped; " +
         std::to_string(c.partial_cases) + " partial, " + std::to_string(c.unsupported_fields) +
         " field(s) not provided";
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
  // A baselined run has one more column, last, so that the others keep their place.
  bool baselined = false;
  for (const auto& r : reports) baselined |= r.outcome == Outcome::kBaselined;
  char line[320];
  std::snprintf(line, sizeof line, "%-46s %-18s %5s %6s %6s %6s %6s %11s %11s %6s %7s %9s", "function", "family",
                "cases", "passed", "failed", "mistr", "unsup", "f64 err/tol", "f32 err/tol", "flips", "partial",
                "unsup-fld");
  out << line << (baselined ? " baselined\n" : "\n");
  for (const auto& [key, row] : Tabulate(reports)) {
    if (hidden.count(key)) continue;
    std::snprintf(line, sizeof line, "%-46s %-18s %5d %6d %6d %6d %6d %11s %11s %6lld %7d %9d", key.first.c_str(),
                  row.family.c_str(), row.cases, row.n(Outcome::kPassed), row.n(Outcome::kFailed),
                  row.n(Outcome::kMistrusted), row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped),
                  RatioText(row.worst64).c_str(), RatioText(row.worst32).c_str(), static_cast<long long>(row.flips),
                  row.partial, row.fields_unsupported);
    out << line;
    if (baselined) {
      std::snprintf(line, sizeof line, " %9d", row.n(Outcome::kBaselined));
      out << line;
    }
    out << "\n";
  }
  if (!hidden.empty()) {
    // Functions not provided at all would be rows of zeros; one line names them all.
    int cases = 0;
    for (const auto& r : reports) cases += hidden.count({r.function, r.family}) > 0;
    std::string names;
    for (const auto& [fn, family] : absent) {
      int same_name = 0;
      for (const auto& [f2, fam2] : absent) same_name += f2 == fn;
      names += (names.empty() ? "" : ", ") + (same_name > 1 ? family + "/" + fn : fn);
    }
    out << "\n"
        << hidden.size() << " function(s) not provided (" << cases
        << " case(s) UNSUPPORTED; --show-unsupported lists them): " << names << "\n";
  }
  out << "\n" << Totals(reports) << "\n";
}

namespace {

// A failing (function, field): its count, worst err/tol and first failing case.
struct Difference {
  int cases = 0;
  double worst = 0.0;
  const CaseReport* first = nullptr;
  const FieldReport* first_field = nullptr;  // null where the whole case failed
};

std::map<std::tuple<std::string, std::string, std::string>, Difference> Differences(
    const std::vector<CaseReport>& reports) {
  std::map<std::tuple<std::string, std::string, std::string>, Difference> d;
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    bool any_field = false;
    for (const auto& f : r.fields) {
      if (f.outcome != Outcome::kFailed) continue;
      any_field = true;
      Difference& e = d[{r.function, r.family, f.field}];
      ++e.cases;
      e.worst = std::max(e.worst, f.err_tol);
      if (!e.first) e.first = &r, e.first_field = &f;
    }
    if (!any_field) {
      // An error case: raised where verl returned, returned where verl raised, or another error.
      Difference& e = d[{r.function, r.family, "(raises as verl does)"}];
      ++e.cases;
      e.worst = std::numeric_limits<double>::infinity();
      if (!e.first) e.first = &r;
    }
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
  o << "err/tol: the worst error as a multiple of the tolerance, per dtype (<= 1 passes; - where nothing was "
       "compared).\n\n";
  o << "| function | family | cases | passed | failed | mistrusted | unsupported/skipped | f64 err/tol | f32 err/tol | "
       "flips | partial | fields not provided |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, row] : Tabulate(reports))
    o << "| `" << key.first << "` | " << row.family << " | " << row.cases << " | " << row.n(Outcome::kPassed) << " | "
      << row.n(Outcome::kFailed) << " | " << row.n(Outcome::kMistrusted) << " | "
      << row.n(Outcome::kUnsupported) + row.n(Outcome::kSkipped) << " | " << RatioText(row.worst64) << " | "
      << RatioText(row.worst32) << " | " << row.flips << " | " << row.partial << " | " << row.fields_unsupported
      << " |\n";
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
    o << "\n## Differences\n\nEach field that failed, with the first case it failed in (the full message is under "
         "Failures).\n\n| function | family | field | failed cases | worst err/tol | first failing case | worst abs "
         "| worst rel | repro |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& [key, d] : diffs) {
      const auto& [fn, family, field] = key;
      o << "| `" << fn << "` | " << family << " | `" << field << "` | " << d.cases << " | " << RatioText(d.worst)
        << " | `" << MarkdownCell(d.first->case_name) << "` (" << DTypeName(d.first->dtype) << ") | ";
      if (d.first_field) {
        char b[64];
        std::snprintf(b, sizeof b, "%.3g | %.3g", d.first_field->worst_abs, d.first_field->worst_rel);
        o << b;
      } else {
        o << MarkdownCell(d.first->detail) << " | -";
      }
      o << " | `" << MarkdownCell(d.first->repro) << "` |\n";
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
    j.Key("provided").Bool(!not_provided.count(key));
    j.Key("cases_total").Int(row.cases);
    j.Key("outcomes").BeginObject();
    for (Outcome o : {Outcome::kPassed, Outcome::kFailed, Outcome::kMistrusted, Outcome::kUnsupported,
                      Outcome::kSkipped, Outcome::kBaselined})
      j.Key(OutcomeName(o)).Int(row.n(o));
    j.EndObject();
    j.Key("err_tol").BeginObject();
    j.Key("float64");
    RatioJson(j, row.worst64);
    j.Key("float32");
    RatioJson(j, row.worst32);
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
      j.Key("detail").String(r->detail);
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
