// A directory of golden files, loaded once and indexed by function and case.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fixtures/h5io.h"

namespace verlconf::tools {

struct GoldenSet {
  std::string dir;
  std::vector<fixtures::FixtureFile> files;
  // (family, function, case) -> case, across files. A duplicate is a BadInput.
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, const Case*> index;

  // A directory's *.h5 files; each file's root `family` must be its file name's stem.
  static GoldenSet Load(const std::string& dir);
  static GoldenSet LoadFile(const std::string& path);
  // verl_version from the files' provenance; BadInput if the files disagree.
  std::string VerlVersion() const;
  // The files' root provenance (verl_version, torch_version, device, producer, ...): per
  // key its non-empty values, joined by ", " where the files disagree (a set merged from
  // several captures).
  std::map<std::string, std::string> Provenance() const;
  // One key of Provenance(); "" when no file has it.
  std::string CommonProvenance(const std::string& key) const;
  // The union of every file's /_verl_registry lists, keyed by the list's name
  // (adv_estimators, policy_losses, kl_penalty_names, ...).
  std::map<std::string, std::vector<std::string>> VerlRegistry() const;
  // Every case, in index order.
  std::vector<const Case*> Cases() const;

 private:
  void Index();
};

// A candidate set follows the goldens' schema at the root: each file's `family` is a
// family of `golden` (and its file name's stem, when that names a family), and its
// verl_version is the goldens'. BadInput naming the file and both values otherwise.
void RequireCandidateRoots(const GoldenSet& candidate, const GoldenSet& golden);

// The registry family that holds the names of a /_verl_registry list.
std::string FamilyOfVerlRegistry(const std::string& list_name);

}  // namespace verlconf::tools
