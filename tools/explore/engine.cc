#include "tools/explore/engine.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "oracle/core/errors.h"
#include "oracle/explore/causes.h"
#include "oracle/explore/regimes.h"
#include "oracle/explore/shrink.h"
#include "oracle/judge/candidate.h"
#include "oracle/judge/grade.h"
#include "oracle/judge/judge.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/plan.h"
#include "oracle/sharding/shard.h"
#include "tools/cli/check_dp.h"

namespace verlconf::explore {
namespace {

constexpr int kAttempts = 6;  // generations tried before a case index counts as refused

// The candidate case an in-process implementation's result makes: what the display of a
// difference shows as "got".
Case FromImplementation(const FunctionSpec& spec, const RunFn& run, const Case& golden) {
  Case got = InputsOnly(golden);
  try {
    const Result r = run(got);
    got.outputs = r.outputs;
    got.grads = r.grads;
    got.metrics = r.metrics;
    got.vjps = r.vjps;
    for (const auto& [n, v] : got.metrics) got.metric_dtypes[n] = DType::kFloat64;
  } catch (const VerlError& e) {
    got.expect_error = e.what();
  } catch (const Unsupported& e) {
    got.declined = e.what();
  }
  (void)spec;
  return got;
}

}  // namespace

// Named after what fails, so that a report or a review can name the case and the name
// survives a rerun that finds other differences first.
std::string MinimalCaseName(const Failure& f) {
  std::string name = "min_";
  // A comparison keeps its sense ("A < 0" and "A > 0" are two causes); any other mark is '_'.
  auto slug = [&name](const std::string& s) {
    for (char ch : s) {
      if (ch == '<' || ch == '>') {
        name += ch == '<' ? "lt" : "gt";
        continue;
      }
      const auto c = static_cast<unsigned char>(ch);
      name += std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
    }
  };
  slug(f.field);
  if (f.kind != "value" && f.field != "error") {
    name += '_';
    slug(f.kind);
  }
  if (f.grade != "material") {
    name += '_';
    slug(f.grade);
  }
  if (!f.cause.empty()) {
    name += "__";
    slug(f.cause);
  }
  return name;
}

int64_t ShrinksAtBudget(const ExploreRun& run) {
  int64_t n = 0;
  for (const Difference& d : run.differences) n += !d.dp_ranks && d.exhausted;
  return n;
}

Worker::Worker(const EngineOptions& o) : o_(o) {
  if (o.candidate) candidate_ = std::make_unique<AdapterProcess>(*o.candidate);
  if (o.reference) reference_ = std::make_unique<AdapterProcess>(*o.reference);
}

std::optional<Case> Worker::Golden(const FunctionSpec& spec, const Case& c, std::string* refused,
                                   std::set<std::string>* recorded) {
  if (recorded) recorded->clear();
  std::optional<Case> og = OracleGolden(spec, c, refused);
  if (!og || !reference_) return og;
  std::map<std::string, Array> choices;
  Case g = reference_->Call(InputsOnly(c), &choices);
  if (g.declined) {
    if (refused) *refused = "the reference adapter declined: " + *g.declined;
    return std::nullopt;
  }
  // Only a result records a choice; the choice is verl's, whatever the case carried.
  for (auto& [name, a] : choices) {
    g.inputs[name] = std::move(a);
    if (recorded) recorded->insert(name);
  }
  return g;
}

CaseReport Worker::Judge(const FunctionSpec& spec, const Case& golden, Case* got) {
  if (candidate_) {
    Case cand = candidate_->Call(InputsOnly(golden));
    CaseReport r = CheckCandidate(spec, golden, cand);
    if (got) *got = std::move(cand);
    return r;
  }
  const RunFn* run = spec.Implementation(o_.impl);
  if (!run || !*run) throw std::logic_error(spec.family + "/" + spec.name + ": no " + ImplName(o_.impl));
  CaseReport r = CheckImplementation(spec, golden, *run);
  if (got) *got = FromImplementation(spec, *run, golden);
  return r;
}

std::optional<Worker::Judged> Worker::Explore(const FunctionSpec& spec, int64_t index, std::string* refused) {
  const std::optional<DType> dtype = ImplDType(o_.impl);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Explored e = GenerateExplored(spec, o_.seed, index, candidate_ ? std::nullopt : dtype, attempt, o_.pins);
    std::optional<Case> og = OracleGolden(spec, e.c, refused);
    if (!og) continue;
    if (!spec.vjp_inputs.empty() && !og->expect_error) {
      Result shapes;
      shapes.outputs = og->outputs;
      AddProjections(spec, shapes, CaseSeed(o_.seed, spec.name, index, attempt), e.c);
    }
    std::set<std::string> recorded;
    std::optional<Case> golden = Golden(spec, e.c, refused, &recorded);
    if (!golden) continue;
    Case got;
    CaseReport report = Judge(spec, *golden, &got);
    Judged j{*golden, std::move(report), e.regime, {}, std::move(recorded), {}};
    j.failures = CaseFailures(spec, j.golden, got, j.report);
    return j;
  }
  return std::nullopt;
}

