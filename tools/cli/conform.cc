// conform: the verlconf command line. See README.md, "Set up and run".
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "oracle/core/errors.h"
#include "tools/cli/commands.h"
#include "tools/cli/conform_main.h"
#include "tools/cli/paths.h"
#include "tools/cli/report_file.h"
#include "tools/cli/version.h"
#include "tools/explore/explore_cmd.h"
#include "tools/h5/golden_set.h"

namespace {

using verlconf::BadInput;
namespace t = verlconf::tools;
namespace ve = verlconf::explore;

// One option of a command: what `conform CMD --help` lists, and what the parser accepts
// (a command takes exactly the options its table names, so the help cannot miss one).
struct Option {
  const char* name;
  const char* value;  // the value's placeholder, or nullptr for a flag
  const char* help;
};

struct Command {
  const char* name;
  const char* synopsis;  // after "conform NAME"
  const char* summary;   // one line, for `conform --help`
  const char* description;
  std::vector<Option> options;
  const char* exit_codes;
};

constexpr const char* kOnlyHelp =
    "select cases: FUNCTION, FAMILY, FAMILY/FUNCTION (advantage/gpg), FUNCTION/CASE or FAMILY/FUNCTION/CASE; "
    "repeatable or "
    "comma-separated; every name must match a golden case";

constexpr Option kBaselineOption = {
    "--baseline", "FILE",
    "accepted differences: a FAILED case whose every failing field FILE covers is BASELINED, not a failure"};
constexpr Option kWriteBaselineOption = {
    "--write-baseline", "FILE",
    "write this run's differences to FILE, one entry per function and field, with a placeholder reason to replace"};
constexpr Option kStrictBaselineOption = {"--strict-baseline", nullptr,
                                          "a baseline entry that matches no difference of the run fails it (exit 1)"};

#define kBaselineHelp                                                                                 \
  "\n\n"                                                                                              \
  "A baseline (--baseline FILE) lists accepted differences, one a line:\n"                            \
  "    FUNCTION  FIELD  [CASE-GLOB]  # reason\n"                                                      \
  "FUNCTION is NAME or FAMILY/NAME; FIELD a compared field (outputs/NAME, grads/NAME,\n"              \
  "metrics/NAME, vjps/NAME) or `error`, the only entry that covers a case failing on its error\n"     \
  "semantics; CASE-GLOB a shell glob on case names (default: every case). The reason is required,\n"  \
  "and the placeholder --write-baseline writes (TODO: ...) is refused until replaced. A baseline\n"   \
  "never makes a MISTRUSTED, UNSUPPORTED or SKIPPED case pass; an entry that matches no difference\n" \
  "of the run is reported as stale. A malformed file is exit 2, naming the file and line."

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"check",
       "[OPTIONS]",
       "compare an implementation (default: the oracle) or a candidate set with the goldens",
       "Compares an implementation (default: the oracle) or a candidate set (what\n"
       "tools/harness/run_candidate.py writes) with the golden cases, and prints one row per\n"
       "function: case outcomes, and per dtype the worst error as a multiple of the tolerance\n"
       "(err/tol; <= 1 passes, \"-\" where nothing was compared). Every failure is described\n"
       "below the table, with a repro command. With no command, conform runs check.\n\n"
       "A NaN or infinity in verl's result is a result: the implementation must give the same value\n"
       "there (a 0 where verl gives NaN FAILS). Agreeing on it alone proves nothing: a field with no\n"
       "finite reference element is MISTRUSTED when it agrees, and so is a case that agrees only on\n"
       "zeros or non-finite values." kBaselineHelp,
       {{"--against", "DIR", "the golden set to compare with (default: the bundled verl 0.9.1 set)"},
        {"--candidate", "FILE|DIR", "a candidate file or directory, judged as stored (instead of --impl)"},
        {"--impl", "oracle|cuda|cuda-host",
         "the implementation to run on the golden inputs (default: oracle); cuda computes in float32 only"},
        {"--only", "NAME,...", kOnlyHelp},
        {"--junit", "FILE", "also write JUnit XML (one test case per golden case) to FILE"},
        {"--report", "FILE.md", "also write the table, a function x field matrix and the failures as Markdown"},
        {"--format", "text|json",
         "what goes to stdout: the table (text, the default) or one JSON object (schema verlconf.check)"},
        {"--jobs", "N",
         "check N cases at a time (default 1; the oracle and candidates only); the output is the same, in the "
         "same order"},
        {"--require-all", nullptr, "any UNSUPPORTED or SKIPPED case, or UNSUPPORTED field, is a failure (exit 1)"},
        {"--show-unsupported", nullptr,
         "list functions the candidate does not provide at all in the table (default: one summary line)"},
        {"--verbose", nullptr, "describe every provided case that did not pass, and every partial one"},
        kBaselineOption,
        kWriteBaselineOption,
        kStrictBaselineOption,
        {"--help", nullptr, "this help"}},
       "exit codes: 0 every compared case passed (MISTRUSTED, UNSUPPORTED and SKIPPED are shown, not\n"
       "failures, unless --require-all; BASELINED is not a failure), 1 a conformance failure\n"
       "(--require-all: or anything UNSUPPORTED or SKIPPED; --strict-baseline: a stale baseline\n"
       "entry), 2 bad input or usage (a candidate that is a golden set itself\n"
       "included), 3 an internal error of conform, 4 nothing compared (no case PASSED or FAILED:\n"
       "every case SKIPPED, UNSUPPORTED or MISTRUSTED)"},
      {"validate",
       "--adapter ADAPTER [--python PY] [--out DIR] [OPTIONS]",
       "run the candidate harness on an adapter, then check its results: one command for CI",
       "Runs the candidate harness (tools/harness/run_candidate.py) on ADAPTER in the interpreter\n"
       "PY (default: $VERLCONF_PYTHON where set, as the verlconf wheel's entry point sets it to the\n"
       "interpreter it is installed in, else python3 on PATH), the one that has your framework,\n"
       "numpy and h5py, then\n"
       "checks what it wrote exactly as `conform check --candidate DIR` would: the same table,\n"
       "reports and exit codes. The results go to a temporary directory, removed afterwards,\n"
       "unless --out names where to keep them." kBaselineHelp,
       {{"--adapter", "ADAPTER", "a module path (my_adapter.py) or a bundled adapter name (numpy_example)"},
        {"--python", "PY", "the interpreter to run the harness in (default: $VERLCONF_PYTHON, else python3 on PATH)"},
        {"--out", "DIR", "keep the candidate files in DIR (the harness's rules: a new or result-free directory)"},
        {"--force", nullptr, "with --out: replace the results DIR holds"},
        {"--against", "DIR", "the golden set to run on and compare with (default: the bundled verl 0.9.1 set)"},
        {"--only", "NAME,...", kOnlyHelp},
        {"--jobs", "N", "run the harness in N processes and check N cases at a time (default 1)"},
        {"--call-timeout", "S",
         "seconds one adapter call may take (default 600; 0: no limit); past it the case is an adapter error naming "
         "its function and case, and the run goes on"},
        {"--junit", "FILE", "also write JUnit XML (one test case per golden case) to FILE"},
        {"--report", "FILE.md", "also write the table, a function x field matrix and the failures as Markdown"},
        {"--format", "text|json", "what goes to stdout: the table (text) or one JSON object (schema verlconf.check)"},
        {"--require-all", nullptr, "any UNSUPPORTED or SKIPPED case, or UNSUPPORTED field, is a failure (exit 1)"},
        {"--show-unsupported", nullptr, "list functions the adapter does not provide at all in the table"},
        {"--verbose", nullptr, "describe every provided case that did not pass, and every partial one"},
        kBaselineOption,
        kWriteBaselineOption,
        kStrictBaselineOption,
        {"--help", nullptr, "this help"}},
       "exit codes: 0 every compared case passed, as check's, 1 a conformance failure (or a stale\n"
       "baseline entry under --strict-baseline), 2 bad input or usage (a missing adapter, a --python\n"
       "that is not an executable or cannot import numpy, h5py or the adapter's framework, a harness\n"
       "that failed, a malformed baseline), 3 an internal error of conform, 4 nothing compared"},
      {"explore",
       "(--adapter ADAPTER [--python PY] | --impl IMPL) [OPTIONS]",
       "judge generated cases against the live oracle and shrink every difference",
       "Generates cases for every function the candidate provides with the registry's generators,\n"
       "in the regimes verl's users hit (1x1 to long rows, both dtypes, masked rows and batches,\n"
       "singleton and constant groups, log-ratios beyond the clamps, ratios on the thresholds, tied\n"
       "values, config keys drawn across their range and into values verl refuses), computes the\n"
       "reference with the oracle (or with verl itself: --reference verl), and judges the candidate\n"
       "with check's judge. Each distinct difference (function, field, how it fails) is shrunk to a\n"
       "minimal case: fewest rows, then tokens, then the simplest values, then config keys back at\n"
       "verl's defaults. --out DIR keeps each as a replayable fixture (DIR/cases, the reference, and\n"
       "DIR/candidate, the candidate's result) and a standalone Python repro (DIR/repro). The\n"
       "adapter runs in one persistent process per job (tools/harness/serve_adapter.py), loaded and\n"
       "called as the candidate harness does (docs/adapter-contract.md).\n\n"
       "A large run can be cut into parts run anywhere (python -m verlconf.ray_explore runs them on a\n"
       "Ray cluster): --shard I/N judges part I of N (every Nth case of the unsharded run, from case\n"
       "I) and its --format json carries the run; `conform explore merge [--out DIR] [--report F]\n"
       "[--junit F] [--format json] [--partial] SHARD.json...` reports the parts as the one run\n"
       "they are: the same counts and differences, each kept once with the smallest minimal case\n"
       "any part found. It refuses parts of different runs (seed, cases, candidate, revision) and\n"
       "names missing ones; --partial reports the parts given (exit 4 unless a difference shows).",
       {{"--adapter", "ADAPTER", "a module path (my_adapter.py) or a bundled adapter name (numpy_example)"},
        {"--python", "PY", "the interpreter that has the framework (default: python3 on PATH)"},
        {"--impl", "oracle|cuda|cuda-host",
         "explore one of conform's implementations instead of an adapter (cuda: float32 on a GPU)"},
        {"--reference", "oracle|verl",
         "the reference: the oracle (default) or verl through tools/adapters/verl_adapter.py in --python (a "
         "differential test of the oracle; the candidate is then --impl, default oracle)"},
        {"--cases", "N", "generated cases per function (default 100)"},
        {"--seed", "N", "the generation seed (default 0); the same seed gives the same cases"},
        {"--only", "NAME,...", "FUNCTION, FAMILY or FAMILY/FUNCTION, comma-separated or repeated"},
        {"--jobs", "N", "N adapter processes judging cases at a time (default 1); the output is the same"},
        {"--shrink-seconds", "S", "the time one difference may take to shrink (default 25)"},
        {"--call-timeout", "S",
         "seconds one adapter call may take (default 600; 0: no limit); past it the case is an adapter error naming "
         "its function and case, the adapter's process is restarted if it does not answer, and the run goes on"},
        {"--dp-cases", "N",
         "sharded cases per function that takes verl's global-batch arguments, for each of 2, 4 and 8 ranks "
         "(default: --cases / 10, at least 1; 0: none): the candidate per micro-batch, combined as DDP/FSDP combine "
         "gradients, against what verl's semantics give for that sharding"},
        kBaselineOption,
        {"--config", "KEY=V[,V...]",
         "fix a config key for every function that has it (repeatable): one value pins it, several restrict it "
         "to that set (a string key verl splits on commas itself, rollout_rs, takes the whole text as one value); "
         "no shrink step leaves them"},
        {"--out", "DIR", "write the minimal cases, the candidate's results and the Python repros to DIR"},
        {"--report", "FILE.md", "also write the table and the differences as Markdown"},
        {"--junit", "FILE", "also write JUnit XML (a test suite per row; a test case per difference)"},
        {"--format", "text|json", "what goes to stdout: the table (text) or one JSON object (schema verlconf.explore)"},
        {"--shard", "I/N", "judge part I (0 to N-1) of N of the run only, for `conform explore merge`"},
        {"--partial", nullptr, "explore merge: report the parts given where some are missing"},
        {"--help", nullptr, "this help"}},
       "exit codes: 0 no difference, 1 a difference, 2 bad input or usage (an adapter that cannot be\n"
       "loaded or breaks the contract), 3 an internal error of conform, 4 nothing compared"},
      {"list",
       "[FUNCTION | FAMILY/FUNCTION] [OPTIONS]",
       "functions, oracle/CUDA coverage, golden case counts, verl names not covered",
       "Lists every registry function: whether the oracle and CUDA implement it, its golden\n"
       "case counts per dtype (per mode, in brackets, for entries that stand for several of\n"
       "verl's modes), and the names verl's registries define that have no oracle entry.\n"
       "With FUNCTION: that function's golden cases, each with its dtype and why the catalogue\n"
       "has it (an unknown name exits 2 with the closest names).",
       {{"--against", "DIR", "the golden set to count (default: the bundled verl 0.9.1 set)"},
        {"--json", nullptr, "print the same as JSON (with FUNCTION: an array of its cases)"},
        {"--help", nullptr, "this help"}},
       "exit codes: 0 listed, 2 bad input or usage, 3 an internal error of conform"},
      {"spec",
       "[FAMILY/NAME | NAME] [OPTIONS]",
       "the function registry: inputs, config keys with verl's defaults, outputs, gradients",
       "Describes the registry functions: inputs (shape and role), config keys with verl's\n"
       "defaults, outputs, gradients, metrics, the verl function mirrored, and notes. NAME (or\n"
       "FAMILY/NAME where a name is in two families, e.g. advantage/gpg) shows one function;\n"
       "a family name shows that family's.",
       {{"--json", nullptr, "the whole registry as JSON, the stable machine form the harness reads"},
        {"--pretty", nullptr, "with --json: indented"},
        {"--help", nullptr, "this help"}},
       "exit codes: 0 printed, 2 bad input or usage (an unknown or ambiguous NAME), 3 an internal\n"
       "error of conform"},
      {"drift",
       "OLD_DIR NEW_DIR [OPTIONS]",
       "what changed between two golden sets",
       "Compares every case present in both golden sets with identical inputs, field by field,\n"
       "with the conformance tolerances: bitwise same, rounding, or changed, with the largest\n"
       "change as a multiple of the tolerance and in absolute and relative terms; then the\n"
       "cases whose error behaviour changed, fields and cases on one side only, and cases whose\n"
       "inputs differ. A set captured with one dtype only (root attribute dtypes) is compared\n"
       "on that dtype alone.",
       {{"--only", "NAME,...", kOnlyHelp},
        {"--report", "FILE.md", "also write the drift as Markdown (with verl's registry names gained or lost)"},
        {"--format", "text|json",
         "what goes to stdout: the text report (the default) or one JSON object "
         "(schema verlconf.drift)"},
        {"--help", nullptr, "this help"}},
       "exit codes: 0 no change beyond tolerance, 1 a change beyond tolerance or a field on one\n"
       "side only, 2 bad input or usage, 3 an internal error of conform, 4 nothing compared (no\n"
       "case in both sets with the same inputs)"},
      {"help",
       "[COMMAND]",
       "this overview, or one command's options",
       "Prints this overview, or with COMMAND the same as `conform COMMAND --help`.",
       {},
       "exit codes: 0 printed, 2 an unknown COMMAND"},
  };
  return commands;
}

