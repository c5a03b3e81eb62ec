// conform: the verlconf command line. See README.md, "Using conform".
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "tools/commands.h"
#include "tools/paths.h"
#include "tools/report_file.h"

namespace {

constexpr const char* kUsage = R"(usage: conform [COMMAND] [OPTIONS]

commands:
  check   [--against DIR] [--candidate FILE|DIR] [--impl oracle|cuda] [--junit FILE]
          [--report FILE.md] [--only NAME,...] [--require-all] [--verbose]
          compare an implementation (default: the oracle) or a candidate file with
          the goldens in DIR (default: the bundled verl 0.9.1 set)
  list    [--against DIR] [--json]   functions, golden case counts, verl names not covered
  spec    --json                     the function registry as JSON
  drift   OLD_DIR NEW_DIR [--only NAME,...] [--report FILE.md]
          what changed between two golden sets (exit 1 when something changed)

--only NAME: FUNCTION, FAMILY/FUNCTION, FUNCTION/CASE or FAMILY/FUNCTION/CASE;
repeatable or comma-separated; every name must match something.
With no command, conform runs `check` on the bundled goldens.
exit codes: 0 passed, 1 conformance failure or drift (--require-all: or anything
UNSUPPORTED), 2 bad input or usage, 3 internal error of conform
)";

using verlconf::BadInput;
namespace t = verlconf::tools;

struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // --name value
  std::vector<std::string> flags;                            // --name
};

// Options that take a value; everything else starting with -- is a flag.
bool TakesValue(const std::string& o) {
  for (const char* v : {"--against", "--candidate", "--impl", "--junit", "--only", "--report"})
    if (o == v) return true;
  return false;
}

// Options given at most once: a second value would silently replace the first.
bool Repeatable(const std::string& o) { return o == "--only"; }

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

void Allow(const Args& a, const std::vector<std::string>& allowed, size_t max_positional, const std::string& cmd) {
  auto ok = [&](const std::string& n) {
    for (const auto& x : allowed)
      if (x == n) return true;
    return false;
  };
  for (const auto& [n, v] : a.options)
    if (!ok(n)) throw BadInput(cmd + ": unknown option " + n);
  for (const auto& f : a.flags)
    if (!ok(f)) throw BadInput(cmd + ": unknown option " + f);
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

// Report files are claimed before anything else can fail (tools/report_file.h), so that
// a run that exits 2 leaves none behind, stale or new.
void ClaimOutputs(const Args& a, const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& in : inputs)
    for (const auto& f : t::InputFiles(in)) files.push_back(f);
  for (const char* option : {"--report", "--junit"}) {
    const std::string v = Opt(a, option);
    if (!v.empty()) t::ClaimOutput(option, t::ResolveUserPath(v), files);
  }
}

bool Flag(const Args& a, const std::string& name) {
  for (const auto& f : a.flags)
    if (f == name) return true;
  return false;
}

int Main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "check";
  int first = 2;
  if (argc > 1 && std::strncmp(argv[1], "--", 2) == 0) {  // options straight after the binary: check
    cmd = "check";
    first = 1;
  }
  if (cmd == "help" || cmd == "-h" || cmd == "--help") {
    std::cout << kUsage;
    return t::kExitOk;
  }
  const Args a = Parse(argc, argv, first);
  const std::string bundled = t::BundledGoldenDir(argv[0]);
  auto against = [&] {
    const std::string v = Opt(a, "--against");
    return v.empty() ? bundled : t::ResolveUserPath(v);
  };
  if (cmd == "check") {
    ClaimOutputs(a, {against(), t::ResolveUserPath(Opt(a, "--candidate"))});
    Allow(a, {"--against", "--candidate", "--impl", "--junit", "--report", "--only", "--require-all", "--verbose"}, 0,
          "check");
    t::CheckOptions o;
    o.against = against();
    o.against_given = !Opt(a, "--against").empty();
    o.candidate = t::ResolveUserPath(Opt(a, "--candidate"));
    o.impl = Opt(a, "--impl", "oracle");
    o.junit = t::ResolveUserPath(Opt(a, "--junit"));
    o.report = t::ResolveUserPath(Opt(a, "--report"));
    o.only = OptAll(a, "--only");
    o.verbose = Flag(a, "--verbose");
    o.require_all = Flag(a, "--require-all");
    return t::RunCheck(o, std::cout);
  }
  if (cmd == "list") {
    Allow(a, {"--against", "--json"}, 0, "list");
    return t::RunList(against(), Flag(a, "--json"), std::cout);
  }
  if (cmd == "spec") {
    Allow(a, {"--json"}, 0, "spec");
    return t::RunSpec(std::cout);
  }
  if (cmd == "drift") {
    std::vector<std::string> dirs;
    for (const auto& p : a.positional) dirs.push_back(t::ResolveUserPath(p));
    ClaimOutputs(a, dirs);
    Allow(a, {"--only", "--report"}, 2, "drift");
    if (a.positional.size() != 2) throw BadInput("drift: expected OLD_DIR NEW_DIR");
    return t::RunDrift(t::ResolveUserPath(a.positional[0]), t::ResolveUserPath(a.positional[1]), OptAll(a, "--only"),
                       t::ResolveUserPath(Opt(a, "--report")), std::cout);
  }
  throw BadInput("unknown command '" + cmd + "' (try: conform help)");
}

}  // namespace

// The results go to stdout: a run whose output was lost (a full disk, a closed
// pipe) must not exit as if it had been read.
bool StdoutWritten() {
  std::cout.flush();
  return std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
}

int main(int argc, char** argv) {
  try {
    const int code = Main(argc, argv);
    if (!StdoutWritten()) throw BadInput("cannot write the results to standard output");
    return code;
  } catch (const BadInput& e) {
    t::DiscardClaimedOutputs();
    std::cout.flush();
    std::cerr << "conform: error: " << e.what() << "\n";
    return t::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a bug in conform; exit 3 so it is never mistaken for a pass
    // or for a bad-input report.
    t::DiscardClaimedOutputs();
    std::cout.flush();
    std::cerr << "conform: internal error: " << e.what() << "\n";
    return t::kExitInternal;
  }
}
