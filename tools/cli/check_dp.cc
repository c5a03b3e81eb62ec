#include "tools/cli/check_dp.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "oracle/core/errors.h"
#include "oracle/explore/golden.h"
#include "oracle/judge/candidate.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/shard.h"

namespace verlconf::tools {
namespace {

constexpr const char* kRowsPrefix = "dp rows ";

// The rows a call held, from its `why`.
std::vector<int64_t> CallRows(const Case& call) {
  const std::string& why = call.why;
  if (why.rfind(kRowsPrefix, 0) != 0)
    throw BadInput(call.Where() + ": attribute 'why' is '" + why +
                   "'; a sharded call's is \"dp rows\" and the full batch's rows it held");
  std::istringstream in(why.substr(std::string(kRowsPrefix).size()));
  std::vector<int64_t> rows;
  for (std::string word; in >> word;) {
    if (!AllDigits(word))
      throw BadInput(call.Where() + ": attribute 'why': '" + word + "' is not a row number (\"" + why + "\")");
    rows.push_back(std::stoll(word));
  }
  return rows;
}

using CallKey = std::tuple<std::string, std::string, std::string, int64_t>;  // family, function, case, k
using CallsOf = std::map<std::pair<int64_t, int64_t>, const Case*>;          // (rank, micro-batch) -> call

// The plan the calls describe; BadInput naming the first call concerned otherwise.
sharding::ShardPlan PlanOf(const CallsOf& calls, int64_t dp_size, int64_t batch) {
  const Case& first = *calls.begin()->second;
  const std::string where = first.file + ":/" + first.function + "/" + ParseDpCallName(first.name)->case_name + ".dp" +
                            std::to_string(dp_size) + ".*";
  sharding::ShardPlan plan;
  for (const auto& [at, call] : calls) {
    const auto [rank, mb] = at;
    if (rank >= dp_size)
      throw BadInput(call->Where() + ": rank " + std::to_string(rank) + " of a batch sharded over " +
                     std::to_string(dp_size) + " ranks");
    if (rank != static_cast<int64_t>(plan.ranks.size()) - (mb > 0 ? 1 : 0))
      throw BadInput(
          call->Where() + ": the sharding plan skips " +
          (mb > 0 ? "micro-batch 0 of rank " + std::to_string(rank) : "rank " + std::to_string(plan.ranks.size())));
    if (mb == 0) plan.ranks.emplace_back();
    auto& mbs = plan.ranks.back().micro_batches;
    if (mb != static_cast<int64_t>(mbs.size()))
      throw BadInput(call->Where() + ": the sharding plan skips micro-batch " + std::to_string(mbs.size()) +
                     " of rank " + std::to_string(rank));
    mbs.push_back({CallRows(*call)});
  }
  if (plan.dp_size() != dp_size)
    throw BadInput(where + ": calls for " + std::to_string(plan.dp_size()) + " of the " + std::to_string(dp_size) +
                   " ranks");
  try {
    sharding::ValidatePlan(plan, batch);
  } catch (const std::invalid_argument& ex) {
    throw BadInput(where + ": " + ex.what() + " (a batch of " + std::to_string(batch) + " rows)");
  }
  return plan;
}

CaseReport CheckOne(const FunctionSpec& spec, const Case& golden, const CallsOf& calls, int64_t dp_size,
                    const std::string& label) {
  const Case full = sharding::JudgedFullBatch(spec, explore::InputsOnly(golden));
  const int64_t batch = full.Input(sharding::LossMaskInput(spec)->name).rows();
  const sharding::ShardPlan plan = PlanOf(calls, dp_size, batch);

  Case ref = full;
  ref.function = label;
  ref.why = "sharded " + plan.Describe();
  if (const sharding::DpVerdict v = sharding::Classify(spec, full, plan); v.kind == sharding::DpKind::kLocal)
    return CaseReport::NotCompared(ref, Outcome::kSkipped, "no full-batch formula in verl's semantics: " + v.why);

  const sharding::ShardedCase sharded = sharding::ShardCase(spec, full, plan);
  const std::string& loss = sharding::LossOutput(spec);
  // The reference: verl's semantics for this sharding, or verl's error where a
  // micro-batch it runs the loss on by itself is one it refuses.
  const RunFn semantics = sharding::ShardedSemantics(spec, plan);
  try {
    const Result want = semantics(full);
    ref.outputs[loss] = want.outputs.at(loss);
    for (const std::string& g : spec.grads)
      if (want.grads.count(g)) ref.grads[g] = want.grads.at(g);
  } catch (const VerlError& ex) {
    ref.outputs.clear();
    ref.grads.clear();
    ref.expect_error = ex.what();
  }

  std::vector<Result> results;
  for (const auto& [at, cand] : calls) {
    if (cand->declined) return CaseReport::NotCompared(ref, Outcome::kUnsupported, *cand->declined);
    if (cand->expect_error)
      return CompareResult(spec, ref, nullptr, *cand->expect_error, kOracleVerlVersion, &semantics);
    results.push_back(Result::Of(*cand));
  }
  Result got;
  try {
    got = sharding::Combine(spec, full, sharded, results);
  } catch (const BadInput& ex) {
    throw BadInput(calls.begin()->second->file + ":/" + calls.begin()->second->function + "/" +
                   ParseDpCallName(calls.begin()->second->name)->case_name + ".dp" + std::to_string(dp_size) +
                   ".*: " + ex.what());
  }
  return CompareResult(spec, ref, &got, std::nullopt, kOracleVerlVersion, &semantics);
}

}  // namespace

std::optional<DpCallName> ParseDpCallName(const std::string& name) {
  // "<case>.dp<k>.r<rank>.m<micro-batch>", read from the end.
  std::vector<std::string> parts;
  std::string rest = name;
  for (const char* tag : {".m", ".r", ".dp"}) {
    const size_t at = rest.rfind(tag);
    if (at == std::string::npos || at == 0) return std::nullopt;
    parts.push_back(rest.substr(at + std::string(tag).size()));
    rest = rest.substr(0, at);
  }
  for (const auto& p : parts)
    if (!AllDigits(p)) return std::nullopt;
  return DpCallName{rest, std::stoll(parts[2]), std::stoll(parts[1]), std::stoll(parts[0])};
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string DpRowName(const std::string& function, int64_t dp_size) {
  return function + " [dp k=" + std::to_string(dp_size) + "]";
}

int64_t DpRanksOfRow(const std::string& function) {
  const size_t at = function.rfind(" [dp k=");
  if (at == std::string::npos || function.back() != ']') return 0;
  const std::string k = function.substr(at + 7, function.size() - at - 8);
  return AllDigits(k) ? std::stoll(k) : 0;
}

std::string DpBaseFunction(const std::string& row) {
  return DpRanksOfRow(row) ? row.substr(0, row.rfind(" [dp k=")) : row;
}

std::vector<CaseReport> CheckDpInvariance(const fixtures::GoldenSet& golden, const std::vector<const Case*>& calls,
                                          const Selection& only, const std::set<std::string>& families,
                                          const std::function<std::string(const Case&)>& repro) {
  std::map<CallKey, CallsOf> by_case;
  for (const Case* c : calls) {
    const auto name = ParseDpCallName(c->name);
    // Each number in its one decimal spelling: "r00" would otherwise stand in for "r0".
    const std::string canonical = name->case_name + ".dp" + std::to_string(name->dp_size) + ".r" +
                                  std::to_string(name->rank) + ".m" + std::to_string(name->micro_batch);
    if (canonical != c->name)
      throw BadInput(c->Where() +
                     ": a sharded call is named <case>.dp<k>.r<rank>.m<micro-batch> with each number "
                     "in plain decimal (no leading zeros); this name reads as '" +
                     canonical + "'");
    auto& of = by_case[{c->family, c->function, name->case_name, name->dp_size}];
    if (!of.emplace(std::make_pair(name->rank, name->micro_batch), c).second)
      throw BadInput(c->Where() + ": rank " + std::to_string(name->rank) + ", micro-batch " +
                     std::to_string(name->micro_batch) + " given twice (also " +
                     of.at({name->rank, name->micro_batch})->Where() + ")");
  }
  for (const auto& [key, of] : by_case) {
    const auto& [family, function, case_name, k] = key;
    if (std::find(std::begin(kDpRanks), std::end(kDpRanks), k) == std::end(kDpRanks))
      throw BadInput(of.begin()->second->Where() + ": sharded over " + std::to_string(k) +
                     " ranks; the harness shards over 2, 4 and 8");
  }
  std::vector<CaseReport> reports;
  std::set<CallKey> judged;
  for (const auto& [gkey, g] : golden.index) {
    if (!families.count(g->family) || !only.Selects(*g) || g->expect_error || g->declined) continue;
    const FunctionSpec* spec = SpecFor(*g);
    if (!spec || !spec->oracle || !sharding::TakesGlobalBatchInfo(*spec)) continue;
    const InputSpec* mask = sharding::LossMaskInput(*spec);
    const Array* m = mask ? g->OptionalInput(mask->name) : nullptr;
    if (!m) continue;
    for (const int64_t k : kDpRanks) {
      if (m->rows() < k) continue;
      const std::string label = DpRowName(g->function, k);
      auto it = by_case.find({g->family, g->function, g->name, k});
      judged.insert({g->family, g->function, g->name, k});
      CaseReport r;
      if (it == by_case.end()) {
        // The fields a dp row compares: the loss and the gradients.
        Case named = explore::InputsOnly(*g);
        named.function = label;
        const std::string& loss = sharding::LossOutput(*spec);
        if (g->outputs.count(loss)) named.outputs[loss] = g->outputs.at(loss);
        for (const std::string& gname : spec->grads)
          if (g->grads.count(gname)) named.grads[gname] = g->grads.at(gname);
        r = NotProvided(named, "no sharded results in the candidate set (a harness before dp-invariance?)");
        r.not_provided = true;
      } else {
        r = CheckOne(*spec, *g, it->second, k, label);
        r.where = it->second.begin()->second->Where();
      }
      r.function = label;
      r.repro = repro(*g);
      reports.push_back(std::move(r));
    }
  }
  // Calls of a selected case that no row judges (a batch with fewer rows than ranks, a
  // case verl raises on) are not a sharding the harness writes.
  for (const auto& [key, of] : by_case) {
    const auto& [family, function, case_name, k] = key;
    auto g = golden.index.find({family, function, case_name});
    if (!judged.count(key) && g != golden.index.end() && families.count(family) && only.Selects(*g->second))
      throw BadInput(of.begin()->second->Where() + ": sharded calls of a case that has no dp-invariance row over " +
                     std::to_string(k) + " ranks (fewer rows than ranks, or verl raises on it)");
  }
  return reports;
}

}  // namespace verlconf::tools
