// `--only`: which functions and cases a command looks at.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "oracle/core/case.h"

namespace verlconf::tools {

// Comma-separated entries, each one of
//   FUNCTION               every case of that function (of every family that has one)
//   FAMILY                 every case of every function of the family (a name that is no function's)
//   FAMILY/FUNCTION        one family's function (verl spells "gpg" twice)
//   FUNCTION/CASE          one case
//   FAMILY/FUNCTION/CASE
// An empty string selects everything; an empty or malformed entry is a BadInput.
// " (did you mean 'a', 'b'?)": the names of `known` closest to `name` by edit distance, or
// "" when none is close enough to be a typo of it.
std::string DidYouMean(const std::string& name, const std::set<std::string>& known);

class Selection {
 public:
  explicit Selection(const std::string& only);

  bool All() const { return entries_.empty(); }
  bool Selects(const Case& c) const;
  // Every entry must select at least one case of `universe` (a misspelled name is
  // never silently dropped): BadInput naming each one that does not, and `where`.
  void RequireResolved(const std::vector<const Case*>& universe, const std::string& where) const;

 private:
  struct Entry {
    std::string text, family, function, case_name;  // "" family / case: any
    bool Matches(const Case& c) const;
  };
  std::vector<Entry> entries_;
};

}  // namespace verlconf::tools
