// The `conform` subcommands, as functions that return the process exit code:
//   0  everything compared passed (MISTRUSTED / UNSUPPORTED / SKIPPED are shown, not failures,
//      unless check --require-all makes UNSUPPORTED one)
//   1  a conformance failure (or, for drift, a change beyond tolerance; for check and validate
//      with --strict-baseline, a baseline entry that covers nothing). BASELINED cases (FAILED,
//      every difference accepted by --baseline) are not failures
//   2  bad input or usage (thrown as BadInput and printed by main as one line)
//   3  an internal error of conform
//   4  check (or explore) compared nothing: no case PASSED or FAILED (every case SKIPPED,
//      UNSUPPORTED or MISTRUSTED; a CI job that lost its GPU, a candidate that declines
//      everything)
#pragma once

#include <iosfwd>
#include <string>

namespace verlconf::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;  // a bug in conform itself
inline constexpr int kExitNothingCompared = 4;

struct CheckOptions {
  std::string against;         // golden dir (resolved)
  bool against_given = false;  // the user named it (else the bundled set): repro lines repeat it
  std::string bundled;         // the bundled golden set: never a candidate either
  std::string candidate;       // candidate file, or ""
  std::string impl = "oracle";
  std::string junit;              // JUnit XML path, or ""
  std::string report;             // Markdown report path, or ""
  std::string only;               // --only entries, comma-joined (tools/cli/selection.h), or ""
  bool verbose = false;           // describe every non-passing or partial case, not just failures
  bool require_all = false;       // any UNSUPPORTED or SKIPPED case, or UNSUPPORTED field, is a failure (exit 1)
  bool show_unsupported = false;  // table rows for functions not provided at all, not one summary line
  bool json = false;              // stdout: one JSON object (schema verlconf.check), not the table
  int jobs = 1;                   // cases checked in parallel (the reports keep the cases' order)
  std::string baseline;           // accepted differences (tools/cli/baseline.h), or ""
  std::string write_baseline;     // write this run's differences as a baseline there, or ""
  bool strict_baseline = false;   // a baseline entry that covers nothing is a failure (exit 1)
  // `conform validate`: the candidate is the harness's output for this adapter; reports
  // name the adapter, and repro lines rerun validate, not a check of a removed directory.
  std::string adapter;
  std::string python;  // as the user gave --python, or "" for the default
};

// `conform validate`: the candidate harness on `adapter`, then check of its results.
struct ValidateOptions {
  CheckOptions check;          // check.candidate is set to the harness's output
  std::string python;          // the interpreter, resolved
  std::string python_default;  // where the default came from, for messages: "python3" or "$VERLCONF_PYTHON"
  std::string out;             // where the harness writes; "" for a temporary directory
  bool force = false;          // passed to the harness: replace the results --out holds
  int64_t call_timeout = 600;  // passed to the harness: seconds one adapter call may take (0: none)
  std::string argv0;           // to find the harness script in the runfiles
};

// The machine-readable reports' schema names and versions (`--format json`). The
// version changes whenever a key changes meaning or goes away; new keys may be added.
inline constexpr const char* kCheckSchema = "verlconf.check";
inline constexpr const char* kDriftSchema = "verlconf.drift";
inline constexpr int kSchemaVersion = 1;

// Why --impl cuda cannot run here: a build without device code (the host copies of the
// CUDA sources fill only the cuda-host slot), or no usable device; "" when it can. check
// and explore both answer such a run with it and exit kExitNothingCompared.
std::string CudaUnavailableReason();

int RunCheck(const CheckOptions& o, std::ostream& out);
int RunValidate(const ValidateOptions& v, std::ostream& out);
int RunList(const std::string& against, const std::string& function, bool json, std::ostream& out);
// `name`: "" for every function, else a function (NAME or FAMILY/NAME) or a family.
// `json`: the registry's stable machine form (all of it without a name); `pretty`
// indents it.
int RunSpec(const std::string& name, bool json, bool pretty, std::ostream& out);
// `report`: also write the drift as Markdown to that file ("" for none). `json`: stdout
// gets one JSON object (schema verlconf.drift) instead of the text report.
int RunDrift(const std::string& old_dir, const std::string& new_dir, const std::string& only, const std::string& report,
             bool json, std::ostream& out);

}  // namespace verlconf::tools