const Command* FindCommand(const std::string& name) {
  for (const auto& c : Commands())
    if (name == c.name) return &c;
  return nullptr;
}

std::string Usage() {
  std::string s = "usage: conform [COMMAND] [OPTIONS]\n\ncommands:\n";
  for (const auto& c : Commands()) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-8s %s\n", c.name, c.summary);
    s += line;
  }
  s += "\nWith no command, conform runs `check` on the bundled goldens.\n"
       "`conform COMMAND --help` lists the command's options; `conform --version` the source\n"
       "revision and what produced the bundled goldens.\n\n"
       "exit codes: 0 passed, 1 conformance failure or drift (check --require-all: or anything\n"
       "UNSUPPORTED or SKIPPED), 2 bad input or usage, 3 internal error of conform, 4 nothing\n"
       "compared (no case PASSED or FAILED; for drift, no case in both sets with the same inputs)\n";
  return s;
}

// Wraps `text` to `width` columns, every line after the first indented by `indent`.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(pos, sp - pos);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = sp + 1;
  }
  return out + line;
}

std::string CommandHelp(const Command& c) {
  std::string s = std::string("usage: conform ") + c.name + " " + c.synopsis + "\n\n" + c.description + "\n";
  if (!c.options.empty()) s += "\noptions:\n";
  for (const auto& o : c.options) {
    const std::string head = std::string(o.name) + (o.value ? std::string(" ") + o.value : "");
    constexpr size_t kColumn = 32;
    s += "  " + head;
    s += head.size() + 2 < kColumn ? std::string(kColumn - 2 - head.size(), ' ') : "\n" + std::string(kColumn, ' ');
    s += Wrap(o.help, kColumn, 100) + "\n";
  }
  return s + "\n" + c.exit_codes + "\n";
}

struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // --name value
  std::vector<std::string> flags;                            // --name
};

// Options that take a value (in any command's table); everything else starting with --
// is a flag.
bool TakesValue(const std::string& o) {
  for (const auto& c : Commands())
    for (const auto& opt : c.options)
      if (o == opt.name && opt.value) return true;
  return false;
}

// Options given at most once: a second value would silently replace the first.
bool Repeatable(const std::string& o) { return o == "--only" || o == "--config"; }

// An empty value (`--candidate ""`, `--junit=`) or a missing one is a usage error, never
// "not given": the run would otherwise check or write something else than asked.
Args Parse(int argc, char** argv, int first) {
  Args a;
  auto add = [&](const std::string& name, const std::string& value) {
    if (value.empty()) throw BadInput("option " + name + ": an empty value");
    if (!Repeatable(name))
      for (const auto& [n, v] : a.options)
        if (n == name) throw BadInput("option " + name + " given twice ('" + v + "' and '" + value + "')");
    a.options.emplace_back(name, value);
  };
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      const size_t eq = s.find('=');
      if (eq != std::string::npos) {
        const std::string name = s.substr(0, eq);
        if (!TakesValue(name)) throw BadInput("option " + name + " takes no value (got '" + s + "')");
        add(name, s.substr(eq + 1));
      } else if (TakesValue(s)) {
        if (i + 1 >= argc) throw BadInput("option " + s + " needs a value");
        const std::string v = argv[++i];
        if (v.rfind("--", 0) == 0) throw BadInput("option " + s + " needs a value (got the option " + v + ")");
        add(s, v);
      } else {
        for (const auto& f : a.flags)
          if (f == s) throw BadInput("option " + s + " given twice");
        a.flags.push_back(s);
      }
    } else {
      if (s.empty()) throw BadInput("an empty argument");
      a.positional.push_back(s);
    }
  }
  return a;
}

