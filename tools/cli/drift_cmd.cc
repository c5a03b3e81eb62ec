// `conform drift OLD NEW`: how two golden sets (two verl versions, two torch versions,
// CPU and GPU) differ on the cases they share. A change is reported when it exceeds the
// comparison tolerance of the case's dtype; smaller differences are counted as rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/judge/candidate.h"
#include "oracle/judge/judge.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/cli/check_report.h"
#include "tools/cli/commands.h"
#include "tools/cli/report_file.h"
#include "tools/cli/selection.h"
#include "tools/cli/version.h"
#include "tools/h5/golden_set.h"

namespace verlconf::tools {
namespace {

struct FieldDrift {
  int compared = 0, identical = 0, rounding = 0, changed = 0;
  // Elements that took the other decision at a threshold boundary, within rounding
  // (FieldReport::flips): passed, but a decision that moved.
  int64_t flips = 0;
  // Cases that have the field on one side only: never "same", always a change.
  int only_old = 0, only_new = 0;
  int missing() const { return only_old + only_new; }
  // The element with the largest change as a multiple of the tolerance over the field's
  // cases (FieldReport::err_tol), with that one element's absolute and relative change and
  // where it is: a changed field's is always in a changed case.
  WorstElement worst;
  double max_err_tol() const { return worst.Empty() ? 0.0 : worst.err_tol; }
  bool Changed() const { return changed || missing(); }
};

// One field of one case that changed beyond tolerance (for --format json).
struct CaseChange {
  std::string row, family, function, case_name, field;
  double err_tol, worst_abs, worst_rel;
  WorstElement worst;  // the element err_tol is from
};

// The root attributes that say what produced a set, in the order a report lists them.
constexpr const char* kProvenanceKeys[] = {
    "verl_version", "torch_version",     "numpy_version", "python_version",      "device",
    "device_name",  "device_capability", "cuda_version",  "cuda_driver_version", "cuda_matmul_allow_tf32"};

// Everything the report says, computed once and rendered as text or Markdown.
struct Drift {
  std::string old_version, new_version, old_dir, new_dir;
  // (key, old value, new value) for each kProvenanceKeys entry either side records.
  std::vector<std::tuple<std::string, std::string, std::string>> provenance;
  std::map<std::string, std::map<std::string, FieldDrift>> fields;  // function -> field -> stats
  std::vector<std::string> only_old, only_new, inputs_differ, error_changes;
  // Cases on one side only because the other set was captured without their dtype (root
  // `dtypes`, capture.py --dtype: a GPU's float32 set): counted per dtype, not listed.
  std::map<std::string, int> old_dtype_not_captured, new_dtype_not_captured;
  // "function/case: field (only in the old set)", for fields present on one side.
  std::vector<std::string> fields_one_side;
  // Names in verl's own registries (/_verl_registry) on one side only: "list: name".
  std::vector<std::string> registry_removed, registry_added;
  std::vector<CaseChange> changes;
  int compared = 0;  // cases in both sets with the same inputs: a result or an error each side
  bool AnyChange() const {
    if (!error_changes.empty() || !fields_one_side.empty()) return true;
    for (const auto& [fn, fs] : fields)
      for (const auto& [f, d] : fs)
        if (d.changed || d.missing()) return true;
    return false;
  }
};

// verl spells some names twice ("gpg" is an estimator and a loss): those rows carry
// their family so that the two functions' fields are never pooled.
std::string RowName(const std::string& family, const std::string& fn) {
  int n = 0;
  for (const auto& s : Registry()) n += s.name == fn;
  return n > 1 ? family + "/" + fn : fn;
}

void Accumulate(FieldDrift& d, const FieldReport& r, const std::string& case_name, DType dtype) {
  if (r.outcome == Outcome::kUnsupported) return;  // on one side only: counted by Compute
  ++d.compared;
  if (r.outcome == Outcome::kFailed)
    ++d.changed;
  else if (r.worst_abs == 0.0)
    ++d.identical;
  else
    ++d.rounding;
  WorstElement w = FieldWorst(r, case_name, dtype);
  if (w.Empty()) {
    // Nothing to compare (an empty field): identical, with no element to name.
    w.err_tol = 0.0;
    w.case_name = case_name;
  }
  d.worst.Offer(w);
  d.flips += r.flips;
}

// A figure of the worst element, as the tables print it.
std::string Figure(const FieldDrift& f, double v) { return f.worst.Empty() ? "-" : ErrorText(v); }

// err/tol as the tables print it: "inf" where an exactly compared field changed or no
// element shows the failure (shape, dtype).
std::string RatioText(double ratio) {
  if (std::isinf(ratio)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", ratio);
  return buf;
}

// "verl 0.9.1, torch 2.11.0+cu130, cuda NVIDIA H200": what a side was produced with.
std::string SideLabel(const fixtures::GoldenSet& g) {
  std::string s = "verl " + g.VerlVersion();
  const std::string torch = g.CommonProvenance("torch_version");
  if (!torch.empty()) s += ", torch " + torch;
  const std::string device = g.CommonProvenance("device"), name = g.CommonProvenance("device_name");
  if (!device.empty()) s += ", " + device + (name.empty() ? "" : " " + name);
  return s;
}

bool SameInputs(const Case& a, const Case& b) {
  if (a.inputs.size() != b.inputs.size() || a.config.values() != b.config.values()) return false;
  for (const auto& [n, arr] : a.inputs) {
    const Array* other = b.OptionalInput(n);
    if (!other || other->shape != arr.shape || other->data != arr.data) return false;
  }
  return true;
}

// The structure every later step relies on (the comparison runs the oracle for the
// threshold-boundary mask), checked before anything is compared. Config values the
// current verl would refuse are not checked: the other set may be another verl's.
void Validate(const fixtures::GoldenSet& g, const Selection& only) {
  for (const auto& [key, c] : g.index)
    if (only.Selects(*c))
      if (const FunctionSpec* spec = SpecFor(*c)) ValidateStructure(*spec, *c);
}

// Whether a set holds cases of this dtype: every set does unless its root `dtypes` says
// otherwise.
bool Captures(const fixtures::GoldenSet& g, DType dtype) {
  const std::string dtypes = g.CommonProvenance("dtypes");
  if (dtypes.empty()) return true;
  std::stringstream ss(dtypes);  // "float64,float32"; files that disagree are joined by ", "
  for (std::string d; std::getline(ss, d, ',');) {
    d.erase(0, d.find_first_not_of(' '));
    if (d == DTypeName(dtype)) return true;
  }
  return false;
}

Drift Compute(const fixtures::GoldenSet& a, const fixtures::GoldenSet& b, const Selection& only) {
  Drift d;
  d.old_version = SideLabel(a);
  d.new_version = SideLabel(b);
  for (const char* key : kProvenanceKeys) {
    std::string x = a.CommonProvenance(key), y = b.CommonProvenance(key);
    if (!x.empty() || !y.empty()) d.provenance.emplace_back(key, x, y);
  }
  for (const auto& [key, oc] : a.index) {
    const std::string& fn = std::get<1>(key);
    const std::string label = fn + "/" + std::get<2>(key);
    if (!only.Selects(*oc)) continue;
    auto it = b.index.find(key);
    if (it == b.index.end()) {
      if (Captures(b, oc->dtype))
        d.only_old.push_back(label);
      else
        ++d.old_dtype_not_captured[DTypeName(oc->dtype)];
      continue;
    }
    const Case& nc = *it->second;
    if (!SameInputs(*oc, nc)) {
      d.inputs_differ.push_back(label);
      continue;
    }
    ++d.compared;
    if (oc->expect_error.has_value() != nc.expect_error.has_value()) {
      d.error_changes.push_back(label + ": " + (oc->expect_error ? *oc->expect_error : "result") + " -> " +
                                (nc.expect_error ? *nc.expect_error : "result"));
      continue;
    }
    if (oc->expect_error) continue;
    // The new set plays "got", the old one "want": the same comparator as conformance.
    const FunctionSpec* spec = SpecFor(*oc);
    FunctionSpec generic;
    generic.name = fn;
    const Result got = Result::Of(nc);
    const CaseReport r = CompareResult(spec ? *spec : generic, *oc, &got, std::nullopt);
    auto& row = d.fields[RowName(std::get<0>(key), fn)];
    for (const auto& f : r.fields) {
      Accumulate(row[f.field], f, std::get<2>(key), oc->dtype);
      if (f.outcome == Outcome::kFailed)
        d.changes.push_back({RowName(std::get<0>(key), fn), std::get<0>(key), fn, std::get<2>(key), f.field, f.err_tol,
                             f.worst_abs, f.worst_rel, FieldWorst(f, std::get<2>(key), oc->dtype)});
    }
    const std::vector<std::string> old_fields = FieldNames(*oc), new_fields = FieldNames(nc);
    for (const auto& f : old_fields)
      if (std::find(new_fields.begin(), new_fields.end(), f) == new_fields.end()) {
        ++row[f].only_old;
        d.fields_one_side.push_back(label + ": " + f + " (only in the old set)");
      }
    for (const auto& f : new_fields)
      if (std::find(old_fields.begin(), old_fields.end(), f) == old_fields.end()) {
        ++row[f].only_new;
        d.fields_one_side.push_back(label + ": " + f + " (only in the new set)");
      }
  }
  for (const auto& [key, nc] : b.index) {
    if (!only.Selects(*nc) || a.index.count(key)) continue;
    if (Captures(a, nc->dtype))
      d.only_new.push_back(std::get<1>(key) + "/" + std::get<2>(key));
    else
      ++d.new_dtype_not_captured[DTypeName(nc->dtype)];
  }
  // What verl itself defines, whether or not the catalogue has cases for it.
  const auto ra = a.VerlRegistry(), rb = b.VerlRegistry();
  auto diff = [](const std::map<std::string, std::vector<std::string>>& x,
                 const std::map<std::string, std::vector<std::string>>& y, std::vector<std::string>& out) {
    for (const auto& [list, names] : x) {
      auto it = y.find(list);
      for (const auto& n : names)
        if (it == y.end() || std::find(it->second.begin(), it->second.end(), n) == it->second.end())
          out.push_back(list + ": " + n);
    }
  };
  diff(ra, rb, d.registry_removed);
  diff(rb, ra, d.registry_added);
  return d;
}

void RenderText(const Drift& d, std::ostream& out) {
  out << "conform drift: " << d.old_version << " (" << d.old_dir << ") -> " << d.new_version << " (" << d.new_dir
      << ")\n";
  // What changed comes first; the fields that did not are one line (JSON and --report list
  // every row), so that a handful of changes is not buried in a thousand unchanged rows.
  int changed_fields = 0;
  std::set<std::string> changed_functions;
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields)
      if (f.Changed()) ++changed_fields, changed_functions.insert(fn);
  out << "\n"
      << changed_fields << " field(s) of " << changed_functions.size()
      << " function(s) changed beyond tolerance or on one side only";
  if (changed_fields) {
    out << ":\n";
    int fw = 8, dw = 5;  // as wide as the names shown
    for (const auto& [fn, fields] : d.fields)
      for (const auto& [field, f] : fields)
        if (f.Changed())
          fw = std::max(fw, static_cast<int>(fn.size())), dw = std::max(dw, static_cast<int>(field.size()));
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-*s %5s %5s %5s %5s %5s %5s %11s %9s %9s  %s\n", fw, "function", dw,
                  "field", "cases", "same", "round", "CHGD", "MISS", "flips", "err/tol", "abs", "rel", "worst at");
    out << line;
    for (const auto& [fn, fields] : d.fields)
      for (const auto& [field, f] : fields) {
        if (!f.Changed()) continue;
        std::snprintf(line, sizeof line, "%-*s %-*s %5d %5d %5d %5d %5d %5lld %11s %9s %9s  %s\n", fw, fn.c_str(), dw,
                      field.c_str(), f.compared, f.identical, f.rounding, f.changed, f.missing(),
                      static_cast<long long>(f.flips), RatioText(f.max_err_tol()).c_str(),
                      Figure(f, f.worst.abs).c_str(), Figure(f, f.worst.rel).c_str(),
                      f.changed ? f.worst.InField().c_str() : "");
        out << line;
      }
  } else {
    out << ".\n";
  }
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out << "\n" << title << " (" << v.size() << "):\n";
    for (const auto& s : v) out << "  " << s << "\n";
  };
  list("verl registry names added", d.registry_added);
  list("verl registry names removed", d.registry_removed);
  // Error behaviour, one line per function and change ("fn/case: before -> after"): a
  // function verl added changes every one of its cases the same way.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_change;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& e : d.error_changes) {
    const size_t slash = e.find('/'), colon = e.find(": ", slash == std::string::npos ? 0 : slash);
    const std::string fn = e.substr(0, slash), what = colon == std::string::npos ? "" : e.substr(colon + 2);
    auto& cases = by_change[{fn, what}];
    if (cases.empty()) order.push_back({fn, what});
    cases.push_back(e.substr(slash + 1, colon - slash - 1));
  }
  if (!order.empty()) out << "\nerror behaviour changed (" << d.error_changes.size() << " case(s)):\n";
  for (const auto& key : order) {
    const auto& cases = by_change[key];
    out << "  " << key.first << ": " << key.second;
    if (cases.size() == 1)
      out << " (" << cases[0] << ")\n";
    else
      out << " (" << cases.size() << " cases: " << cases[0] << ", ...)\n";
  }
  list("fields on one side only (MISS)", d.fields_one_side);
  // The unchanged rows, summed.
  int fields = 0, cases = 0, same = 0, rounding = 0;
  int64_t flips = 0;
  std::set<std::string> functions;
  WorstElement unchanged;
  for (const auto& [fn, fs] : d.fields)
    for (const auto& [field, f] : fs) {
      if (f.Changed() || f.compared == 0) continue;
      ++fields;
      functions.insert(fn);
      cases += f.compared;
      same += f.identical;
      rounding += f.rounding;
      flips += f.flips;
      if (!f.worst.Empty() && (unchanged.Empty() || f.worst.err_tol > unchanged.err_tol)) {
        unchanged = f.worst;
        unchanged.case_name = fn + "/" + f.worst.case_name;  // the row is gone: name the function
      }
    }
  out << "\nunchanged: " << fields << " field(s) of " << functions.size() << " function(s), " << cases
      << " case field(s): " << same << " bitwise the same, " << rounding << " within rounding, " << flips << " flip(s)";
  if (rounding) {
    const WorstElement& w = unchanged;
    out << "\n  largest err/tol " << RatioText(w.err_tol) << " (abs " << ErrorText(w.abs) << ", rel "
        << ErrorText(w.rel) << ") at " << w.Where();
  }
  out << "\n  every row: --format json or --report FILE.md\n";
  list("inputs differ (catalogue changed; not compared)", d.inputs_differ);
  list("only in old set", d.only_old);
  list("only in new set", d.only_new);
  for (const auto& [dt, n] : d.old_dtype_not_captured)
    out << "\n" << n << " " << dt << " case(s) of the old set not compared: the new set holds no " << dt << " cases\n";
  for (const auto& [dt, n] : d.new_dtype_not_captured)
    out << "\n" << n << " " << dt << " case(s) of the new set not compared: the old set holds no " << dt << " cases\n";
  out << "\n"
      << (d.AnyChange()     ? "drift found beyond tolerance"
          : d.compared == 0 ? "nothing compared: no case in both sets with the same inputs"
                            : "no drift beyond tolerance")
      << "\n";
}

