// tools/cli/report_file: the temporary file of a report is created exclusively beside the
// target under a recognisable name, never survives SIGINT / SIGTERM or an abandoned
// write, and the rename is the only way the target appears.
#include "tools/cli/report_file.h"

#include <dirent.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <vector>

#include "gtest/gtest.h"
#include "oracle/core/errors.h"

namespace verlconf::tools {
namespace {

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tpl = std::string(base ? base : "/tmp") + "/report_file_test.XXXXXX";
  std::vector<char> buf(tpl.begin(), tpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) std::abort();
  return buf.data();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(AtomicFile, TemporaryIsBesideTheTargetRecognisableAndExclusive) {
  const std::string dir = TempDir(), target = dir + "/report.md";
  AtomicFile f(target);
  const std::string tmp = f.temp_path();
  EXPECT_EQ(tmp.rfind(dir + "/.report.md.conform-tmp-", 0), 0u) << tmp;
  struct stat st;
  ASSERT_EQ(lstat(tmp.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  f.Write("hello\n");
  EXPECT_NE(access(target.c_str(), F_OK), 0) << "the target exists before Commit";
  f.Commit();
  EXPECT_EQ(Read(target), "hello\n");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"report.md"});
}

TEST(AtomicFile, AbandonedWriteLeavesNothing) {
  const std::string dir = TempDir();
  {
    AtomicFile f(dir + "/out.xml");
    f.Write("half");
  }
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(AtomicFile, MissingDirectoryIsBadInput) {
  EXPECT_THROW(WriteFileAtomically(TempDir() + "/no/such/out.xml", "x"), BadInput);
}

// The child starts a write and is signalled before it commits: it must die of that
// signal (re-raised, so its parent sees the real cause) and leave no file at all.
void ExpectSignalCleansUp(int sig) {
  const std::string dir = TempDir();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AtomicFile f(dir + "/out.xml");
    f.Write("partial");
    raise(sig);
    _exit(0);  // not reached: the handler re-raises with the default action
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_TRUE(Entries(dir).empty()) << Entries(dir)[0];
}

TEST(AtomicFile, SigtermDuringTheWriteRemovesTheTemporary) { ExpectSignalCleansUp(SIGTERM); }
TEST(AtomicFile, SigintDuringTheWriteRemovesTheTemporary) { ExpectSignalCleansUp(SIGINT); }

TEST(AtomicFile, HandlersAreRestoredAfterTheWrite) {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/a.md", "a");
  struct sigaction now;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(ClaimOutput, RefusesAnInputByInodeAndKeepsIt) {
  const std::string dir = TempDir(), input = dir + "/golden.h5", alias = dir + "/alias.md";
  std::ofstream(input) << "data";
  ASSERT_EQ(link(input.c_str(), alias.c_str()), 0);
  EXPECT_THROW(ClaimOutput("--report", alias, {input}), BadInput);
  EXPECT_EQ(Read(input), "data");
  ForgetClaimedOutputs();
  EXPECT_EQ(Read(alias), "data");
}

// Nothing is removed or replaced before the run has its result: a claimed path keeps the
// previous file until the new one is renamed over it, and a run that fails (its claims
// forgotten) leaves it as it was.
TEST(ClaimOutput, KeepsThePreviousFileUntilTheNewOneReplacesIt) {
  const std::string dir = TempDir(), out = dir + "/junit.xml";
  std::ofstream(out) << "<testsuites/>";
  ClaimOutput("--junit", out, {});
  EXPECT_EQ(Read(out), "<testsuites/>");
  ForgetClaimedOutputs();
  EXPECT_EQ(Read(out), "<testsuites/>");
  ClaimOutput("--junit", out, {});
  WriteFileAtomically(out, "new");
  ForgetClaimedOutputs();
  EXPECT_EQ(Read(out), "new");
}

}  // namespace
}  // namespace verlconf::tools