// The command's table (Commands()) is what it accepts.
void Allow(const Args& a, size_t max_positional, const std::string& cmd) {
  const Command* c = FindCommand(cmd);
  auto ok = [&](const std::string& n) {
    for (const auto& o : c->options)
      if (n == o.name) return true;
    return false;
  };
  for (const auto& [n, v] : a.options)
    if (!ok(n)) throw BadInput(cmd + ": unknown option " + n + " (try: conform " + cmd + " --help)");
  for (const auto& f : a.flags)
    if (!ok(f)) throw BadInput(cmd + ": unknown option " + f + " (try: conform " + cmd + " --help)");
  if (a.positional.size() > max_positional) throw BadInput(cmd + ": unexpected argument '" + a.positional.back() + "'");
}

std::string Opt(const Args& a, const std::string& name, const std::string& fallback = "") {
  for (const auto& [n, val] : a.options)
    if (n == name) return val;
  return fallback;
}

// A repeatable option: every value, comma-joined ("--only a --only b" selects both).
std::string OptAll(const Args& a, const std::string& name) {
  std::string v;
  for (const auto& [n, val] : a.options)
    if (n == name) v += (v.empty() ? "" : ",") + val;
  return v;
}

// Report files are claimed once the options are parsed and before anything is run or
// written (tools/cli/report_file.h): an output that names any input of the run (`inputs`:
// files or directories of goldens, the adapter, the interpreter) or a file the run's --out
// directory keeps is refused, and nothing is removed.
void ClaimOutputs(const Args& a, const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& in : inputs)
    for (const auto& f : t::InputFiles(in)) files.push_back(f);
  const std::string out_dir = t::ResolveUserPath(Opt(a, "--out"));
  if (!out_dir.empty())
    for (auto& f : t::FilesUnder(out_dir)) files.push_back(std::move(f));
  // The baseline is an input too: a --write-baseline over it would remove it before it is read.
  const std::string baseline = t::ResolveUserPath(Opt(a, "--baseline"));
  if (!baseline.empty() && t::IsRegularFile(baseline)) files.push_back(baseline);
  for (const char* option : {"--report", "--junit", "--write-baseline"}) {
    const std::string v = Opt(a, option);
    if (!v.empty()) t::ClaimOutput(option, t::ResolveUserPath(v), files);
  }
}

