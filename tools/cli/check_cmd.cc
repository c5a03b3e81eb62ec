// `conform check`: the conformance table of an implementation or a candidate set
// against a golden set.
#include <algorithm>
#include <atomic>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <sys/stat.h>
#include <thread>

#include "cuda_impl/core/device.h"
#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/judge/candidate.h"
#include "oracle/judge/grade.h"
#include "oracle/judge/judge.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/cli/baseline.h"
#include "tools/cli/check_dp.h"
#include "tools/cli/check_report.h"
#include "tools/cli/commands.h"
#include "tools/cli/junit.h"
#include "tools/cli/paths.h"
#include "tools/cli/progress.h"
#include "tools/cli/report_file.h"
#include "tools/cli/selection.h"
#include "tools/cli/version.h"
#include "tools/h5/golden_set.h"

namespace verlconf::tools {
namespace {

std::string Repro(const CheckOptions& o, const Case& c) {
  if (!o.adapter.empty()) {
    std::string r = CommandName() + " validate --adapter " + o.adapter;
    if (!o.python.empty()) r += " --python " + o.python;
    if (o.against_given) r += " --against " + o.against;
    return r + " --only " + c.function + "/" + c.name;
  }
  std::string r = CommandName() + " check";
  if (o.against_given) r += " --against " + o.against;
  if (!o.candidate.empty()) r += " --candidate " + o.candidate;
  if (o.impl != "oracle") r += " --impl " + o.impl;
  return r + " --only " + c.function + "/" + c.name;
}

CaseReport Unsupported(const Case& c, const std::string& why) {
  return CaseReport::NotCompared(c, Outcome::kUnsupported, why);
}

CaseReport Skipped(const Case& c, const std::string& why) { return CaseReport::NotCompared(c, Outcome::kSkipped, why); }

// body(k) for k in [0, n), on `jobs` threads, the reports in k's order: exactly what a
// loop over k gives. An item that throws stops the run as in that loop: the exception of
// the first such item in k's order is rethrown (later items may have run; their results
// are dropped). nullopt: the item selects no case.
template <class Body>
std::vector<CaseReport> InOrder(size_t n, int jobs, const Body& body) {
  std::vector<std::optional<CaseReport>> results(n);
  if (jobs <= 1) {
    for (size_t k = 0; k < n; ++k) results[k] = body(k);
  } else {
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t k; (k = next.fetch_add(1)) < n;) {
        try {
          results[k] = body(k);
        } catch (...) {
          errors[k] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs && static_cast<size_t>(t) < n; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  std::vector<CaseReport> out;
  for (auto& r : results)
    if (r) out.push_back(std::move(*r));
  return out;
}

// A candidate set judges every golden case of the functions it is responsible for: a
// directory (what the harness writes) every function of the golden set, a single file
// the functions of its family, and --only whatever it names.
std::vector<CaseReport> CheckCandidateSet(const CheckOptions& o, const fixtures::GoldenSet& golden,
                                          const Selection& only, std::map<std::string, std::string>& candidate_attrs) {
  const bool dir = IsDirectory(o.candidate);
  const fixtures::GoldenSet cand =
      dir ? fixtures::GoldenSet::Load(o.candidate) : fixtures::GoldenSet::LoadFile(o.candidate);
  fixtures::RequireCandidateRoots(cand, golden);
  // The harness copies the goldens' root into the candidate's: only what differs is the candidate's own.
  const auto golden_attrs = golden.Provenance();
  for (const auto& [k, v] : cand.Provenance()) {
    auto g = golden_attrs.find(k);
    if (g == golden_attrs.end() || g->second != v) candidate_attrs[k] = v;
  }
  if (cand.index.empty())
    throw BadInput(o.candidate + ": no cases: the candidate " + (dir ? "files hold" : "file holds") +
                   " no function groups (an adapter that provides nothing?)");
  std::set<std::string> families;
  for (const auto& f : (dir ? golden.files : cand.files)) families.insert(f.family);
  std::set<std::pair<std::string, std::string>> provided;  // (family, function) with a candidate case
  for (const auto& [key, c] : cand.index) provided.insert({c->family, c->function});

  // The calls of a sharded golden case (check_dp.h) are judged together, as dp-invariance rows.
  std::vector<std::pair<fixtures::GoldenSet::Key, const Case*>> cases;
  std::vector<const Case*> dp_calls;
  for (const auto& [key, c] : cand.index) {
    const auto call = golden.index.count(key) ? std::nullopt : ParseDpCallName(c->name);
    if (call && golden.index.count({c->family, c->function, call->case_name}))
      dp_calls.push_back(c);
    else
      cases.emplace_back(key, c);
  }
  const std::string verl = golden.VerlVersion();
  Progress progress(cases.size());
  std::mutex progress_mutex;
  std::vector<CaseReport> reports = InOrder(cases.size(), o.jobs, [&](size_t k) -> std::optional<CaseReport> {
    const auto& [key, c] = cases[k];
    {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress.Step(c->function + "/" + c->name);
    }
    auto g = golden.index.find(key);
    if (g == golden.index.end()) throw BadInput(c->Where() + ": no golden case of that name in " + o.against);
    if (!only.Selects(*c)) return std::nullopt;
    const FunctionSpec* spec = SpecFor(*c);
    if (!spec) throw BadInput(c->Where() + ": unknown function '" + c->function + "'");
    CaseReport r = CheckCandidate(*spec, *g->second, *c, verl);
    r.repro = Repro(o, *c);
    return r;
  });
  // Golden cases the candidate left out are not passes.
  for (const auto& [key, g] : golden.index) {
    if (cand.index.count(key) || !only.Selects(*g) || (only.All() && !families.count(g->family))) continue;
    if (const FunctionSpec* spec = SpecFor(*g)) ValidateGolden(*spec, *g, verl);
    const bool any = provided.count({g->family, g->function}) > 0;
    reports.push_back(NotProvided(
        *g, any ? "missing from the candidate set" : "the candidate set has no cases of '" + g->function + "'"));
    reports.back().not_provided = true;
    reports.back().repro = Repro(o, *g);
  }
  std::set<std::string> dp_families = families;
  if (!only.All())
    for (const auto& f : golden.files) dp_families.insert(f.family);
  for (CaseReport& r :
       CheckDpInvariance(golden, dp_calls, only, dp_families, [&](const Case& g) { return Repro(o, g); }))
    reports.push_back(std::move(r));
  return reports;
}

std::vector<CaseReport> CheckImplementationSet(const CheckOptions& o, const fixtures::GoldenSet& golden,
                                               const Selection& only) {
  const Impl impl = *ParseImpl(o.impl);
  const std::string device_unavailable = impl == Impl::kCuda ? CudaUnavailableReason() : "";
  const std::vector<const Case*> cases = golden.Cases();
  const std::string verl = golden.VerlVersion();
  Progress progress(cases.size());
  std::mutex progress_mutex;
  return InOrder(cases.size(), o.jobs, [&](size_t k) -> std::optional<CaseReport> {
    const Case* g = cases[k];
    {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress.Step(g->function + "/" + g->name);
    }
    if (!only.Selects(*g)) return std::nullopt;
    const FunctionSpec* spec = SpecFor(*g);
    CaseReport r;
    const bool absent = !spec || !spec->Implementation(impl);
    if (!spec) {
      r = Unsupported(*g, "no registry entry for '" + g->function + "'");
    } else if (ValidateGolden(*spec, *g, verl); !device_unavailable.empty()) {
      r = Skipped(*g, device_unavailable);
    } else if (const auto dtype = ImplDType(impl); dtype && *dtype != g->dtype) {
      r = Skipped(*g, std::string(ImplName(impl)) + " computes in " + DTypeName(*dtype) + " only; " +
                          DTypeName(g->dtype) + " cases are not compared");
    } else if (const RunFn* run = spec->Implementation(impl)) {
      r = CheckImplementation(*spec, *g, *run, verl);
      // The built-in implementations mirror one verl release: against another, a
      // difference is the releases' before it is anything else.
      if (r.outcome == Outcome::kFailed && verl != kOracleVerlVersion)
        r.detail += std::string("; the goldens are verl ") + verl + "'s and " + ImplName(impl) + " mirrors verl " +
                    kOracleVerlVersion + ": a difference between the releases (see conform drift)";
    } else {
      r = Unsupported(*g, std::string("no ") + ImplName(impl) + " implementation of " + g->family + "/" + g->function);
    }
    r.repro = Repro(o, *g);
    r.not_provided = absent;
    return r;
  });
}

// A file's identity, through links and `..` alike; nullopt when it cannot be stat'ed.
std::optional<std::pair<dev_t, ino_t>> FileId(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

// A candidate that is a golden set's own files (the --against set, or the bundled one)
// compares the goldens with themselves: perfect agreement that says nothing about any
// implementation. Files are compared by identity; a copy of the goldens is a candidate
// like any other, and the one-line notice above the table says when a candidate
// reproduces the reference bit for bit.
void RefuseGoldenAsCandidate(const CheckOptions& o) {
  std::map<std::pair<dev_t, ino_t>, std::string> golden;  // file -> its golden set
  for (const std::string& dir : {o.against, o.bundled})
    if (!dir.empty() && IsDirectory(dir))
      for (const auto& f : InputFiles(dir))
        if (const auto id = FileId(f)) golden.emplace(*id, dir);
  for (const auto& f : InputFiles(o.candidate)) {
    const auto id = FileId(f);
    auto it = id ? golden.find(*id) : golden.end();
    if (it != golden.end())
      throw BadInput("--candidate: " + o.candidate + " is " + (f == o.candidate ? "a file of " : "") +
                     "the golden set " + it->second +
                     " itself: a candidate is what an implementation computed (tools/harness/run_candidate.py "
                     "writes one), judged against the goldens");
  }
}

// `"baseline": {...}`, the key and its object, for the end of check's JSON: the file, its
// entries, the cases it accepted and the stale entries.
std::string BaselineJson(const Baseline& b, const std::vector<CaseReport>& reports,
                         const std::vector<const BaselineEntry*>& stale) {
  int baselined = 0;
  for (const auto& r : reports) baselined += r.outcome == Outcome::kBaselined;
  JsonWriter j;
  j.BeginObject();
  j.Key("file").String(b.file);
  j.Key("entries").Int(static_cast<int64_t>(b.entries.size()));
  j.Key("baselined_cases").Int(baselined);
  j.Key("stale").BeginArray();
  for (const BaselineEntry* e : stale) {
    j.BeginObject();
    j.Key("line").Int(e->line);
    j.Key("function").String(e->family.empty() ? e->function : e->family + "/" + e->function);
    j.Key("field").String(e->field);
    j.Key("cases").String(e->case_glob);
    j.Key("reason").String(e->reason);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return "\"baseline\":" + j.str();
}

}  // namespace

std::string CudaUnavailableReason() {
  bool device_code = false;
  for (const FunctionSpec& s : Registry()) device_code |= s.Implementation(Impl::kCuda) != nullptr;
  if (!device_code)
    return "this conform was built without device code (its CUDA entries are the host copies: --impl cuda-host); "
           "tools/gpu:verlconf_gpu runs --impl cuda on a GPU (tools/gpu/gpu_check.sh)";
  return cuda::DeviceUnavailableReason();
}

int RunCheck(const CheckOptions& o, std::ostream& out) {
  if (!ParseImpl(o.impl)) {
    std::string names;
    for (Impl impl : kImpls) names += std::string(names.empty() ? "" : " or ") + ImplName(impl);
    throw BadInput("--impl: expected " + names + ", got '" + o.impl + "'");
  }
  if (!o.candidate.empty() && o.impl != "oracle")
    throw BadInput("--impl and --candidate: a candidate file is checked as it is; give one of them");
  // The CUDA implementation shares its device (and cuda-host its workspace plumbing)
  // between calls: it is checked one case at a time.
  if (o.jobs > 1 && o.impl != "oracle")
    throw BadInput("--jobs: the " + o.impl +
                   " implementation is checked one case at a time; --jobs is for the "
                   "oracle and candidates");
  if (!o.candidate.empty()) RefuseGoldenAsCandidate(o);
  const Selection only(o.only);
  const fixtures::GoldenSet golden = fixtures::GoldenSet::Load(o.against);
  only.RequireResolved(golden.Cases(), o.against);
  Provenance provenance{o.against, golden.Provenance(), o.candidate.empty() ? o.impl : o.candidate, {}};
  if (o.candidate.empty()) provenance.candidate_attrs["producer"] = "verlconf, built-in " + o.impl + " implementation";
  // Read before anything runs: a malformed baseline is exit 2 without a run.
  std::optional<Baseline> baseline;
  if (!o.baseline.empty()) baseline = LoadBaseline(o.baseline);
  std::vector<CaseReport> reports = o.candidate.empty()
                                        ? CheckImplementationSet(o, golden, only)
                                        : CheckCandidateSet(o, golden, only, provenance.candidate_attrs);
  if (reports.empty()) throw BadInput(o.against + ": no cases to check");
  std::vector<const BaselineEntry*> stale;
  if (baseline) {
    ApplyBaseline(*baseline, reports);
    stale = baseline->Stale(reports);
  }

  const std::string what = !o.adapter.empty() ? "adapter " + o.adapter : o.candidate.empty() ? o.impl : o.candidate;
  bool failed = false;
  int compared = 0, skipped = 0;
  for (const auto& r : reports) {
    failed |= r.outcome == Outcome::kFailed;
    compared += r.outcome == Outcome::kPassed || r.outcome == Outcome::kFailed || r.outcome == Outcome::kBaselined;
    skipped += r.outcome == Outcome::kSkipped;
  }
  const Coverage coverage = CountCoverage(reports);
  const bool incomplete = o.require_all && (coverage.unsupported_cases || coverage.unsupported_fields || skipped);
  // A run that showed nothing to conform or to differ is not green: a CI job that lost its
  // GPU skips every case, and a candidate that declines everything compares nothing.
  const bool strict_failure = o.strict_baseline && !stale.empty();
  const int code = failed || incomplete || strict_failure ? kExitFailure
                   : compared == 0                        ? kExitNothingCompared
                                                          : kExitOk;
  int identical_cases = 0;
  const bool identical = BitForBit(reports, identical_cases);
  if (o.json) {
    std::string json = CheckJson(reports, provenance, code);
    if (baseline) json = json.substr(0, json.rfind('}')) + "," + BaselineJson(*baseline, reports, stale) + "}";
    out << json << "\n";
  } else {
    out << "conform " << (o.adapter.empty() ? "check" : "validate") << ": " << what << " against " << o.against
        << " (verl " << golden.VerlVersion() << ")\n";
    if (o.impl == "cuda" && o.candidate.empty() && !CudaUnavailableReason().empty())
      out << "CUDA: " << CudaUnavailableReason() << "\n";
    if (identical)
      out << "every compared field of the " << identical_cases
          << " compared case(s) is the reference's bit for bit (verl itself through the harness, or a copy of the "
             "goldens)\n";
    PrintTable(reports, out, o.show_unsupported);
    std::set<std::pair<std::string, std::string>> hidden;
    if (!o.show_unsupported)
      for (const auto& key : FunctionsNotProvided(reports)) hidden.insert(key);
    // Material failures first, then small, then rounding-level ones, each in the order
    // the cases were checked: the few that matter are not buried under the many that do not.
    std::vector<const CaseReport*> shown;
    for (const auto& r : reports) {
      // --verbose is about what was provided; a function not provided at all is the
      // table's summary line (or its row, with --show-unsupported), not one block per case.
      const bool quiet = hidden.count({r.function, r.family}) > 0;
      const bool show =
          r.outcome == Outcome::kFailed || (o.verbose && !quiet && (r.outcome != Outcome::kPassed || r.partial));
      if (show) shown.push_back(&r);
    }
    std::stable_sort(shown.begin(), shown.end(),
                     [](const CaseReport* a, const CaseReport* b) { return CaseGrade(*a) > CaseGrade(*b); });
    for (const CaseReport* r : shown) out << "\n" << r->Describe() << "\n";
    if (baseline) {
      int covered = 0;
      for (const auto& r : reports) covered += r.outcome == Outcome::kBaselined;
      out << "\nbaseline " << o.baseline << ": " << baseline->entries.size() << " entr"
          << (baseline->entries.size() == 1 ? "y" : "ies") << ", " << covered << " case(s) BASELINED, " << stale.size()
          << " stale\n";
      for (const BaselineEntry* e : stale)
        out << "  stale: " << e->file << ":" << e->line << ": " << (e->family.empty() ? "" : e->family + "/")
            << e->function << " " << e->field << " " << e->case_glob << ": no difference of this run matches it"
            << (o.strict_baseline ? " (--strict-baseline: a failure)" : " (remove it, or --strict-baseline fails)")
            << "\n";
    }
  }
  // The table is the result: if it did not reach stdout, no report claims otherwise.
  out.flush();
  if (!out) throw BadInput("cannot write the results to standard output");
  if (!o.report.empty())
    WriteFileAtomically(o.report, MarkdownReport("conform check: " + what + " against verl " + golden.VerlVersion(),
                                                 reports, provenance));
  if (!o.write_baseline.empty())
    WriteFileAtomically(o.write_baseline, BaselineText(reports, baseline ? &*baseline : nullptr));
  if (!o.junit.empty())
    WriteJunit(o.junit, "conform." + (o.candidate.empty() ? o.impl : std::string("candidate")), reports);
  if (incomplete)
    std::cerr << "conform: --require-all: " << coverage.unsupported_cases << " case(s) and "
              << coverage.unsupported_fields << " field(s) not provided (UNSUPPORTED)"
              << (skipped ? ", " + std::to_string(skipped) + " case(s) SKIPPED" : std::string()) << "\n";
  if (o.json && !stale.empty())
    std::cerr << "conform: baseline: " << stale.size() << " stale entr" << (stale.size() == 1 ? "y" : "ies") << " in "
              << o.baseline << "\n";
  if (code == kExitNothingCompared)
    std::cerr << "conform: nothing compared: no case PASSED or FAILED (" << Totals(reports) << ")\n";
  return code;
}

}  // namespace verlconf::tools
