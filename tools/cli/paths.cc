#include "tools/cli/paths.h"

#include <cstdlib>
#include <sys/stat.h>
#include <vector>

namespace verlconf::tools {
bool IsDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

std::string ResolveUserPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const std::string wd = Env("BUILD_WORKING_DIRECTORY");
  return wd.empty() ? path : wd + "/" + path;
}

std::string BundledGoldenDir(const char* argv0) {
  const std::string rel = std::string("verlconf/") + kBundledGoldens;
  std::vector<std::string> candidates;
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"})
    if (!Env(var).empty()) candidates.push_back(Env(var) + "/" + rel);
  if (argv0) candidates.push_back(std::string(argv0) + ".runfiles/" + rel);
  if (!Env("BUILD_WORKSPACE_DIRECTORY").empty())
    candidates.push_back(Env("BUILD_WORKSPACE_DIRECTORY") + "/" + kBundledGoldens);
  candidates.push_back(kBundledGoldens);
  for (const auto& c : candidates)
    if (IsDirectory(c)) return c;
  return kBundledGoldens;  // the reader then reports it as missing, by name
}

}  // namespace verlconf::tools