bool Flag(const Args& a, const std::string& name) {
  for (const auto& f : a.flags)
    if (f == name) return true;
  return false;
}

// --format: text (the default) or json.
bool JsonFormat(const Args& a) {
  const std::string f = Opt(a, "--format", "text");
  if (f != "text" && f != "json") throw BadInput("--format: expected text or json, got '" + f + "'");
  return f == "json";
}

// --jobs N: a whole number from 1 to 256.
int Jobs(const Args& a) {
  const std::string v = Opt(a, "--jobs", "1");
  if (v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 1 || std::stoi(v) > 256)
    throw BadInput("--jobs: expected a whole number from 1 to 256, got '" + v + "'");
  return std::stoi(v);
}

// `conform --version`: the source revision, and what produced the bundled goldens (their
// files' root attributes: verl_version, torch_version, ...).
int PrintVersion(const char* argv0) {
  std::cout << "conform " << t::Revision() << "\n";
  // The revision alone is still worth printing where the goldens are not beside the binary.
  std::map<std::string, std::string> provenance;
  try {
    provenance = verlconf::fixtures::GoldenSet::Load(t::BundledGoldenDir(argv0)).Provenance();
  } catch (const BadInput& e) {
    std::cout << "bundled goldens: not found (" << e.what() << ")\n";
    return t::kExitOk;
  }
  std::cout << "bundled goldens: " << t::kBundledGoldens << "\n";
  for (const auto& [k, v] : provenance) std::cout << "  " << k << ": " << v << "\n";
  return t::kExitOk;
}

void BaselineOptions(const Args& a, t::CheckOptions& o) {
  o.baseline = t::ResolveUserPath(Opt(a, "--baseline"));
  o.write_baseline = t::ResolveUserPath(Opt(a, "--write-baseline"));
  o.strict_baseline = Flag(a, "--strict-baseline");
  if (o.strict_baseline && o.baseline.empty()) throw BadInput("--strict-baseline: give the --baseline it applies to");
  if (!o.baseline.empty() && !t::IsRegularFile(o.baseline))
    throw BadInput("--baseline " + Opt(a, "--baseline") + ": " + t::NotARegularFile(o.baseline));
}

