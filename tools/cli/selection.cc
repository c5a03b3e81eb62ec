#include "tools/cli/selection.h"

#include <algorithm>
#include <set>

#include "oracle/core/errors.h"
#include "oracle/registry.h"

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

bool IsFunction(const std::string& s) {
  for (const auto& spec : Registry())
    if (spec.name == s) return true;
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
    if (parts.size() == 1 && IsFamily(parts[0]) && !IsFunction(parts[0])) {
      e.family = parts[0];  // a whole family, as `conform spec FAMILY`
    } else if (parts.size() == 1) {
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
  return (function.empty() || c.function == function) && (family.empty() || c.family == family) &&
         (case_name.empty() || c.name == case_name);
}

bool Selection::Selects(const Case& c) const {
  if (entries_.empty()) return true;
  for (const auto& e : entries_)
    if (e.Matches(c)) return true;
  return false;
}

std::string DidYouMean(const std::string& name, const std::set<std::string>& known) {
  // Levenshtein distance; a suggestion is close enough when at most a third of the name
  // (and at least 2 edits) differs, so that a typo finds its name and nonsense finds none.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  size_t best = limit + 1;
  std::vector<std::string> closest;
  for (const auto& k : known) {
    const size_t d = distance(name, k);
    if (d < best) best = d, closest.clear();
    if (d == best) closest.push_back(k);
  }
  if (closest.empty()) return "";
  constexpr size_t kShown = 3;
  std::string s = " (did you mean ";
  for (size_t i = 0; i < closest.size() && i < kShown; ++i) s += (i ? ", '" : "'") + closest[i] + "'";
  return s + "?)";
}

void Selection::RequireResolved(const std::vector<const Case*>& universe, const std::string& where) const {
  // Every name an entry could have meant, in each of the forms an entry takes.
  std::set<std::string> known;
  for (const Case* c : universe)
    for (const std::string& k : {c->family, c->function, c->family + "/" + c->function, c->function + "/" + c->name,
                                 c->family + "/" + c->function + "/" + c->name})
      known.insert(k);
  std::string unresolved;
  for (const auto& e : entries_) {
    bool found = false;
    for (const Case* c : universe)
      if ((found = e.Matches(*c))) break;
    if (!found) unresolved += (unresolved.empty() ? "'" : ", '") + e.text + "'" + DidYouMean(e.text, known);
  }
  if (!unresolved.empty()) throw BadInput("--only: " + unresolved + ": no such function, family or case in " + where);
}

}  // namespace verlconf::tools
