#include "tools/cli/version.h"

#include <cstdlib>
#include <fstream>

#include "tools/cli/paths.h"

namespace verlconf::tools {
namespace {
std::string& Stored() {
  static std::string revision = "unknown";
  return revision;
}
}  // namespace

void InitRevision(const char* argv0) {
  std::ifstream in(RunfilePath(argv0, "tools/cli/revision.txt"));
  std::string line;
  if (in && std::getline(in, line) && !line.empty()) Stored() = line;
}

const std::string& Revision() { return Stored(); }

namespace {
std::string& StoredName() {
  static std::string name = "conform";
  return name;
}
}  // namespace

void InitCommandName(const char* argv0) {
  const char* prog = std::getenv("VERLCONF_PROG");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (prog && *prog)
    StoredName() = prog;
  else if (workspace && *workspace)
    StoredName() = "bazel run //tools:conform --";
  else if (argv0 && *argv0)
    StoredName() = argv0;
}

const std::string& CommandName() { return StoredName(); }

}  // namespace verlconf::tools