// What check and validate share: the golden set, the outputs, the selection and the
// baseline, read the same way for both.
void JudgingOptions(const Args& a, const std::string& against, const std::string& bundled, t::CheckOptions& o) {
  o.against = against;
  o.against_given = !Opt(a, "--against").empty();
  o.bundled = bundled;
  o.junit = t::ResolveUserPath(Opt(a, "--junit"));
  o.report = t::ResolveUserPath(Opt(a, "--report"));
  o.only = OptAll(a, "--only");
  o.verbose = Flag(a, "--verbose");
  o.require_all = Flag(a, "--require-all");
  o.show_unsupported = Flag(a, "--show-unsupported");
  o.json = JsonFormat(a);
  o.jobs = Jobs(a);
  BaselineOptions(a, o);
}

// PY as given: a path (relative to where the user typed it), or a name looked up on PATH.
// `what` names where it came from in messages: the option, or the variable that set the default.
std::string Interpreter(const std::string& given, const std::string& what) {
  std::string path;
  if (given.find('/') != std::string::npos) {
    path = t::ResolveUserPath(given);
  } else {
    const char* env = std::getenv("PATH");
    std::string dirs = env ? env : "/usr/bin:/bin";
    for (size_t start = 0; path.empty() && start <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + given;
      if (t::IsRegularFile(candidate) && access(candidate.c_str(), X_OK) == 0) path = candidate;
      start = end + 1;
    }
    if (path.empty())
      throw BadInput(what + " " + given +
                     ": not found on PATH; pass --python with the path of the interpreter that has your framework");
  }
  if (!t::IsRegularFile(path) || access(path.c_str(), X_OK) != 0)
    throw BadInput(what + " " + given + ": not an executable regular file");
  return path;
}

// The interpreter that runs an adapter: --python, else $VERLCONF_PYTHON (the wheel's entry
// point sets it to the interpreter verlconf is installed in), else python3 on PATH.
std::string PythonOf(const Args& a) {
  const std::string given = Opt(a, "--python");
  const char* env_python = std::getenv("VERLCONF_PYTHON");
  if (!given.empty()) return Interpreter(given, "--python");
  if (env_python && *env_python) return Interpreter(env_python, "VERLCONF_PYTHON (the default --python)");
  return Interpreter("python3", "--python");
}

// The adapter's own file, when the user named one.
std::vector<std::string> AdapterInputs(const std::string& adapter, const std::string& python) {
  std::vector<std::string> in;
  if (!python.empty()) in.push_back(python);
  const std::string path = t::ResolveUserPath(adapter);
  if (!adapter.empty() && t::IsRegularFile(path)) in.push_back(path);
  return in;
}

int64_t Count(const Args& a, const std::string& name, int64_t fallback, int64_t lo, int64_t hi);

int Validate(const Args& a, const char* argv0, const std::string& against, const std::string& bundled) {
  Allow(a, 0, "validate");
  t::ValidateOptions v;
  t::CheckOptions& o = v.check;
  o.adapter = Opt(a, "--adapter");
  if (o.adapter.empty()) throw BadInput("validate: --adapter is required (try: conform validate --help)");
  const bool file = o.adapter.size() > 3 && o.adapter.compare(o.adapter.size() - 3, 3, ".py") == 0;
  if ((file || o.adapter.find('/') != std::string::npos) && !t::IsRegularFile(t::ResolveUserPath(o.adapter)))
    throw BadInput("--adapter " + o.adapter + ": " + t::NotARegularFile(t::ResolveUserPath(o.adapter)));
  o.python = Opt(a, "--python");
  v.python = PythonOf(a);
  const char* env_python = std::getenv("VERLCONF_PYTHON");
  v.python_default = env_python && *env_python ? "$VERLCONF_PYTHON" : "python3";
  v.out = t::ResolveUserPath(Opt(a, "--out"));
  v.call_timeout = Count(a, "--call-timeout", 600, 0, 86400);
  v.force = Flag(a, "--force");
  if (v.force && v.out.empty()) throw BadInput("--force: replaces the results of an --out directory; give --out");
  v.argv0 = argv0;
  std::vector<std::string> inputs = AdapterInputs(o.adapter, v.python);
  inputs.push_back(against);
  ClaimOutputs(a, inputs);
  JudgingOptions(a, against, bundled, o);
  return t::RunValidate(v, std::cout);
}

// A whole number in [lo, hi] given as option `name`.
int64_t Count(const Args& a, const std::string& name, int64_t fallback, int64_t lo, int64_t hi) {
  const std::string v = Opt(a, name, std::to_string(fallback));
  if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < lo ||
      std::stoll(v) > hi)
    throw BadInput(name + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                   ", got '" + v + "'");
  return std::stoll(v);
}

// --shard I/N: 0 <= I < N <= 100000.
std::pair<int64_t, int64_t> ShardOf(const std::string& v) {
  const size_t slash = v.find('/');
  auto whole = [](const std::string& x) {
    return !x.empty() && x.size() <= 6 && x.find_first_not_of("0123456789") == std::string::npos;
  };
  if (slash == std::string::npos || !whole(v.substr(0, slash)) || !whole(v.substr(slash + 1)))
    throw BadInput("--shard: expected I/N (part I of N, from 0), got '" + v + "'");
  const int64_t i = std::stoll(v.substr(0, slash)), n = std::stoll(v.substr(slash + 1));
  if (n < 1 || n > 100000 || i >= n)
    throw BadInput("--shard " + v + ": expected 0 <= I < N <= 100000 (parts are numbered from 0)");
  return {i, n};
}

