// The `conform` subcommands, as functions that return the process exit code:
//   0  everything compared passed (MISTRUSTED / UNSUPPORTED / SKIPPED are shown, not failures,
//      unless check --require-all makes UNSUPPORTED one)
//   1  a conformance failure (or, for drift, a change beyond tolerance)
//   2  bad input or usage (thrown as BadInput and printed by main as one line)
//   3  an internal error of conform
#pragma once

#include <iosfwd>
#include <string>

namespace verlconf::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;  // a bug in conform itself

struct CheckOptions {
  std::string against;         // golden dir (resolved)
  bool against_given = false;  // the user named it (else the bundled set): repro lines repeat it
  std::string candidate;       // candidate file, or ""
  std::string impl = "oracle";
  std::string junit;         // JUnit XML path, or ""
  std::string report;        // Markdown report path, or ""
  std::string only;          // --only entries, comma-joined (tools/selection.h), or ""
  bool verbose = false;      // describe every non-passing or partial case, not just failures
  bool require_all = false;  // any UNSUPPORTED case or field is a failure (exit 1)
};

int RunCheck(const CheckOptions& o, std::ostream& out);
int RunList(const std::string& against, bool json, std::ostream& out);
int RunSpec(std::ostream& out);
// `report`: also write the drift as Markdown to that file ("" for none).
int RunDrift(const std::string& old_dir, const std::string& new_dir, const std::string& only, const std::string& report,
             std::ostream& out);

}  // namespace verlconf::tools
