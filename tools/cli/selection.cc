#include "tools/cli/selection.h"

#include <set>

#include "oracle/core/errors.h"
#include "oracle/core/registry.h"

namespace verlconf::tools {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

bool IsFamily(const std::string& s) {
  for (const auto& spec : Registry())
    if (spec.family == s) return true;
  return false;
}

}  // namespace

Selection::Selection(const std::string& only) {
  if (only.empty()) return;
  for (const std::string& text : Split(only, ',')) {
    if (text.empty()) throw BadInput("--only: an empty name in '" + only + "'");
    const std::vector<std::string> parts = Split(text, '/');
    for (const auto& p : parts)
      if (p.empty()) throw BadInput("--only: '" + text + "': an empty part between slashes");
    Entry e;
    e.text = text;
    if (parts.size() == 1) {
      e.function = parts[0];
    } else if (parts.size() == 2 && IsFamily(parts[0])) {
      e.family = parts[0];
      e.function = parts[1];
    } else if (parts.size() == 2) {
      e.function = parts[0];
      e.case_name = parts[1];
    } else if (parts.size() == 3) {
      e.family = parts[0];
      e.function = parts[1];
      e.case_name = parts[2];
    } else {
      throw BadInput("--only: '" + text +
                     "': expected FUNCTION, FAMILY/FUNCTION, FUNCTION/CASE or "
                     "FAMILY/FUNCTION/CASE");
    }
    entries_.push_back(std::move(e));
  }
}

bool Selection::Entry::Matches(const Case& c) const {
  return c.function == function && (family.empty() || c.family == family) && (case_name.empty() || c.name == case_name);
}

bool Selection::Selects(const Case& c) const {
  if (entries_.empty()) return true;
  for (const auto& e : entries_)
    if (e.Matches(c)) return true;
  return false;
}

void Selection::RequireResolved(const std::vector<const Case*>& universe, const std::string& where) const {
  std::string unresolved;
  for (const auto& e : entries_) {
    bool found = false;
    for (const Case* c : universe)
      if ((found = e.Matches(*c))) break;
    if (!found) unresolved += (unresolved.empty() ? "'" : ", '") + e.text + "'";
  }
  if (!unresolved.empty()) throw BadInput("--only: " + unresolved + ": no such function or case in " + where);
}

}  // namespace verlconf::tools
