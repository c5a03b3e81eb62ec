// `conform drift OLD NEW`: how two golden sets (e.g. two verl versions) differ on the
// cases they share. A change is reported when it exceeds the comparison tolerance of
// the case's dtype; smaller differences are counted as rounding.
#include <cstdio>
#include <map>
#include <ostream>

#include "oracle/check.h"
#include "oracle/errors.h"
#include "tools/commands.h"
#include "tools/golden_set.h"

namespace verlconf::tools {
namespace {

struct FieldDrift {
  int compared = 0, identical = 0, rounding = 0, changed = 0;
  double max_abs = 0.0, max_rel = 0.0;
  std::string worst_case;
};

bool Selected(const std::string& only, const std::string& fn) { return only.empty() || only == fn; }

void Accumulate(FieldDrift& d, const FieldReport& r, const std::string& case_name) {
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
}

}  // namespace

int RunDrift(const std::string& old_dir, const std::string& new_dir, const std::string& only, std::ostream& out) {
  const GoldenSet a = GoldenSet::Load(old_dir);
  const GoldenSet b = GoldenSet::Load(new_dir);
  out << "conform drift: verl " << a.VerlVersion() << " (" << old_dir << ") -> verl " << b.VerlVersion() << " ("
      << new_dir << ")\n";
  std::map<std::string, std::map<std::string, FieldDrift>> drift;  // function -> field -> stats
  std::vector<std::string> only_old, only_new, inputs_differ, error_changes;
  for (const auto& [key, oc] : a.index) {
    const std::string& fn = std::get<1>(key);
    const std::string label = fn + "/" + std::get<2>(key);
    if (!Selected(only, fn)) continue;
    auto it = b.index.find(key);
    if (it == b.index.end()) {
      only_old.push_back(label);
      continue;
    }
    const Case& nc = *it->second;
    if (oc->inputs.size() != nc.inputs.size()) {
      inputs_differ.push_back(label);
      continue;
    }
    bool same_inputs = true;
    for (const auto& [n, arr] : oc->inputs) {
      const Array* other = nc.OptionalInput(n);
      same_inputs &= other && other->shape == arr.shape && other->data == arr.data;
    }
    if (!same_inputs) {
      inputs_differ.push_back(label);
      continue;
    }
    if (oc->expect_error.has_value() != nc.expect_error.has_value()) {
      error_changes.push_back(label + ": " + (oc->expect_error ? *oc->expect_error : "result") +
                              " -> " + (nc.expect_error ? *nc.expect_error : "result"));
      continue;
    }
    if (oc->expect_error) continue;
    // The new set plays "got", the old one "want": same comparator as conformance.
    const FunctionSpec* spec = SpecFor(*oc);
    FunctionSpec generic;
    generic.name = fn;
    const Result got = Result::Of(nc);
    const CaseReport r = CompareResult(spec ? *spec : generic, *oc, &got, std::nullopt);
    for (const auto& f : r.fields) Accumulate(drift[fn][f.field], f, std::get<2>(key));
  }
  for (const auto& [key, nc] : b.index)
    if (Selected(only, std::get<1>(key)) && !a.index.count(key))
      only_new.push_back(std::get<1>(key) + "/" + std::get<2>(key));

  char line[256];
  std::snprintf(line, sizeof line, "%-24s %-32s %5s %5s %5s %5s %11s %11s  %s\n", "function", "field", "cases",
                "same", "round", "CHGD", "max abs", "max rel", "largest change in");
  out << line;
  bool any_change = !error_changes.empty();
  for (const auto& [fn, fields] : drift)
    for (const auto& [field, d] : fields) {
      any_change |= d.changed > 0;
      std::snprintf(line, sizeof line, "%-24s %-32s %5d %5d %5d %5d %11.3e %11.3e  %s\n", fn.c_str(), field.c_str(),
                    d.compared, d.identical, d.rounding, d.changed, d.max_abs, d.max_rel,
                    d.changed ? d.worst_case.c_str() : "");
      out << line;
    }
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out << "\n" << title << " (" << v.size() << "):\n";
    for (const auto& s : v) out << "  " << s << "\n";
  };
  list("error behaviour changed", error_changes);
  list("inputs differ (catalogue changed; not compared)", inputs_differ);
  list("only in old set", only_old);
  list("only in new set", only_new);
  out << "\n" << (any_change ? "drift found beyond tolerance" : "no drift beyond tolerance") << "\n";
  return any_change ? kExitFailure : kExitOk;
}

}  // namespace verlconf::tools