int ExploreMerge(const Args& a, const char* argv0) {
  for (const auto& [n, v] : a.options)
    if (n != "--out" && n != "--report" && n != "--junit" && n != "--format")
      throw BadInput("explore merge: option " + n + " belongs to the shards' runs, not to their merge");
  for (const auto& f : a.flags)
    if (f != "--partial") throw BadInput("explore merge: unknown option " + f + " (try: conform explore --help)");
  if (a.positional.size() < 2) throw BadInput("explore merge: give the shards' JSON files (SHARD.json...)");
  ve::ExploreMergeCommand m;
  for (size_t k = 1; k < a.positional.size(); ++k) m.shards.push_back(t::ResolveUserPath(a.positional[k]));
  m.out = t::ResolveUserPath(Opt(a, "--out"));
  m.report = t::ResolveUserPath(Opt(a, "--report"));
  m.junit = t::ResolveUserPath(Opt(a, "--junit"));
  m.json = JsonFormat(a);
  m.partial = std::find(a.flags.begin(), a.flags.end(), "--partial") != a.flags.end();
  m.argv0 = argv0;
  m.display = t::CommandName();
  ClaimOutputs(a, m.shards);
  return ve::RunExploreMerge(m, std::cout);
}

int Explore(const Args& a, const char* argv0) {
  if (!a.positional.empty() && a.positional[0] == "merge") return ExploreMerge(a, argv0);
  Allow(a, 0, "explore");
  if (std::find(a.flags.begin(), a.flags.end(), "--partial") != a.flags.end())
    throw BadInput("explore: --partial belongs to explore merge");
  ve::ExploreCommand o;
  o.adapter = Opt(a, "--adapter");
  o.impl = Opt(a, "--impl");
  o.reference = Opt(a, "--reference", "oracle");
  if (o.reference != "oracle" && o.reference != "verl")
    throw BadInput("--reference " + o.reference + ": not one of oracle, verl");
  if (!o.adapter.empty() && !o.impl.empty()) throw BadInput("explore: give --adapter or --impl, not both");
  if (o.reference == "verl" && !o.adapter.empty())
    throw BadInput(
        "explore --reference verl: the candidate is one of conform's implementations (--impl, default "
        "oracle), not an adapter");
  if (o.reference == "verl" && o.impl.empty()) o.impl = "oracle";
  if (o.adapter.empty() && o.impl.empty())
    throw BadInput("explore: --adapter or --impl is required (try: conform explore --help)");
  if (o.reference == "oracle" && o.impl == "oracle")
    throw BadInput("explore --impl oracle: the oracle is the reference; compare it with verl (--reference verl)");
  const bool file = o.adapter.size() > 3 && o.adapter.compare(o.adapter.size() - 3, 3, ".py") == 0;
  if ((file || o.adapter.find('/') != std::string::npos) && !t::IsRegularFile(t::ResolveUserPath(o.adapter)))
    throw BadInput("--adapter " + o.adapter + ": " + t::NotARegularFile(t::ResolveUserPath(o.adapter)));
  const std::string py = Opt(a, "--python");
  if (!py.empty() && o.adapter.empty() && o.reference != "verl")
    throw BadInput("--python: runs an adapter; --impl " + o.impl + " runs in conform");
  if (!o.adapter.empty() || o.reference == "verl") o.python = PythonOf(a);
  o.out = t::ResolveUserPath(Opt(a, "--out"));
  o.report = t::ResolveUserPath(Opt(a, "--report"));
  o.junit = t::ResolveUserPath(Opt(a, "--junit"));
  if (const std::string shard = Opt(a, "--shard"); !shard.empty())
    std::tie(o.shard_index, o.shard_count) = ShardOf(shard);
  o.only = OptAll(a, "--only");
  o.baseline = t::ResolveUserPath(Opt(a, "--baseline"));
  if (!o.baseline.empty() && !t::IsRegularFile(o.baseline))
    throw BadInput("--baseline " + Opt(a, "--baseline") + ": " + t::NotARegularFile(o.baseline));
  o.json = JsonFormat(a);
  o.jobs = Jobs(a);
  if (o.jobs > 1 && o.adapter.empty() && o.reference != "verl" && o.impl != "oracle")
    throw BadInput("--jobs: the " + o.impl + " implementation runs one case at a time");
  o.seed = static_cast<uint64_t>(Count(a, "--seed", 0, 0, 999999999999));
  o.cases = Count(a, "--cases", 100, 1, 10000000);
  o.shrink_seconds = static_cast<double>(Count(a, "--shrink-seconds", 25, 0, 3600));
  o.call_timeout = Count(a, "--call-timeout", 600, 0, 86400);
  o.dp_cases = Count(a, "--dp-cases", std::max<int64_t>(1, o.cases / 10), 0, 10000000);
  for (const auto& [n, v] : a.options)
    if (n == "--config") o.config.push_back(v);
  o.argv0 = argv0;
  o.display = t::CommandName();
  ClaimOutputs(a, AdapterInputs(o.adapter, o.python));
  return ve::RunExploreCommand(o, std::cout);
}

