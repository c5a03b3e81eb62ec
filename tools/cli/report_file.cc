#include "tools/cli/report_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

#include "oracle/core/errors.h"

namespace verlconf::tools {
namespace {

std::string Errno() { return std::strerror(errno); }

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char* KindOf(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

struct Claim {
  std::string path;
  std::string canonical;  // real path of the directory + "/" + name
};
std::vector<Claim>& Claims() {
  static std::vector<Claim> c;
  return c;
}

// --- the temporary file and the signals that must not leave it behind -------------

// Read by the signal handler, so plain storage and a sig_atomic_t flag only.
char g_temp[PATH_MAX];
volatile sig_atomic_t g_temp_live = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];
bool g_installed[3] = {false, false, false};

extern "C" void RemoveTempAndReraise(int sig) {
  // unlink, sigaction and raise are async-signal-safe.
  if (g_temp_live) unlink(g_temp);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);  // delivered with the default action once this handler returns
}

void InstallHandlers() {
  for (int i = 0; i < 3; ++i) {
    struct sigaction old;
    if (sigaction(kSignals[i], nullptr, &old) != 0) continue;
    if (old.sa_handler == SIG_IGN) continue;  // e.g. nohup: the user asked for it to be ignored
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = RemoveTempAndReraise;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], &sa, &g_previous[i]) == 0) g_installed[i] = true;
  }
}

void RestoreHandlers() {
  for (int i = 0; i < 3; ++i)
    if (g_installed[i]) {
      sigaction(kSignals[i], &g_previous[i], nullptr);
      g_installed[i] = false;
    }
}

class BlockSignals {
 public:
  BlockSignals() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : kSignals) sigaddset(&s, sig);
    sigprocmask(SIG_BLOCK, &s, &old_);
  }
  ~BlockSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

}  // namespace

std::vector<std::string> InputFiles(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return {path};
  std::vector<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 3 && n.compare(n.size() - 3, 3, ".h5") == 0) out.push_back(path + "/" + n);
    }
    closedir(d);
  }
  return out;
}

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    const std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && out.size() < 100000) {
      for (auto& f : FilesUnder(p)) out.push_back(std::move(f));
    } else if (S_ISREG(st.st_mode)) {
      out.push_back(p);
    }
  }
  closedir(d);
  return out;
}

void ClaimOutput(const std::string& option, const std::string& path, const std::vector<std::string>& input_files) {
  const std::string who = option + " " + path;
  if (path.empty()) throw BadInput(option + ": an empty file name");
  if (path.back() == '/') throw BadInput(who + ": names a directory; expected a file name");
  const std::string dir = DirOf(path);
  struct stat dst;
  if (stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
    throw BadInput(who + ": the directory " + dir + " does not exist");
  if (access(dir.c_str(), W_OK) != 0) throw BadInput(who + ": the directory " + dir + " is not writable");
  char real[PATH_MAX];
  if (!realpath(dir.c_str(), real)) throw BadInput(who + ": cannot resolve the directory " + dir + ": " + Errno());
  const std::string canonical = std::string(real) + "/" + BaseOf(path);
  for (const Claim& c : Claims())
    if (c.canonical == canonical)
      throw BadInput(who + ": the same file as another output of this run (" + c.path + ")");

  struct stat lst, st;
  const bool exists = lstat(path.c_str(), &lst) == 0;
  if (exists) {
    if (S_ISLNK(lst.st_mode) && stat(path.c_str(), &st) != 0)
      throw BadInput(who + ": a symbolic link to nothing; conform writes only to a regular file or a new name");
    if (!S_ISLNK(lst.st_mode)) st = lst;
    if (!S_ISREG(st.st_mode))
      throw BadInput(who + ": " + (S_ISLNK(lst.st_mode) ? std::string("a symbolic link to ") : std::string("")) +
                     KindOf(st.st_mode) + "; conform writes only to a regular file or a new name");
    for (const std::string& in : input_files) {
      struct stat ist;
      if (stat(in.c_str(), &ist) == 0 && ist.st_dev == st.st_dev && ist.st_ino == st.st_ino)
        throw BadInput(who + ": the same file as the input " + in + "; refusing to overwrite an input");
    }
  }
  Claims().push_back({path, canonical});
}

void ForgetClaimedOutputs() { Claims().clear(); }

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (g_temp_live) throw BadInput(path + ": another report is being written");
  const std::string tpl = DirOf(path) + "/." + BaseOf(path) + ".conform-tmp-XXXXXX";
  if (tpl.size() >= sizeof g_temp) throw BadInput(path + ": path too long");
  InstallHandlers();
  {
    // No signal between creating the file and recording its name for the handler.
    BlockSignals block;
    std::memcpy(g_temp, tpl.c_str(), tpl.size() + 1);
    fd_ = mkostemp(g_temp, O_CLOEXEC);
    if (fd_ >= 0) g_temp_live = 1;
  }
  if (fd_ < 0) {
    const std::string e = Errno();
    RestoreHandlers();
    throw BadInput(path + ": cannot create a temporary file in " + DirOf(path) + " (" + e + ")");
  }
  temp_ = g_temp;
  // mkstemp creates 0600; a report is as readable as any file the user creates.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile() {
  if (!committed_) Abandon();
}

void AtomicFile::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (g_temp_live) {
    BlockSignals block;
    unlink(temp_.c_str());
    g_temp_live = 0;
  }
  RestoreHandlers();
}

void AtomicFile::Write(const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string e = n < 0 ? Errno() : "short write";
      Abandon();
      throw BadInput(path_ + ": write failed (" + e + ")");
    }
    done += static_cast<size_t>(n);
  }
}

void AtomicFile::Commit() {
  if (fsync(fd_) != 0 || close(fd_) != 0) {
    const std::string e = Errno();
    fd_ = -1;
    Abandon();
    throw BadInput(path_ + ": write failed (" + e + ")");
  }
  fd_ = -1;
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string e = Errno();
    Abandon();
    throw BadInput(path_ + ": cannot rename the temporary file into place (" + e + ")");
  }
  {
    BlockSignals block;
    g_temp_live = 0;
  }
  committed_ = true;
  RestoreHandlers();
  // The rename itself reaches the disk with the directory.
  const int dfd = open(DirOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

void WriteFileAtomically(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  f.Write(content);
  f.Commit();
}

}  // namespace verlconf::tools
