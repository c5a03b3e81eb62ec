// `conform drift OLD NEW`: how two golden sets (e.g. two verl versions) differ on the
// cases they share. A change is reported when it exceeds the comparison tolerance of
// the case's dtype; smaller differences are counted as rounding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

#include "oracle/core/candidate.h"
#include "oracle/core/check.h"
#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/core/validate.h"
#include "tools/commands.h"
#include "tools/golden_set.h"
#include "tools/report_file.h"
#include "tools/selection.h"

namespace verlconf::tools {
namespace {

struct FieldDrift {
  int compared = 0, identical = 0, rounding = 0, changed = 0;
  // Cases that have the field on one side only: never "same", always a change.
  int only_old = 0, only_new = 0;
  int missing() const { return only_old + only_new; }
  double max_abs = 0.0, max_rel = 0.0;
  double max_err_tol = 0.0;  // the largest change as a multiple of the tolerance (FieldReport::err_tol)
  std::string worst_case;
};

// One field of one case that changed beyond tolerance (for --format json).
struct CaseChange {
  std::string row, family, function, case_name, field;
  double err_tol, worst_abs, worst_rel;
};

// Everything the report says, computed once and rendered as text or Markdown.
struct Drift {
  std::string old_version, new_version, old_dir, new_dir;
  std::map<std::string, std::map<std::string, FieldDrift>> fields;  // function -> field -> stats
  std::vector<std::string> only_old, only_new, inputs_differ, error_changes;
  // "function/case: field (only in the old set)", for fields present on one side.
  std::vector<std::string> fields_one_side;
  // Names in verl's own registries (/_verl_registry) on one side only: "list: name".
  std::vector<std::string> registry_removed, registry_added;
  std::vector<CaseChange> changes;
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

void Accumulate(FieldDrift& d, const FieldReport& r, const std::string& case_name) {
  if (r.outcome == Outcome::kUnsupported) return;  // on one side only: counted by Compute
  ++d.compared;
  if (r.outcome == Outcome::kFailed) {
    ++d.changed;
    if (r.worst_abs >= d.max_abs) d.worst_case = case_name;
  } else if (r.worst_abs == 0.0) {
    ++d.identical;
  } else {
    ++d.rounding;
  }
  d.max_abs = std::max(d.max_abs, r.worst_abs);
  d.max_rel = std::max(d.max_rel, r.worst_rel);
  d.max_err_tol = std::max(d.max_err_tol, r.err_tol);
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
void Validate(const GoldenSet& g, const Selection& only) {
  for (const auto& [key, c] : g.index)
    if (only.Selects(*c))
      if (const FunctionSpec* spec = SpecFor(*c)) ValidateStructure(*spec, *c);
}

Drift Compute(const GoldenSet& a, const GoldenSet& b, const Selection& only) {
  Drift d;
  d.old_version = a.VerlVersion();
  d.new_version = b.VerlVersion();
  for (const auto& [key, oc] : a.index) {
    const std::string& fn = std::get<1>(key);
    const std::string label = fn + "/" + std::get<2>(key);
    if (!only.Selects(*oc)) continue;
    auto it = b.index.find(key);
    if (it == b.index.end()) {
      d.only_old.push_back(label);
      continue;
    }
    const Case& nc = *it->second;
    if (!SameInputs(*oc, nc)) {
      d.inputs_differ.push_back(label);
      continue;
    }
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
      Accumulate(row[f.field], f, std::get<2>(key));
      if (f.outcome == Outcome::kFailed)
        d.changes.push_back({RowName(std::get<0>(key), fn), std::get<0>(key), fn, std::get<2>(key), f.field, f.err_tol,
                             f.worst_abs, f.worst_rel});
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
  for (const auto& [key, nc] : b.index)
    if (only.Selects(*nc) && !a.index.count(key)) d.only_new.push_back(std::get<1>(key) + "/" + std::get<2>(key));
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
  out << "conform drift: verl " << d.old_version << " (" << d.old_dir << ") -> verl " << d.new_version << " ("
      << d.new_dir << ")\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %-32s %5s %5s %5s %5s %5s %11s %11s  %s\n", "function", "field", "cases",
                "same", "round", "CHGD", "MISS", "max abs", "max rel", "largest change in");
  out << line;
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields) {
      std::snprintf(line, sizeof line, "%-24s %-32s %5d %5d %5d %5d %5d %11.3e %11.3e  %s\n", fn.c_str(), field.c_str(),
                    f.compared, f.identical, f.rounding, f.changed, f.missing(), f.max_abs, f.max_rel,
                    f.changed ? f.worst_case.c_str() : "");
      out << line;
    }
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out << "\n" << title << " (" << v.size() << "):\n";
    for (const auto& s : v) out << "  " << s << "\n";
  };
  list("verl registry names added", d.registry_added);
  list("verl registry names removed", d.registry_removed);
  list("error behaviour changed", d.error_changes);
  list("fields on one side only (MISS)", d.fields_one_side);
  list("inputs differ (catalogue changed; not compared)", d.inputs_differ);
  list("only in old set", d.only_old);
  list("only in new set", d.only_new);
  out << "\n" << (d.AnyChange() ? "drift found beyond tolerance" : "no drift beyond tolerance") << "\n";
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
  j.Key("old").BeginObject();
  j.Key("dir").String(d.old_dir);
  j.Key("verl_version").String(d.old_version);
  j.EndObject();
  j.Key("new").BeginObject();
  j.Key("dir").String(d.new_dir);
  j.Key("verl_version").String(d.new_version);
  j.EndObject();
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
      j.Key("max_abs").Number(f.max_abs);
      j.Key("max_rel").Number(f.max_rel);
      j.Key("err_tol");
      RatioJson(j, f.max_err_tol);
      j.Key("largest_change_in").String(f.changed ? f.worst_case : "");
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
    j.Key("repro").String("bazel run //tools:conform -- drift " + d.old_dir + " " + d.new_dir + " --only " + c.family +
                          "/" + c.function + "/" + c.case_name);
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
  j.EndObject();
  return j.str();
}

// Markdown for a committed report: only what the goldens determine (versions, counts,
// errors), nothing machine- or path-specific, so that a re-run reproduces it exactly.
std::string RenderMarkdown(const Drift& d) {
  std::ostringstream o;
  o << "## conform drift: verl " << d.old_version << " -> verl " << d.new_version << "\n\n";
  o << "Cases present in both golden sets with identical inputs, compared field by field with the "
       "conformance tolerances (new set as \"got\", old set as \"want\"). `same`: bitwise identical; "
       "`round`: within tolerance; `changed`: beyond it.\n\n";
  o << "### Changed beyond tolerance\n\n";
  bool any = false;
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields) {
      if (!f.changed) continue;
      if (!any)
        o << "| function | field | cases | changed | max abs | max rel | largest change in "
             "|\n|---|---|---|---|---|---|---|\n";
      any = true;
      char buf[320];
      std::snprintf(buf, sizeof buf, "| `%s` | `%s` | %d | %d | %.3e | %.3e | `%s` |\n", fn.c_str(), field.c_str(),
                    f.compared, f.changed, f.max_abs, f.max_rel, f.worst_case.c_str());
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
  o << "\n### Unchanged or rounding only\n\n| function | field | cases | same | round | max abs | max rel |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const auto& [fn, fields] : d.fields)
    for (const auto& [field, f] : fields) {
      if (f.changed || f.compared == 0) continue;
      char buf[256];
      std::snprintf(buf, sizeof buf, "| `%s` | `%s` | %d | %d | %d | %.3e | %.3e |\n", fn.c_str(), field.c_str(),
                    f.compared, f.identical, f.rounding, f.max_abs, f.max_rel);
      o << buf;
    }
  return o.str();
}

}  // namespace

int RunDrift(const std::string& old_dir, const std::string& new_dir, const std::string& only, const std::string& report,
             bool json, std::ostream& out) {
  const Selection selection(only);
  const GoldenSet a = GoldenSet::Load(old_dir);
  const GoldenSet b = GoldenSet::Load(new_dir);
  std::vector<const Case*> both = a.Cases();
  for (const Case* c : b.Cases()) both.push_back(c);
  selection.RequireResolved(both, old_dir + " or " + new_dir);
  Validate(a, selection);
  Validate(b, selection);
  Drift d = Compute(a, b, selection);
  d.old_dir = old_dir;
  d.new_dir = new_dir;
  const int code = d.AnyChange() ? kExitFailure : kExitOk;
  if (json)
    out << RenderJson(d, code) << "\n";
  else
    RenderText(d, out);
  out.flush();
  if (!out) throw BadInput("cannot write the results to standard output");
  if (!report.empty()) WriteFileAtomically(report, RenderMarkdown(d));
  return code;
}

}  // namespace verlconf::tools
