// conform: the verlconf command line. See README.md, "Using conform".
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "oracle/errors.h"
#include "tools/commands.h"
#include "tools/paths.h"

namespace {

constexpr const char* kUsage = R"(usage: conform [COMMAND] [OPTIONS]

commands:
  check   [--against DIR] [--candidate FILE|DIR] [--impl oracle|cuda] [--junit FILE]
          [--report FILE.md] [--only FUNCTION[/CASE],...] [--verbose]
          compare an implementation (default: the oracle) or a candidate file with
          the goldens in DIR (default: the bundled verl 0.9.1 set)
  list    [--against DIR] [--json]   functions, golden case counts, verl names not covered
  spec    --json                     the function registry as JSON
  drift   OLD_DIR NEW_DIR [--only FUNCTION,...] [--report FILE.md]
          what changed between two golden sets (exit 1 when something changed)

With no command, conform runs `check` on the bundled goldens.
exit codes: 0 passed, 1 conformance failure or drift, 2 bad input or usage
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

Args Parse(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      const size_t eq = s.find('=');
      if (eq != std::string::npos) {
        a.options.emplace_back(s.substr(0, eq), s.substr(eq + 1));
      } else if (TakesValue(s)) {
        if (i + 1 >= argc) throw BadInput("option " + s + " needs a value");
        a.options.emplace_back(s, argv[++i]);
      } else {
        a.flags.push_back(s);
      }
    } else {
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
  std::string v = fallback;
  for (const auto& [n, val] : a.options)
    if (n == name) v = val;
  return v;
}

// A repeatable option: every value, comma-joined ("--only a --only b" selects both).
std::string OptAll(const Args& a, const std::string& name) {
  std::string v;
  for (const auto& [n, val] : a.options)
    if (n == name) v += (v.empty() ? "" : ",") + val;
  return v;
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
    Allow(a, {"--against", "--candidate", "--impl", "--junit", "--report", "--only", "--verbose"}, 0, "check");
    t::CheckOptions o;
    o.against = against();
    o.against_given = !Opt(a, "--against").empty();
    o.candidate = t::ResolveUserPath(Opt(a, "--candidate"));
    o.impl = Opt(a, "--impl", "oracle");
    o.junit = t::ResolveUserPath(Opt(a, "--junit"));
    o.report = t::ResolveUserPath(Opt(a, "--report"));
    o.only = OptAll(a, "--only");
    o.verbose = Flag(a, "--verbose");
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
    Allow(a, {"--only", "--report"}, 2, "drift");
    if (a.positional.size() != 2) throw BadInput("drift: expected OLD_DIR NEW_DIR");
    return t::RunDrift(t::ResolveUserPath(a.positional[0]), t::ResolveUserPath(a.positional[1]), OptAll(a, "--only"),
                       t::ResolveUserPath(Opt(a, "--report")), std::cout);
  }
  throw BadInput("unknown command '" + cmd + "' (try: conform help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const BadInput& e) {
    std::cout.flush();
    std::cerr << "conform: error: " << e.what() << "\n";
    return t::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a bug in conform; exit 3 so it is never mistaken for a pass
    // or for a bad-input report.
    std::cout.flush();
    std::cerr << "conform: internal error: " << e.what() << "\n";
    return t::kExitInternal;
  }
}
