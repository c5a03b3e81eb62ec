// Exploration: generated cases judged against a live reference, and every distinct
// difference shrunk to a minimal case. The reference is the oracle, or verl itself through
// its adapter (a differential test of the oracle); the candidate is an adapter in its own
// interpreter, or one of conform's implementations in process. Judging is the judge's, as
// for `conform check`: the same tolerances, boundary rules and outcomes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/explore/golden.h"
#include "oracle/explore/regimes.h"
#include "oracle/judge/case_report.h"
#include "tools/cli/baseline.h"
#include "tools/explore/adapter_process.h"

namespace verlconf::explore {

struct EngineOptions {
  uint64_t seed = 0;
  int64_t cases = 100;  // per function
  int jobs = 1;
  std::optional<AdapterOptions> candidate;  // an adapter; else `impl`
  Impl impl = Impl::kOracle;
  std::optional<AdapterOptions> reference;  // verl's adapter; else the oracle
  double shrink_seconds = 25;
  // Sharded cases per function that takes verl's global-batch arguments (dp-invariance):
  // the case split over k ranks and micro-batches as verl's trainer splits it, the
  // candidate called once per micro-batch, combined as DDP/FSDP combine gradients, and
  // judged against what verl's semantics give for that sharding. 0: none.
  int64_t dp_cases = 0;
  // Accepted differences (conform --baseline): a generated case whose every failing field
  // (or cause group of it) an entry covers is BASELINED, not a difference to shrink.
  tools::Baseline* baseline = nullptr;
  // Config keys the user fixed (--config KEY=V or KEY=V1,V2): every generated case of a
  // function with the key draws it from these values, and no shrink step leaves them.
  ConfigPins pins;
  // This run judges part `shard_index` of `shard_count` of the case stream: the items whose
  // index in the unsharded run's order is shard_index modulo shard_count. Every row is
  // spread over every part, so the parts stay balanced whatever the functions cost.
  int64_t shard_index = 0, shard_count = 1;
};

// One side of a run as a worker holds it: its own adapter processes.
class Worker {
 public:
  explicit Worker(const EngineOptions& o);

  // The golden for `c` (inputs, config, projections): the reference's result, or nullopt
  // with the reason where the reference refuses or declines the inputs. A reference
  // adapter's recorded inputs (verl's own pick in clip_cov and kl_cov) join the golden's
  // inputs, replacing any the case had, and their names go to `recorded`: the candidate
  // is judged on verl's choice, as on the captured goldens.
  std::optional<Case> Golden(const FunctionSpec& spec, const Case& c, std::string* refused,
                             std::set<std::string>* recorded = nullptr);
  // The candidate judged on `golden`; `got` receives what the candidate returned.
  CaseReport Judge(const FunctionSpec& spec, const Case& golden, Case* got = nullptr);
  // Case `index` of `spec`: generated (retried while the oracle refuses it), projected,
  // golden and judged. nullopt when every attempt was refused.
  struct Judged {
    Case golden;
    CaseReport report;
    std::string regime;
    Case got;                        // sharded cases: the combined result, as a case (the others get it when shrunk)
    std::set<std::string> recorded;  // golden inputs the reference recorded (Golden)
    std::vector<Failure> failures;   // the report's, one per cause (causes.h); empty unless FAILED
  };
  std::optional<Judged> Explore(const FunctionSpec& spec, int64_t index, std::string* refused);
  // Sharded case `index` over `ranks` ranks (dp-invariance); regime names the plan.
  std::optional<Judged> ExploreSharded(const FunctionSpec& spec, int64_t index, int64_t ranks, std::string* refused);

  const AdapterProcess* candidate() const { return candidate_.get(); }
  const AdapterProcess* reference() const { return reference_.get(); }

 private:
  const EngineOptions& o_;
  std::unique_ptr<AdapterProcess> candidate_, reference_;
};

struct FunctionTally {
  const FunctionSpec* spec = nullptr;
  int64_t dp_ranks = 0;  // 0: plain cases; k: the function's loss sharded over k ranks
  int64_t cases = 0, passed = 0, failed = 0, baselined = 0, mistrusted = 0, unsupported = 0, skipped = 0, refused = 0;
  std::string refused_example;  // one reason, for the report
  int64_t refused_first = -1;   // the case it is from: the row's first refused case

  // Adds `o`'s outcome counts (a run's totals; a row's parts in a merge).
  void AddCounts(const FunctionTally& o) {
    cases += o.cases, passed += o.passed, failed += o.failed, baselined += o.baselined;
    mistrusted += o.mistrusted, unsupported += o.unsupported, skipped += o.skipped, refused += o.refused;
  }
};

// How many of the cases that show a difference it keeps the indices of (the first ones):
// what "may share a cause" compares, bounded whatever the number of cases.
constexpr size_t kKeptCaseIndices = 20000;

struct Difference {
  const FunctionSpec* spec = nullptr;
  // Other differences of the same row that may share its cause (one fix may remove both),
  // each with why: its minimal case shows them too, or they fail together in most of the
  // generated cases that show either.
  struct Shared {
    Failure failure;
    std::string why;
  };
  std::vector<Shared> may_share;
  // The explored cases that fail this way, in order: all of them, or the first 20,000
  // where `cases` counts more (memory stays bounded in the number of cases).
  std::vector<int64_t> case_indices;
  int64_t dp_ranks = 0;  // k for a sharded case's difference (not shrunk: the plan is its shape)
  // Where a serial, unsharded run meets it: its row, and its place in its first case's list.
  size_t row = 0, position = 0;
  Failure failure;
  int64_t cases = 0;        // explored cases that fail this way
  int64_t first_index = 0;  // the first of them
  std::string first_regime;
  Case start;  // its inputs
  // After shrinking:
  Case minimal;       // inputs, config, projections
  Case golden, got;   // the reference's and the candidate's results on it
  CaseReport report;  // the judge on it
  int64_t trials = 0;
  double shrink_seconds = 0;
  bool exhausted = false;
};

struct ExploreRun {
  std::vector<FunctionTally> functions;
  std::vector<Difference> differences;
  double explore_seconds = 0, shrink_seconds = 0;
  std::vector<const FunctionSpec*> not_provided;
  std::vector<tools::BaselineEntry>
      stale;  // baseline entries that covered nothing  // selected, but the candidate or reference lacks it
  std::string candidate_name;  // the adapter's name or the implementation's
  std::map<std::string, std::string> candidate_versions, reference_versions;
};

// How many differences' shrinks stopped at the budget (their minimal case may not be).
int64_t ShrinksAtBudget(const ExploreRun& run);

// Once the minimal cases are known: names them (a difference's failure, numbered where two
// coincide) and links the differences of a row that may share a cause, anew. A run's own
// end and a merge of shards both finish with it, so both read alike.
void FinishDifferences(ExploreRun& run);

// The name of a difference's minimal case, from what fails on it ("min_FIELD[_KIND][_GRADE]
// [__CAUSE]"): a valid case name (tools/h5/h5names.h), lower case, so that the fixture
// explore writes is one check reads back.
std::string MinimalCaseName(const Failure& f);

// Explores every function of `specs` (the caller's selection) that the candidate and the
// reference provide, then shrinks each difference. `progress` gets one line per function.
ExploreRun RunExplore(const std::vector<const FunctionSpec*>& specs, const EngineOptions& o,
                      const std::function<void(const std::string&)>& progress);

}  // namespace verlconf::explore