namespace {

constexpr int64_t kDpRanks[] = {2, 4, 8};

// An adapter's answer as an implementation: a result, verl's error (the kind before the
// first ':'), or Unsupported for a decline.
Result AdapterResult(const Case& got) {
  if (got.declined) throw Unsupported(*got.declined);
  if (got.expect_error) {
    const std::string& e = *got.expect_error;
    const size_t colon = e.find(':');
    throw VerlError(e.substr(0, colon), colon == std::string::npos ? "" : e.substr(colon + 2));
  }
  return Result::Of(got);
}

RunFn AdapterRun(AdapterProcess& p) {
  return [&p](const Case& c) { return AdapterResult(p.Call(c)); };
}

// sharding::RunSharded on an adapter: each call carries its place in the sharding, so
// that an adapter's SHARD hook runs it as its trainer would.
// `raised_at` gets "rank R, micro-batch M" of a call that raised verl's error.
Result RunShardedOnAdapter(const FunctionSpec& spec, AdapterProcess& p, const Case& full,
                           const sharding::ShardPlan& plan, std::string* raised_at) {
  const sharding::ShardedCase sharded = sharding::ShardCase(spec, full, plan);
  std::vector<Result> results;
  for (const sharding::ShardCall& call : sharded.calls) {
    ShardContext ctx;
    ctx.rank = call.rank;
    ctx.dp_size = sharded.dp_size;
    ctx.micro_batch = call.micro_batch;
    const auto& rank = plan.ranks.at(static_cast<size_t>(call.rank));
    ctx.micro_batches = static_cast<int64_t>(rank.micro_batches.size());
    ctx.horizon = call.horizon;
    ctx.batch_size = full.Input(sharding::LossMaskInput(spec)->name).rows();
    ctx.batch_num_tokens = sharded.counts.batch_num_tokens;
    ctx.global_batch_size = sharded.counts.global_batch_size;
    ctx.rows = call.rows;
    ctx.rank_rows = plan.RankRows(call.rank);
    int64_t width = 1;
    for (const auto& mb : rank.micro_batches)
      width = std::max(width, sharding::MicroBatchHorizon(spec, full, mb.rows, plan.trainer.horizon));
    ctx.rank_inputs = sharding::SliceRows(spec, full, ctx.rank_rows, width).inputs;
    try {
      results.push_back(AdapterResult(p.Call(call.input, nullptr, &ctx)));
    } catch (const VerlError&) {
      if (raised_at)
        *raised_at = "rank " + std::to_string(call.rank) + ", micro-batch " + std::to_string(call.micro_batch);
      throw;
    }
  }
  return sharding::Combine(spec, full, sharded, results);
}

}  // namespace