void RatioJson(JsonWriter& j, double ratio) {
  if (std::isinf(ratio))
    j.String("inf");
  else
    j.Number(ratio);
}

// --format json: one object, schema kDriftSchema. Every number the text report shows, and
// per changed case and field its err/tol and the command that shows it alone.
std::string RenderJson(const Drift& d, int exit_code) {
  JsonWriter j;
  j.BeginObject();
  j.Key("schema").String(kDriftSchema);
  j.Key("schema_version").Int(kSchemaVersion);
  for (int side = 0; side < 2; ++side) {
    j.Key(side ? "new" : "old").BeginObject();
    j.Key("dir").String(side ? d.new_dir : d.old_dir);
    j.Key("label").String(side ? d.new_version : d.old_version);
    for (const auto& [key, x, y] : d.provenance)
      if (!(side ? y : x).empty()) j.Key(key).String(side ? y : x);
    j.EndObject();
  }
  j.Key("conform_revision").String(Revision());
  j.Key("exit_code").Int(exit_code);
  j.Key("drift").Bool(d.AnyChange());
  j.Key("functions").BeginArray();
  for (const auto& [fn, fields] : d.fields) {
    j.BeginObject();
    j.Key("function").String(fn);
    j.Key("fields").BeginArray();
    for (const auto& [field, f] : fields) {
      j.BeginObject();
      j.Key("field").String(field);
      j.Key("cases").Int(f.compared);
      j.Key("same").Int(f.identical);
      j.Key("rounding").Int(f.rounding);
      j.Key("changed").Int(f.changed);
      j.Key("missing").Int(f.missing());
      j.Key("flips").Int(f.flips);
      j.Key("err_tol");
      RatioJson(j, f.max_err_tol());
      // The element that err/tol is from: its own absolute and relative change and where.
      j.Key("worst");
      WorstJson(j, f.worst);
      j.Key("largest_change_in").String(f.changed ? f.worst.case_name : "");
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("changes").BeginArray();
  for (const auto& c : d.changes) {
    j.BeginObject();
    j.Key("function").String(c.function);
    j.Key("family").String(c.family);
    j.Key("case").String(c.case_name);
    j.Key("field").String(c.field);
    j.Key("outcome").String("CHANGED");
    j.Key("err_tol");
    RatioJson(j, c.err_tol);
    j.Key("worst_abs").Number(c.worst_abs);
    j.Key("worst_rel").Number(c.worst_rel);
    j.Key("worst");
    WorstJson(j, c.worst);
    j.Key("repro").String(CommandName() + " drift " + d.old_dir + " " + d.new_dir + " --only " + c.family + "/" +
                          c.function + "/" + c.case_name);
    j.EndObject();
  }
  j.EndArray();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    j.Key(key).BeginArray();
    for (const auto& s : v) j.String(s);
    j.EndArray();
  };
  list("registry_names_added", d.registry_added);
  list("registry_names_removed", d.registry_removed);
  list("error_behaviour_changed", d.error_changes);
  list("fields_one_side", d.fields_one_side);
  list("inputs_differ", d.inputs_differ);
  list("only_in_old", d.only_old);
  list("only_in_new", d.only_new);
  for (int side = 0; side < 2; ++side) {
    j.Key(side ? "new_dtype_not_captured" : "old_dtype_not_captured").BeginObject();
    for (const auto& [dt, n] : side ? d.new_dtype_not_captured : d.old_dtype_not_captured) j.Key(dt).Int(n);
    j.EndObject();
  }
  j.EndObject();
  return j.str();
}

// Markdown for a committed report: only what the goldens determine (versions, counts,
// errors), nothing machine- or path-specific, so that a re-run reproduces it exactly.
std::string RenderMarkdown(const Drift& d) {
  std::ostringstream o;
  o << "## conform drift: " << d.old_version << " -> " << d.new_version << "\n\n";
  o << "| provenance | old | new |\n|---|---|---|\n";
  for (const auto& [key, x, y] : d.provenance)
    o << "| `" << key << "` | " << (x.empty() ? "(not recorded)" : "`" + x + "`") << " | "
      << (y.empty() ? "(not recorded)" : "`" + y + "`") << " |\n";
  o << "\nCases present in both golden sets with identical inputs, compared field by field with the "
       "conformance tolerances (new set as \"got\", old set as \"want\"). `same`: bitwise identical; "
       "`round`: within tolerance; `changed`: beyond it; `one side`: cases that have the field in one "
       "set only; `flips`: elements decided the other way at a threshold within rounding (passed). "
       "`max err/tol`: the largest change as a multiple of the tolerance, `|new - old| / (atol + rtol * "
       "|old|)`, so at most 1 means within tolerance (`inf` where a field compared exactly, a mask, changed, or "
       "where no element shows the change: a shape or a dtype; a fraction is held to the smaller of the "
       "floating tolerance and half of one count, so a count that changed reads as a large finite figure); "
       "`abs` / `rel`: that same element's absolute and relative change (`-` where its old value is zero or no "
       "element shows the change), and `worst at` its case and index.\n\n";
  o << "### Changed beyond tolerance, or on one side only\n\n";
  bool any = false;
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields) {
      if (!f.changed && !f.missing()) continue;
      if (!any)
        o << "| function | field | cases | changed | one side | max err/tol | abs | rel | worst at "
             "|\n|---|---|---|---|---|---|---|---|---|\n";
      any = true;
      char buf[400];
      std::snprintf(buf, sizeof buf, "| `%s` | `%s` | %d | %d | %d | %s | %s | %s | %s |\n", fn.c_str(), field.c_str(),
                    f.compared, f.changed, f.missing(), RatioText(f.max_err_tol()).c_str(),
                    Figure(f, f.worst.abs).c_str(), Figure(f, f.worst.rel).c_str(),
                    f.changed ? ("`" + f.worst.InField() + "`").c_str() : "");
      o << buf;
    }
  if (!any) o << "Nothing.\n";
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    o << "\n### " << title << " (" << v.size() << ")\n\n";
    if (v.empty()) o << "None.\n";
    for (const auto& s : v) o << "- `" << s << "`\n";
  };
  list("Names verl's registries gained", d.registry_added);
  list("Names verl's registries lost", d.registry_removed);
  list("Error behaviour changed", d.error_changes);
  list("Fields present on one side only", d.fields_one_side);
  list("Inputs differ (not compared)", d.inputs_differ);
  list("Only in the old set", d.only_old);
  list("Only in the new set", d.only_new);
  for (const auto& [dt, n] : d.old_dtype_not_captured)
    o << "\n"
      << n << " " << dt << " case(s) of the old set were not compared: the new set was captured without " << dt
      << " cases (root attribute `dtypes`).\n";
  for (const auto& [dt, n] : d.new_dtype_not_captured)
    o << "\n"
      << n << " " << dt << " case(s) of the new set were not compared: the old set was captured without " << dt
      << " cases (root attribute `dtypes`).\n";
  o << "\n### Unchanged or rounding only\n\n"
       "| function | field | cases | same | round | flips | max err/tol | abs | rel | worst at |\n"
       "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields) {
      if (f.changed || f.missing() || f.compared == 0) continue;
      char buf[320];
      std::snprintf(buf, sizeof buf, "| `%s` | `%s` | %d | %d | %d | %lld | %s | %s | %s | %s |\n", fn.c_str(),
                    field.c_str(), f.compared, f.identical, f.rounding, static_cast<long long>(f.flips),
                    RatioText(f.max_err_tol()).c_str(), Figure(f, f.worst.abs).c_str(), Figure(f, f.worst.rel).c_str(),
                    f.rounding ? ("`" + f.worst.InField() + "`").c_str() : "");
      o << buf;
    }
  return o.str();
}

}  // namespace

