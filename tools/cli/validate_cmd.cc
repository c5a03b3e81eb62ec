// `conform validate`: the candidate harness (tools/harness/run_candidate.py) on an adapter,
// in the interpreter that has the framework, then `check --candidate` of what it wrote.
#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <vector>

#include "oracle/core/errors.h"
#include "tools/cli/baseline.h"
#include "tools/cli/commands.h"
#include "tools/cli/paths.h"

namespace verlconf::tools {
namespace {

constexpr const char* kHarness = "tools/harness/run_candidate.py";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Absolute(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf)) return buf;
  if (p.empty() || p[0] == '/') return p;
  return getcwd(buf, sizeof buf) ? std::string(buf) + "/" + p : p;
}

// The harness script, found as the goldens are (tools/cli/paths.h): beside the binary in the
// wheel's layout, in the runfiles (bazel run, bazel test, bazel-bin/tools/conform with its
// .runfiles beside it), else in the checkout.
std::string HarnessScript(const std::string& argv0) {
  const std::string found = RunfilePath(argv0.c_str(), kHarness);
  if (!found.empty() && IsFile(found)) return Absolute(found);
  throw BadInput(std::string("cannot find the candidate harness ") + kHarness +
                 " (run conform through `bazel run //tools:conform`, as bazel-bin/tools/conform after `bazel build "
                 "//tools:conform`, from the repository root, or as the verlconf wheel's `verlconf`)");
}

// Runs argv; its stdout and stderr go to ours (stderr: stdout is the check's), and the
// text is returned. The exit status, or 128 + the signal.
int Run(const std::vector<std::string>& argv, std::string& text, bool echo = true) {
  int fds[2];
  if (pipe(fds) != 0) throw BadInput(std::string("cannot start the harness: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw BadInput(std::string("cannot start the harness: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, static_cast<size_t>(got));
    if (echo) {
      std::cerr.write(buf, got);
      std::cerr.flush();
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// A temporary directory for the harness's files, removed with them when the run ends.
class TempDir {
 public:
  TempDir() {
    std::string base = Env("TMPDIR").empty() ? "/tmp" : Env("TMPDIR");
    std::string templ = base + "/conform-validate-XXXXXX";
    if (!mkdtemp(templ.data()))
      throw BadInput("cannot create a temporary directory in " + base + ": " + std::strerror(errno));
    path_ = templ;
  }
  ~TempDir() {
    if (DIR* d = opendir(path_.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") unlink((path_ + "/" + n).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

int RunValidate(const ValidateOptions& v, std::ostream& out) {
  const CheckOptions& o = v.check;
  const std::string script = HarnessScript(v.argv0);
  // A malformed baseline is exit 2 before the harness computes anything.
  if (!o.baseline.empty()) LoadBaseline(o.baseline);
  const std::string hint = "pass --python with the interpreter that has your framework, numpy and h5py";
  std::string probe;
  const int probe_code = Run({v.python, "-c", "import numpy, h5py"}, probe, false);
  const std::string python = o.python.empty() ? v.python_default + " (" + v.python + ", the default)" : v.python;
  if (probe_code != 0)
    throw BadInput("--python " + python + " cannot import what the harness needs (numpy, h5py): " + LastLine(probe) +
                   "; " + hint);
  std::optional<TempDir> temp;
  std::string dir = v.out;
  if (dir.empty()) {
    temp.emplace();
    dir = temp->path();
  }
  std::vector<std::string> argv = {
      v.python,
      script,
      "--adapter",
      o.adapter.size() > 3 && o.adapter.rfind(".py") == o.adapter.size() - 3 ? ResolveUserPath(o.adapter) : o.adapter,
      "--out",
      dir,
      "--goldens",
      Absolute(o.against),
      "--conform",
      SelfExecutable("the harness")};
  if (!o.only.empty()) argv.insert(argv.end(), {"--only", o.only});
  if (o.jobs > 1) argv.insert(argv.end(), {"--jobs", std::to_string(o.jobs)});
  if (v.force) argv.push_back("--force");
  std::string text;
  const int code = Run(argv, text);
  if (code != 0) {
    std::string why = "the candidate harness failed (exit " + std::to_string(code) + ")";
    if (text.find("No module named") != std::string::npos || text.find("ModuleNotFoundError") != std::string::npos)
      why += ": the adapter needs a module that " + python + " cannot import; " + hint;
    throw BadInput(why);
  }
  if (!v.out.empty())
    std::cerr << "conform: validate: the candidate results are in " << v.out << "\n";
  else
    std::cerr << "conform: validate: the candidate results are in a temporary directory, removed at exit "
                 "(--out DIR keeps them)\n";
  CheckOptions c = o;
  c.candidate = dir;
  return RunCheck(c, out);
}

}  // namespace verlconf::tools
