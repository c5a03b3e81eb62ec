#include "tools/cli/version.h"

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

}  // namespace verlconf::tools
