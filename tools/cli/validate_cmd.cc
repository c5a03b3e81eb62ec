// `conform validate`: the candidate harness (tools/harness/run_candidate.py) on an adapter,
// in the interpreter that has the framework, then `check --candidate` of what it wrote.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
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

// The harness's process group and the temporary directory, for the signal handler: a
// run ended by SIGINT, SIGTERM or SIGHUP (what a CI timeout sends) ends the harness and
// whatever it started, and removes the temporary, before it dies of the signal.
volatile sig_atomic_t g_child = 0;
char g_temp_dir[PATH_MAX] = "";

// The files of `dir` removed and the directory with them, with async-signal-safe calls
// only (the harness writes files there, no subdirectories).
void RemoveFilesAndDir(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
      for (long off = 0; off < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short reclen;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char* name = buf + off + 19;
        if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))) unlinkat(fd, name, 0);
        off += reclen;
      }
    close(fd);
  }
  rmdir(dir);
}

extern "C" void EndHarnessAndReraise(int sig) {
  const pid_t child = g_child;
  if (child > 0) {
    kill(-child, SIGKILL);
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (g_temp_dir[0]) RemoveFilesAndDir(g_temp_dir);
  signal(sig, SIG_DFL);
  raise(sig);
}

// The handler above for the length of a validate run.
class EndWithTheRun {
 public:
  EndWithTheRun() {
    for (size_t i = 0; i < 3; ++i) {
      struct sigaction sa;
      std::memset(&sa, 0, sizeof sa);
      sa.sa_handler = EndHarnessAndReraise;
      sigemptyset(&sa.sa_mask);
      sigaction(kSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
    }
  }
  ~EndWithTheRun() {
    for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    g_temp_dir[0] = 0;
  }
  EndWithTheRun(const EndWithTheRun&) = delete;
  EndWithTheRun& operator=(const EndWithTheRun&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

// At most this much of what the harness prints is kept (for the error message): the rest
// is streamed to stderr and dropped.
constexpr size_t kKeptOutput = 64 * 1024;

// Runs argv in its own process group; its stdout and stderr go to ours (stderr: stdout is
// the check's), and the last kKeptOutput bytes of it are returned. It ends when argv's
// process exits, whatever it left running (a background process holding the pipe is
// ended with the group). The exit status, or 128 + the signal.
int Run(const std::vector<std::string>& argv, std::string& text, bool echo = true) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw BadInput(std::string("cannot start the harness: ") + std::strerror(errno));
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  // No signal between the fork and recording the child for the handler.
  sigprocmask(SIG_BLOCK, &block, &old);
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    throw BadInput(std::string("cannot start the harness: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  g_child = pid;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(fds[1]);
  int status = 0;
  bool exited = false;
  char buf[4096];
  for (;;) {
    struct pollfd p = {fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, exited ? 0 : 200);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      const ssize_t got = read(fds[0], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // every writer is gone
      text.append(buf, static_cast<size_t>(got));
      if (text.size() > 2 * kKeptOutput) text.erase(0, text.size() - kKeptOutput);
      if (echo) {
        std::cerr.write(buf, got);
        std::cerr.flush();
      }
      continue;
    }
    if (exited) break;  // drained what the harness wrote before it exited
    if (waitpid(pid, &status, WNOHANG) == pid) exited = true;
  }
  close(fds[0]);
  if (!exited)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  kill(-pid, SIGKILL);  // what it started and left behind ends with it
  g_child = 0;
  if (text.size() > kKeptOutput) text.erase(0, text.size() - kKeptOutput);
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
    if (path_.size() < sizeof g_temp_dir) std::memcpy(g_temp_dir, path_.c_str(), path_.size() + 1);
  }
  ~TempDir() {
    g_temp_dir[0] = 0;
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
  const EndWithTheRun end_with_the_run;
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
  argv.insert(argv.end(), {"--call-timeout", std::to_string(v.call_timeout)});
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