int Main(int argc, char** argv) {
  t::InitRevision(argc > 0 ? argv[0] : nullptr);
  t::InitCommandName(argc > 0 ? argv[0] : nullptr);
  std::string cmd = argc > 1 ? argv[1] : "check";
  int first = 2;
  if (cmd == "--version") {
    if (argc > 2) throw BadInput("--version: takes no arguments");
    return PrintVersion(argv[0]);
  }
  if (cmd == "--help") cmd = "help";
  if (argc > 1 && std::strncmp(argv[1], "--", 2) == 0 && cmd != "help") {  // options straight after the binary: check
    cmd = "check";
    first = 1;
  }
  if (cmd == "help" || cmd == "-h") {
    if (argc > 3) throw BadInput("help: expected at most one COMMAND");
    if (argc == 3) {
      const Command* c = FindCommand(argv[2]);
      if (!c) throw BadInput("help: unknown command '" + std::string(argv[2]) + "' (try: conform help)");
      std::cout << CommandHelp(*c);
    } else {
      std::cout << Usage();
    }
    return t::kExitOk;
  }
  const Command* command = FindCommand(cmd);
  if (!command) throw BadInput("unknown command '" + cmd + "' (try: conform help)");
  // --help anywhere after the command wins over everything else on the line: it runs nothing.
  for (int i = first; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << CommandHelp(*command);
      return t::kExitOk;
    }
  const Args a = Parse(argc, argv, first);
  const std::string bundled = t::BundledGoldenDir(argv[0]);
  auto against = [&] {
    const std::string v = Opt(a, "--against");
    return v.empty() ? bundled : t::ResolveUserPath(v);
  };
  if (cmd == "check") {
    Allow(a, 0, "check");
    ClaimOutputs(a, {against(), t::ResolveUserPath(Opt(a, "--candidate"))});
    t::CheckOptions o;
    o.candidate = t::ResolveUserPath(Opt(a, "--candidate"));
    o.impl = Opt(a, "--impl", "oracle");
    JudgingOptions(a, against(), bundled, o);
    return t::RunCheck(o, std::cout);
  }
  if (cmd == "validate") return Validate(a, argv[0], against(), bundled);
  if (cmd == "explore") return Explore(a, argv[0]);
  if (cmd == "list") {
    Allow(a, 1, "list");
    return t::RunList(against(), a.positional.empty() ? "" : a.positional[0], Flag(a, "--json"), std::cout);
  }
  if (cmd == "spec") {
    Allow(a, 1, "spec");
    const bool pretty = Flag(a, "--pretty");
    if (pretty && !Flag(a, "--json")) throw BadInput("spec: --pretty formats the JSON; give --json too");
    return t::RunSpec(a.positional.empty() ? "" : a.positional[0], Flag(a, "--json"), pretty, std::cout);
  }
  // drift
  std::vector<std::string> dirs;
  for (const auto& p : a.positional) dirs.push_back(t::ResolveUserPath(p));
  Allow(a, 2, "drift");
  ClaimOutputs(a, dirs);
  if (a.positional.size() != 2) throw BadInput("drift: expected OLD_DIR NEW_DIR (try: conform drift --help)");
  return t::RunDrift(t::ResolveUserPath(a.positional[0]), t::ResolveUserPath(a.positional[1]), OptAll(a, "--only"),
                     t::ResolveUserPath(Opt(a, "--report")), JsonFormat(a), std::cout);
}

}  // namespace

// The results go to stdout: a run whose output was lost (a full disk, a closed
// pipe) must not exit as if it had been read.
bool StdoutWritten() {
  std::cout.flush();
  return std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
}

int verlconf::tools::ConformMain(int argc, char** argv) {
  try {
    const int code = Main(argc, argv);
    if (!StdoutWritten()) throw BadInput("cannot write the results to standard output");
    return code;
  } catch (const BadInput& e) {
    t::ForgetClaimedOutputs();
    std::cout.flush();
    std::cerr << "conform: error: " << e.what() << "\n";
    return t::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a bug in conform; exit 3 so it is never mistaken for a pass
    // or for a bad-input report.
    t::ForgetClaimedOutputs();
    std::cout.flush();
    std::cerr << "conform: internal error: " << e.what() << "\n";
    return t::kExitInternal;
  }
}