std::optional<Worker::Judged> Worker::ExploreSharded(const FunctionSpec& spec, int64_t index, int64_t ranks,
                                                     std::string* refused) {
  const std::optional<DType> dtype = ImplDType(o_.impl);
  const std::string salt = spec.family + "/" + spec.name + "/dp" + std::to_string(ranks);
  for (int attempt = 0; attempt < 4 * kAttempts; ++attempt) {
    Explored e = GenerateExplored(spec, CaseSeed(o_.seed, salt, index, attempt), index,
                                  candidate_ ? std::nullopt : dtype, attempt, o_.pins);
    Case full = sharding::JudgedFullBatch(spec, std::move(e.c));
    if (BatchRows(spec, full) < ranks) {
      if (refused) *refused = "fewer rows than ranks";
      continue;
    }
    oracle::InputGen g(CaseSeed(o_.seed, salt + "/plan", index, attempt));
    const sharding::ShardPlan plan = sharding::RandomPlan(g, BatchRows(spec, full), ranks, 3);
    if (const sharding::DpVerdict v = sharding::Classify(spec, full, plan); v.kind == sharding::DpKind::kLocal) {
      // As check says it: no verdict is possible, and that is no refusal by the reference.
      Case golden = full;
      golden.name = "dp" + std::to_string(ranks) + "_" + std::to_string(index);
      golden.why = "sharded " + plan.Describe();
      Judged j{
          golden,
          CaseReport::NotCompared(golden, Outcome::kSkipped, "no full-batch formula in verl's semantics: " + v.why),
          e.regime + " sharded " + plan.Describe(),
          {},
          {},
          {}};
      j.report.function = tools::DpRowName(spec.name, ranks);
      return j;
    }
    // The reference, as check's dp rows take it: verl's semantics for this sharding, or
    // verl's error where a micro-batch it runs part of the loss on by itself (bypass
    // mode's rollout correction) is one it refuses, which stops the training step. An
    // error of the unsplit batch alone is no training step's: the case is refused.
    const RunFn semantics = sharding::ShardedSemantics(spec, plan);
    Case golden = full;
    golden.name = "dp" + std::to_string(ranks) + "_" + std::to_string(index);
    Result want;
    try {
      ValidateStructure(spec, full);
      want = semantics(full);
    } catch (const sharding::MicroBatchError& ex) {
      golden.expect_error = ex.what();
    } catch (const std::exception& ex) {
      if (refused) *refused = ex.what();
      continue;
    }
    const std::string& loss = sharding::LossOutput(spec);
    if (!golden.expect_error) {
      golden.outputs[loss] = want.outputs.at(loss);
      for (const std::string& gname : spec.grads)
        if (want.grads.count(gname)) golden.grads[gname] = want.grads.at(gname);
    }
    golden.why = "sharded " + plan.Describe();
    Judged j{golden, {}, e.regime + " sharded " + plan.Describe(), {}, {}, {}};
    const RunFn run = candidate_ ? AdapterRun(*candidate_) : *spec.Implementation(o_.impl);
    std::string raised_at;
    try {
      const Result got = candidate_ ? RunShardedOnAdapter(spec, *candidate_, full, plan, &raised_at)
                                    : sharding::RunSharded(spec, run, full, plan);
      Result only;
      only.outputs[loss] = got.outputs.count(loss) ? got.outputs.at(loss) : Array();
      for (const std::string& gname : spec.grads)
        if (got.grads.count(gname)) only.grads[gname] = got.grads.at(gname);
      if (only.outputs[loss].shape.empty() && only.outputs[loss].data.empty()) only.outputs.erase(loss);
      j.report = CompareResult(spec, golden, &only, std::nullopt, kOracleVerlVersion, &semantics);
      j.got = InputsOnly(golden);
      j.got.outputs = only.outputs;
      j.got.grads = only.grads;
    } catch (const VerlError& ex) {
      j.report = CompareResult(spec, golden, nullptr, std::string(ex.what()), kOracleVerlVersion, &semantics);
      // What a reader needs: which call raised what (the combination never ran).
      j.got = InputsOnly(golden);
      j.got.expect_error = std::string(ex.what()) + " (raised by " + (raised_at.empty() ? "a micro-batch" : raised_at) +
                           " of the sharding)";
    } catch (const Unsupported& ex) {
      j.report = CaseReport::NotCompared(golden, Outcome::kUnsupported, ex.what());
    } catch (const BadInput& ex) {  // a call's result of the wrong shape: the adapter breaks the contract
      throw BadInput((candidate_ ? candidate_->name() : std::string(ImplName(o_.impl))) + ": " +
                     tools::DpRowName(spec.family + "/" + spec.name, ranks) + ", generated case " +
                     std::to_string(index) + ": " + ex.what());
    }
    j.report.function = tools::DpRowName(spec.name, ranks);
    j.failures = ReportFailures(j.report, &j.golden, &j.got);
    return j;
  }
  return std::nullopt;
}

