// The files conform writes besides stdout (--junit, --report): where they may go, and
// how they are written so that no run leaves a wrong, stale or half-written one.
#pragma once

#include <string>
#include <vector>

namespace verlconf::tools {

// Before a run, after its options are parsed: `path` (given with `option`) becomes this
// run's output. BadInput, and nothing touched, when it names an existing non-regular
// file (directory, FIFO, device, socket, or a symbolic link to one or to nothing), an
// input of the run (same inode as one of `input_files`: goldens, candidate, adapter,
// interpreter, baseline, the --out directory's files), another output of the run, or
// lies in a directory that does not exist or cannot be written. Nothing at `path` is
// removed or replaced until the run has its result (AtomicFile): a run that exits 2 or 3
// leaves the previous file as it was, and its exit status says that it failed.
void ClaimOutput(const std::string& option, const std::string& path, const std::vector<std::string>& input_files);

// Forgets the claims (a run that exits 2 or 3 writes none of them).
void ForgetClaimedOutputs();

// Every regular file under `dir`, recursively (links not followed): the files a run's
// --out directory keeps, which no other output may replace.
std::vector<std::string> FilesUnder(const std::string& dir);

// What a command reads from `path`: a directory's *.h5 files, or the file itself.
std::vector<std::string> InputFiles(const std::string& path);

// A file written through a temporary in the target's directory, created exclusively
// (mkstemp: a planted file or symlink is never followed), named
// ".<name>.conform-tmp-XXXXXX" so that one left by SIGKILL is recognisable and
// harmless, fsync'ed and renamed into place by Commit. If the process gets SIGINT,
// SIGTERM or SIGHUP meanwhile, the temporary is removed and the signal re-raised; if
// the object is destroyed without Commit, it is removed too. One at a time.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Write(const std::string& data);
  void Commit();
  const std::string& temp_path() const { return temp_; }

 private:
  void Abandon();
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// AtomicFile in one call. BadInput naming `path` on any failure.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace verlconf::tools
