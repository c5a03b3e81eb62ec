#include "tools/cli/baseline.h"

#include <fnmatch.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "oracle/core/errors.h"
#include "oracle/core/registry.h"
#include "tools/cli/check_dp.h"

namespace verlconf::tools {
namespace {

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

bool KnownField(const std::string& f) {
  if (f == "error") return true;
  for (const char* group : {"outputs/", "grads/", "metrics/", "vjps/"})
    if (f.rfind(group, 0) == 0 && f.size() > std::string(group).size()) return true;
  return false;
}

// The failing fields of a FAILED case; `error` where the case failed as a whole (its
// error semantics), with no field to name.
std::vector<std::string> FailingKeys(const CaseReport& r) {
  std::vector<std::string> keys;
  for (const auto& f : r.fields)
    if (f.outcome == Outcome::kFailed) keys.push_back(f.field);
  if (keys.empty()) keys.push_back("error");
  return keys;
}

// An entry names a function; it covers the function's dp-invariance rows as well (a
// baseline line has no room for a row label, and an accepted difference of a loss is
// accepted in its sharded runs too).
bool Covers(const BaselineEntry& e, const CaseReport& r, const std::string& key) {
  return e.function == DpBaseFunction(r.function) && (e.family.empty() || e.family == r.family) && e.field == key &&
         fnmatch(e.case_glob.c_str(), r.case_name.c_str(), 0) == 0;
}

}  // namespace

Baseline LoadBaseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw BadInput("--baseline " + path + ": cannot read it");
  Baseline b;
  b.file = path;
  std::string text;
  int n = 0;
  while (std::getline(in, text)) {
    ++n;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    const std::string line = Trim(text);
    if (line.empty() || line[0] == '#') continue;
    const size_t hash = line.find('#');
    if (hash == std::string::npos)
      throw BadInput(where + "no reason: an entry is FUNCTION FIELD [CASE-GLOB] # why the difference is accepted");
    BaselineEntry e;
    e.file = path;
    e.line = n;
    e.reason = Trim(line.substr(hash + 1));
    if (e.reason.empty()) throw BadInput(where + "an empty reason after '#'");
    if (e.reason.rfind("TODO", 0) == 0)
      throw BadInput(where + "the reason is still the placeholder --write-baseline wrote ('" + e.reason +
                     "'): replace it with why this difference is accepted");
    std::istringstream words(line.substr(0, hash));
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.size() < 2 || w.size() > 3)
      throw BadInput(where + "expected FUNCTION FIELD [CASE-GLOB] before '#', got " + std::to_string(w.size()) +
                     " word(s)");
    const size_t slash = w[0].find('/');
    e.family = slash == std::string::npos ? "" : w[0].substr(0, slash);
    e.function = slash == std::string::npos ? w[0] : w[0].substr(slash + 1);
    bool known = false;
    for (const FunctionSpec& s : Registry())
      known |= s.name == e.function && (e.family.empty() || s.family == e.family);
    if (!known) throw BadInput(where + "'" + w[0] + "': no such function in the registry (conform spec)");
    e.field = w[1];
    if (!KnownField(e.field))
      throw BadInput(where + "'" + e.field +
                     "': expected a field (outputs/NAME, grads/NAME, metrics/NAME, vjps/NAME) or error");
    e.case_glob = w.size() == 3 ? w[2] : "*";
    b.entries.push_back(std::move(e));
  }
  if (in.bad()) throw BadInput("--baseline " + path + ": cannot read it");
  return b;
}

void ApplyBaseline(Baseline& baseline, std::vector<CaseReport>& reports) {
  for (auto& r : reports) {
    if (r.outcome != Outcome::kFailed) continue;
    std::vector<BaselineEntry*> by;
    bool all = true;
    for (const std::string& key : FailingKeys(r)) {
      BaselineEntry* hit = nullptr;
      for (auto& e : baseline.entries)
        if (Covers(e, r, key)) {
          hit = &e;
          break;
        }
      if (!hit) all = false;
      by.push_back(hit);
    }
    if (!all) continue;
    std::string lines;
    for (BaselineEntry* e : by) {
      ++e->covered;
      lines += (lines.empty() ? "" : ", ") + std::to_string(e->line);
    }
    r.outcome = Outcome::kBaselined;
    r.detail = "accepted by " + baseline.file + " line(s) " + lines + " (" + by.front()->reason + "); " + r.detail;
  }
}

std::vector<const BaselineEntry*> Baseline::Stale(const std::vector<CaseReport>& reports) const {
  std::vector<const BaselineEntry*> out;
  for (const auto& e : entries) {
    if (e.covered) continue;
    bool judged = false;
    for (const auto& r : reports)
      judged |= e.function == DpBaseFunction(r.function) && (e.family.empty() || e.family == r.family);
    if (judged) out.push_back(&e);
  }
  return out;
}

std::string BaselineText(const std::vector<CaseReport>& reports, const Baseline* previous) {
  std::map<std::tuple<std::string, std::string, std::string>, std::string> rows;  // (family, function, field) -> reason
  for (const auto& r : reports) {
    if (r.outcome != Outcome::kFailed && r.outcome != Outcome::kBaselined) continue;
    for (const std::string& key : FailingKeys(r)) {
      std::string reason = kBaselinePlaceholder;
      if (previous)
        for (const auto& e : previous->entries)
          if (Covers(e, r, key)) {
            reason = e.reason;
            break;
          }
      rows.emplace(std::make_tuple(r.family, DpBaseFunction(r.function), key), reason);
    }
  }
  std::string s =
      "# Accepted differences (conform check --baseline): FUNCTION FIELD [CASE-GLOB] # reason\n"
      "# Review every entry and replace each placeholder reason; conform refuses a TODO reason.\n";
  for (const auto& [key, reason] : rows) {
    const auto& [family, function, field] = key;
    s += family + "/" + function + "  " + field + "  # " + reason + "\n";
  }
  return s;
}

}  // namespace verlconf::tools
