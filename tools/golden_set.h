// A directory of golden files, loaded once and indexed by function and case.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/h5io.h"

namespace verlconf::tools {

struct GoldenSet {
  std::string dir;
  std::vector<fixtures::FixtureFile> files;
  // (function, case) -> case, across files. A duplicate is a BadInput.
  std::map<std::pair<std::string, std::string>, const Case*> index;

  static GoldenSet Load(const std::string& dir);
  static GoldenSet LoadFile(const std::string& path);
  // verl_version from the files' provenance; BadInput if the files disagree.
  std::string VerlVersion() const;
  // The union of every file's /_verl_registry lists.
  std::map<std::string, std::vector<std::string>> VerlRegistry() const;

 private:
  void Index();
};

}  // namespace verlconf::tools