int RunDrift(const std::string& old_dir, const std::string& new_dir, const std::string& only, const std::string& report,
             bool json, std::ostream& out) {
  const Selection selection(only);
  const fixtures::GoldenSet a = fixtures::GoldenSet::Load(old_dir);
  const fixtures::GoldenSet b = fixtures::GoldenSet::Load(new_dir);
  std::vector<const Case*> both = a.Cases();
  for (const Case* c : b.Cases()) both.push_back(c);
  selection.RequireResolved(both, old_dir + " or " + new_dir);
  Validate(a, selection);
  Validate(b, selection);
  Drift d = Compute(a, b, selection);
  d.old_dir = old_dir;
  d.new_dir = new_dir;
  // Two sets with no case in common, or whose common cases all have other inputs, say
  // nothing about drift: that is no "no drift".
  const bool nothing = d.compared == 0 && !d.AnyChange();
  const int code = d.AnyChange() ? kExitFailure : nothing ? kExitNothingCompared : kExitOk;
  if (json)
    out << RenderJson(d, code) << "\n";
  else
    RenderText(d, out);
  out.flush();
  if (!out) throw BadInput("cannot write the results to standard output");
  if (!report.empty()) WriteFileAtomically(report, RenderMarkdown(d));
  if (nothing)
    std::cerr << "conform: nothing compared: no selected case is in both sets with the same inputs ("
              << d.only_old.size() << " only in the old set, " << d.only_new.size() << " only in the new set, "
              << d.inputs_differ.size() << " with other inputs)\n";
  return code;
}

}  // namespace verlconf::tools