void FinishDifferences(ExploreRun& run) {
  // Each kept minimal case is a group of its function's file: a difference whose name
  // another already holds (causes that differ only in marks the name drops) gets _2, _3, ...
  std::set<std::string> taken;
  for (Difference& d : run.differences) {
    const std::string base = d.dp_ranks ? "dp" + std::to_string(d.dp_ranks) + "_" + MinimalCaseName(d.failure).substr(4)
                                        : MinimalCaseName(d.failure);
    const std::string where = d.spec->family + "/" + d.spec->name + "/";
    std::string name = base;
    for (int n = 2; !taken.insert(where + name).second; ++n) name = base + "_" + std::to_string(n);
    d.minimal.name = name;
    d.may_share.clear();
  }
  // Two differences of one row may share a cause where one's minimal case shows the
  // other's failure as well: a reader fixes one and sees whether the other goes too.
  for (size_t a = 0; a < run.differences.size(); ++a) {
    Difference& d = run.differences[a];
    const std::vector<Failure> shown =
        d.dp_ranks ? std::vector<Failure>{} : CaseFailures(*d.spec, d.golden, d.got, d.report);
    for (size_t b = 0; b < run.differences.size(); ++b) {
      const Difference& e = run.differences[b];
      if (a == b || e.spec != d.spec || e.dp_ranks != d.dp_ranks) continue;
      if (std::find(shown.begin(), shown.end(), e.failure) != shown.end()) {
        d.may_share.push_back({e.failure, "its minimal case shows it too"});
        continue;
      }
      // Every one of (at least five) generated cases that show the rarer one shows the
      // other as well: no coincidence of a few cases. Both lists are in exploration order.
      // Where a list keeps only its first cases, both are compared up to the smaller of
      // their last kept indices.
      const bool capped = d.cases > static_cast<int64_t>(d.case_indices.size()) ||
                          e.cases > static_cast<int64_t>(e.case_indices.size());
      if (d.case_indices.empty() || e.case_indices.empty()) continue;
      const int64_t bound = std::min(d.case_indices.back(), e.case_indices.back());
      auto upto = [&](const std::vector<int64_t>& v) {
        return capped ? std::vector<int64_t>(v.begin(), std::upper_bound(v.begin(), v.end(), bound)) : v;
      };
      const std::vector<int64_t> da = upto(d.case_indices), ea = upto(e.case_indices);
      std::vector<int64_t> both;
      std::set_intersection(da.begin(), da.end(), ea.begin(), ea.end(), std::back_inserter(both));
      const size_t fewer = std::min(da.size(), ea.size());
      if (fewer >= 5 && both.size() == fewer)
        d.may_share.push_back({e.failure, "every one of the " + std::to_string(fewer) + " generated cases " +
                                              (capped ? "(of the first " + std::to_string(bound + 1) + ") " : "") +
                                              "that show the rarer one shows both"});
    }
  }
}

