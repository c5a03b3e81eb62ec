#include "tools/cli/paths.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <sys/stat.h>
#include <vector>

#include "oracle/core/errors.h"

namespace verlconf::tools {
bool IsDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string NotARegularFile(const std::string& p) {
  struct stat st;
  if (stat(p.c_str(), &st) != 0) return "no such file";
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory, not a regular file";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe), not a regular file";
  if (S_ISSOCK(st.st_mode)) return "a socket, not a regular file";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device, not a regular file";
  return "not a regular file";
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

std::string RunfilePath(const char* argv0, const std::string& rel) {
  const std::string in_runfiles = "verlconf/" + rel;
  std::vector<std::string> candidates;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  // The installed layout (the wheel, tools/wheel): the files lie beside the binary as in the
  // repository. It comes first: a binary that carries its files uses them, even when it
  // runs inside another tool's runfiles (a test, a CI job under Bazel).
  if (!exe.empty()) candidates.push_back(exe.substr(0, exe.rfind('/') + 1) + rel);
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"})
    if (!Env(var).empty()) candidates.push_back(Env(var) + "/" + in_runfiles);
  if (argv0) candidates.push_back(std::string(argv0) + ".runfiles/" + in_runfiles);
  if (!exe.empty()) candidates.push_back(exe + ".runfiles/" + in_runfiles);
  if (!Env("BUILD_WORKSPACE_DIRECTORY").empty()) candidates.push_back(Env("BUILD_WORKSPACE_DIRECTORY") + "/" + rel);
  candidates.push_back(rel);
  struct stat st;
  for (const auto& c : candidates)
    if (stat(c.c_str(), &st) == 0) return c;
  return "";
}

std::string SelfExecutable(const std::string& who) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw BadInput("cannot find this conform binary (/proc/self/exe) for " + who + "'s registry");
  return std::string(self, static_cast<size_t>(n));
}

std::string BundledGoldenDir(const char* argv0) {
  const std::string found = RunfilePath(argv0, kBundledGoldens);
  // Not found: the reader then reports it as missing, by name.
  return !found.empty() && IsDirectory(found) ? found : kBundledGoldens;
}

}  // namespace verlconf::tools
