#include "tools/cli/baseline.h"

#include <fnmatch.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "oracle/core/errors.h"
#include "oracle/core/text.h"
#include "oracle/judge/candidate.h"
#include "oracle/registry.h"
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

// Whether `field` (KnownField's form) is one `spec` has: an entry naming another would
// only ever be reported as stale.
bool FieldOf(const FunctionSpec& spec, const std::string& field) {
  if (field == "error") return true;
  const size_t slash = field.find('/');
  const std::string group = field.substr(0, slash), name = field.substr(slash + 1);
  auto any = [&](const std::vector<std::string>& names) {
    for (const std::string& n : names)
      if (MatchesNamePattern(n, name)) return true;
    return false;
  };
  std::vector<std::string> outputs;
  for (const auto& o : spec.outputs) outputs.push_back(o.name);
  if (group == "outputs") return any(outputs);
  if (group == "grads") return any(spec.grads);
  if (group == "metrics") return any(spec.metrics);
  if (group == "vjps") {  // vjps/<output>/<input>
    const std::string output = name.substr(0, name.find('/'));
    for (const std::string& n : outputs)
      if (MatchesNamePattern(n, output)) return true;
  }
  return false;
}

// The failing fields of a FAILED case; `error` where the case failed as a whole (its
// error semantics), with no field to name.
std::vector<FailingKey> FailingKeys(const CaseReport& r) {
  std::vector<FailingKey> keys;
  for (const auto& f : r.fields)
    if (f.outcome == Outcome::kFailed) keys.push_back({f.field, ""});
  if (keys.empty()) keys.push_back({"error", ""});
  return keys;
}

// An entry without a row covers the function's cases and its dp-invariance rows (an
// accepted difference of a loss is accepted in its sharded runs too); `[dp k=K]` covers
// that row alone, `[dp k=*]` every row and not the function's own cases. An entry
// without a cause covers every cause of its field.
bool Covers(const BaselineEntry& e, const CaseReport& r, const FailingKey& key) {
  const int64_t row = DpRanksOfRow(r.function);
  const bool row_ok = e.dp_row == BaselineEntry::kAllRows || (e.dp_row == BaselineEntry::kEveryDpRow && row > 0) ||
                      (e.dp_row >= 0 && e.dp_row == row);
  return row_ok && e.function == DpBaseFunction(r.function) && (e.family.empty() || e.family == r.family) &&
         e.field == key.field && (e.cause.empty() || e.cause == key.cause) &&
         fnmatch(e.case_glob.c_str(), r.case_name.c_str(), 0) == 0;
}

// `[dp k=K]` or `[dp k=*]` at the start of `rest` (after the function), consumed; the
// row it names, or kAllRows where there is none.
int64_t TakeRow(std::string& rest, const std::string& where) {
  const std::string t = Trim(rest);
  if (t.rfind("[dp", 0) != 0) return BaselineEntry::kAllRows;
  const size_t close = t.find(']');
  if (close == std::string::npos) throw BadInput(where + "'" + t + "': a row is [dp k=K] or [dp k=*]");
  const std::string inner = Trim(t.substr(3, close - 3));
  rest = t.substr(close + 1);
  if (inner == "k=*") return BaselineEntry::kEveryDpRow;
  const std::string k = inner.rfind("k=", 0) == 0 ? inner.substr(2) : "";
  if (!AllDigits(k) || k.size() > 3 || k[0] == '0')
    throw BadInput(where + "'[dp " + inner + "]': a row is [dp k=K] with K a rank count, or [dp k=*]");
  return std::stoll(k);
}

// ` cause="..."` anywhere before the reason, consumed; "" where there is none.
std::string TakeCause(std::string& text, const std::string& where) {
  const size_t at = text.find("cause=");
  if (at == std::string::npos) return "";
  const size_t open = at + 6;
  if (open >= text.size() || text[open] != '"') throw BadInput(where + "a cause is cause=\"...\" in double quotes");
  const size_t close = text.find('"', open + 1);
  if (close == std::string::npos) throw BadInput(where + "cause=\" has no closing quote");
  std::string cause = text.substr(open + 1, close - open - 1);
  if (Trim(cause).empty()) throw BadInput(where + "an empty cause=\"\"");
  text = text.substr(0, at) + " " + text.substr(close + 1);
  return cause;
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
    // An editor's byte-order mark opens the file; anything else that is not clean UTF-8
    // text would reach the terminal, JSON and JUnit as it stands.
    if (n == 1 && text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find("\xEF\xBB\xBF") != std::string::npos)
      throw BadInput(where + "a byte-order mark (U+FEFF) inside the file in '" + PrintableText(text) + "'");
    if (!IsCleanText(text, false))
      throw BadInput(where + (IsValidUtf8(text) ? "control characters" : "bytes that are not UTF-8") + " in '" +
                     PrintableText(text) + "' (a baseline is UTF-8 text, one entry per line)");
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
    std::string before = line.substr(0, hash);
    e.cause = TakeCause(before, where);
    std::istringstream first(before);
    std::string function_word;
    first >> function_word;
    std::string rest;
    std::getline(first, rest, '\0');
    e.dp_row = TakeRow(rest, where);
    std::istringstream words(rest);
    std::vector<std::string> w{function_word};
    for (std::string s; words >> s;) w.push_back(s);
    if (w.size() < 2 || w.size() > 3)
      throw BadInput(where + "expected FUNCTION [ROW] FIELD [CASE-GLOB] [cause=\"...\"] before '#', got " +
                     std::to_string(w.size()) + " word(s)");
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
    bool has_field = false;
    std::string fields;
    for (const FunctionSpec& s : Registry())
      if (s.name == e.function && (e.family.empty() || s.family == e.family)) {
        has_field = has_field || FieldOf(s, e.field);
        if (fields.empty()) {
          for (const auto& o : s.outputs) fields += (fields.empty() ? "" : ", ") + ("outputs/" + o.name);
          for (const auto& g : s.grads) fields += ", grads/" + g;
          for (const auto& m : s.metrics) fields += ", metrics/" + m;
        }
      }
    if (!has_field)
      throw BadInput(where + "'" + e.field + "' is no field of " + w[0] + " (misspelled?); it has " + fields +
                     ", vjps/OUTPUT/INPUT and error");
    e.case_glob = w.size() == 3 ? w[2] : "*";
    b.entries.push_back(std::move(e));
  }
  if (in.bad()) throw BadInput("--baseline " + path + ": cannot read it");
  return b;
}

void ApplyBaseline(Baseline& baseline, std::vector<CaseReport>& reports,
                   const std::vector<std::vector<FailingKey>>* keys) {
  for (size_t i = 0; i < reports.size(); ++i) {
    CaseReport& r = reports[i];
    if (r.outcome != Outcome::kFailed) continue;
    std::vector<BaselineEntry*> by;
    bool all = true;
    for (const FailingKey& key : keys && !(*keys)[i].empty() ? (*keys)[i] : FailingKeys(r)) {
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

bool Baseline::Accepts(const CaseReport& report, const FailingKey& key) {
  for (auto& e : entries)
    if (Covers(e, report, key)) {
      ++e.covered;
      return true;
    }
  return false;
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
    for (const FailingKey& key : FailingKeys(r)) {
      std::string reason = kBaselinePlaceholder;
      if (previous)
        for (const auto& e : previous->entries)
          if (Covers(e, r, key)) {
            reason = e.reason;
            break;
          }
      rows.emplace(std::make_tuple(r.family, DpBaseFunction(r.function), key.field), reason);
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