ExploreRun RunExplore(const std::vector<const FunctionSpec*>& specs, const EngineOptions& o,
                      const std::function<void(const std::string&)>& progress) {
  const int jobs = std::max(1, o.jobs);
  std::vector<std::unique_ptr<Worker>> workers;
  workers.push_back(std::make_unique<Worker>(o));
  ExploreRun run;
  const Worker& first = *workers[0];
  run.candidate_name = first.candidate() ? first.candidate()->name() : ImplName(o.impl);
  if (first.candidate()) run.candidate_versions = first.candidate()->versions();
  if (first.reference()) run.reference_versions = first.reference()->versions();
  std::vector<const FunctionSpec*> todo;
  for (const FunctionSpec* s : specs) {
    const std::string key = s->family + "/" + s->name;
    bool ok = first.candidate() ? first.candidate()->functions().count(key) > 0 : s->Implementation(o.impl) != nullptr;
    if (first.reference()) ok = ok && first.reference()->functions().count(key) > 0;
    if (!s->generate || !s->oracle) ok = false;
    (ok ? todo : run.not_provided).push_back(s);
  }
  for (int k = 1; k < jobs; ++k) workers.push_back(std::make_unique<Worker>(o));

  // The rows: each function's plain cases, then its sharded cases over each of 2, 4 and 8
  // ranks (dp-invariance) for the functions that take verl's global-batch arguments. Item
  // k of the run is found by the rows' offsets, never listed: memory does not grow with
  // the number of cases. Whatever a judged case leaves behind is folded into its row's
  // tally at once; a case is kept only while it is the first (lowest index) to show a
  // difference.
  struct Row {
    const FunctionSpec* spec;
    int64_t ranks, count, offset;
  };
  std::vector<Row> rows;
  int64_t total = 0;
  auto add_row = [&](const FunctionSpec* s, int64_t ranks, int64_t count) {
    rows.push_back({s, ranks, count, total});
    total += count;
  };
  for (const FunctionSpec* s : todo) add_row(s, 0, o.cases);
  if (!o.reference)
    for (const FunctionSpec* s : todo)
      if (o.dp_cases > 0 && sharding::TakesGlobalBatchInfo(*s))
        for (const int64_t k : kDpRanks) add_row(s, k, o.dp_cases);
  auto row_of = [&](int64_t k) {
    size_t lo = 0, hi = rows.size();
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      (rows[mid].offset <= k ? lo : hi) = mid;
    }
    return lo;
  };

  // Per difference: its first case, and the indices of the cases that show it (the
  // first kKeptCaseIndices of them).
  struct Seen {
    Difference d;
    std::set<int64_t> indices;
  };
  std::map<std::tuple<const FunctionSpec*, int64_t, Failure>, Seen> seen;
  std::vector<FunctionTally> tallies(rows.size());
  std::vector<bool> judged_any(rows.size(), false);
  for (size_t r = 0; r < rows.size(); ++r) {
    tallies[r].spec = rows[r].spec;
    tallies[r].dp_ranks = rows[r].ranks;
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int64_t> next_item{0};
  std::mutex fold_mu, error_mu;
  std::exception_ptr error;
  auto fold = [&](size_t r, int64_t i, std::optional<Worker::Judged> j, const std::string& refusal) {
    std::lock_guard<std::mutex> lock(fold_mu);
    FunctionTally& t = tallies[r];
    ++t.cases;
    if (!j) {
      ++t.refused;
      if (t.refused_first < 0 || i < t.refused_first) t.refused_first = i, t.refused_example = refusal;
      return;
    }
    judged_any[r] = true;
    if (o.baseline) {
      std::vector<CaseReport> one{std::move(j->report)};
      std::vector<std::vector<tools::FailingKey>> keys(1);
      for (const Failure& f : j->failures) keys[0].push_back({f.field, f.cause});
      tools::ApplyBaseline(*o.baseline, one, &keys);
      j->report = std::move(one[0]);
    }
    const CaseReport& rep = j->report;
    switch (rep.outcome) {
      case Outcome::kPassed: ++t.passed; break;
      case Outcome::kFailed: ++t.failed; break;
      case Outcome::kBaselined: ++t.baselined; break;
      case Outcome::kMistrusted: ++t.mistrusted; break;
      case Outcome::kUnsupported: ++t.unsupported; break;
      case Outcome::kSkipped: ++t.skipped; break;
    }
    if (rep.outcome != Outcome::kFailed) return;
    for (size_t pos = 0; pos < j->failures.size(); ++pos) {
      const Failure& fail = j->failures[pos];
      if (o.baseline && o.baseline->Accepts(rep, {fail.field, fail.cause})) continue;  // accepted: no difference
      auto [it, fresh] = seen.try_emplace(std::make_tuple(t.spec, t.dp_ranks, fail));
      Seen& e = it->second;
      Difference& d = e.d;
      ++d.cases;
      e.indices.insert(i);
      if (e.indices.size() > kKeptCaseIndices) e.indices.erase(std::prev(e.indices.end()));
      if (!fresh && d.first_index <= i) continue;
      // The first case to show it so far: the one an unsharded, serial run meets first.
      d.row = r;
      d.position = pos;
      d.spec = t.spec;
      d.dp_ranks = t.dp_ranks;
      d.failure = fail;
      d.first_index = i;
      d.first_regime = j->regime;
      d.start = InputsOnly(j->golden);
      // The reference's recorded choice is remade on every shrunk case (a stale one
      // would not fit the shrunk shape), so shrinking starts without it.
      for (const std::string& name : j->recorded) d.start.inputs.erase(name);
      if (t.dp_ranks) {  // not shrunk: the sharding plan is part of the case's shape
        d.minimal = d.start;
        d.golden = j->golden;
        d.got = j->got;
        d.report = j->report;
      }
    }
  };
  // This run's part of the items: every shard_count-th from shard_index.
  const int64_t count = std::max<int64_t>(1, o.shard_count), first_item = o.shard_index;
  const int64_t items = first_item < total ? (total - first_item + count - 1) / count : 0;
  auto work = [&](Worker& w) {
    for (int64_t m; (m = next_item++) < items;) {
      try {
        const int64_t k = first_item + m * count;
        const size_t r = row_of(k);
        const Row& row = rows[r];
        const int64_t i = k - row.offset;
        std::string refusal;
        std::optional<Worker::Judged> j =
            row.ranks ? w.ExploreSharded(*row.spec, i, row.ranks, &refusal) : w.Explore(*row.spec, i, &refusal);
        fold(r, i, std::move(j), refusal);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next_item = items;
      }
    }
  };
  {
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back(work, std::ref(*w));
    for (auto& t : threads) t.join();
  }
  if (error) std::rethrow_exception(error);
  run.explore_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  for (size_t r = 0; r < rows.size(); ++r) {
    const FunctionTally& t = tallies[r];
    if (progress) {
      char line[256];
      std::snprintf(line, sizeof line, "explored %s/%s%s: %lld cases, %lld failed", t.spec->family.c_str(),
                    t.spec->name.c_str(), t.dp_ranks ? (" sharded over " + std::to_string(t.dp_ranks)).c_str() : "",
                    static_cast<long long>(t.cases), static_cast<long long>(t.failed));
      progress(line);
    }
    run.functions.push_back(t);
  }
  // In the order a serial run meets them: by row, then by first case, then as that case
  // lists them.
  std::vector<Seen*> order;
  for (auto& [key, e] : seen) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Seen* a, const Seen* b) {
    return std::tie(a->d.row, a->d.first_index, a->d.position) < std::tie(b->d.row, b->d.first_index, b->d.position);
  });
  for (Seen* e : order) {
    e->d.case_indices.assign(e->indices.begin(), e->indices.end());
    run.differences.push_back(std::move(e->d));
  }
  seen.clear();

  if (o.baseline) {                  // after the tally: an entry may cover a cause of a case that stays FAILED
    std::vector<CaseReport> judged;  // one stand-in per row that judged a case: Stale reads the function
    for (size_t r = 0; r < rows.size(); ++r)
      if (judged_any[r]) {
        CaseReport stand_in;
        stand_in.family = rows[r].spec->family;
        stand_in.function = rows[r].ranks ? tools::DpRowName(rows[r].spec->name, rows[r].ranks) : rows[r].spec->name;
        judged.push_back(std::move(stand_in));
      }
    for (const tools::BaselineEntry* e : o.baseline->Stale(judged)) run.stale.push_back(*e);
  }

  // Shrinking, one difference per worker at a time.
  const auto t1 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  auto shrink = [&](Worker& w) {
    for (size_t k; (k = next++) < run.differences.size();) {
      try {
        Difference& d = run.differences[k];
        const FunctionSpec& spec = *d.spec;
        if (d.dp_ranks) continue;
        // The same failure, cause included, on a case that keeps the user's pins.
        const auto fails = [&](const Case& c) {
          if (!KeepsPins(spec, c, o.pins)) return false;
          std::string why;
          std::optional<Case> g = w.Golden(spec, c, &why);
          if (!g) return false;
          Case got;
          const CaseReport r = w.Judge(spec, *g, &got);
          for (const Failure& f : CaseFailures(spec, *g, got, r))
            if (f == d.failure) return true;
          return false;
        };
        ShrinkBudget budget;
        budget.max_time = std::chrono::milliseconds(static_cast<int64_t>(o.shrink_seconds * 1000));
        const auto s0 = std::chrono::steady_clock::now();
        Shrunk s = Shrink(spec, d.start, fails, budget);
        d.shrink_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
        d.trials = s.trials;
        d.exhausted = s.exhausted;
        d.minimal = s.c;
        d.minimal.name = MinimalCaseName(d.failure);  // FinishDifferences numbers it where two coincide
        std::string why;
        std::optional<Case> g = w.Golden(spec, d.minimal, &why);
        if (!g) throw std::logic_error(spec.name + ": the minimal case is refused by the reference: " + why);
        d.golden = *g;
        d.report = w.Judge(spec, d.golden, &d.got);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next = run.differences.size();
      }
    }
  };
  {
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back(shrink, std::ref(*w));
    for (auto& t : threads) t.join();
  }
  if (error) std::rethrow_exception(error);
  run.shrink_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  FinishDifferences(run);
  return run;
}

}  // namespace verlconf::explore
