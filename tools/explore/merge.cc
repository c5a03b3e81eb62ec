#include "tools/explore/merge.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "oracle/core/errors.h"
#include "oracle/explore/shrink.h"
#include "tools/cli/paths.h"
#include "tools/explore/run_codec.h"
#include "tools/explore/wire.h"

namespace verlconf::explore {
namespace {

const Json& Member(const Json& j, const std::string& key, Json::Kind kind, const std::string& path) {
  const Json* m = j.Find(key);
  if (!m || m->kind != kind) throw BadInput(path + ": no valid member '" + key + "' (not a shard of conform explore?)");
  return *m;
}

int64_t WholeNumber(const Json& j, const std::string& key, const std::string& path) {
  const Json& m = Member(j, key, Json::Kind::kNumber, path);
  if (!m.integral || m.number < 0 || m.number > 9.007199254740992e15)
    throw BadInput(path + ": member '" + key + "' is not a whole number");
  return static_cast<int64_t>(m.number);
}

// How small a minimal case is, in the shrinker's own order: fewer rows, then tokens, then
// fewer non-zero values, then fewer config keys away from verl's defaults.
std::tuple<int64_t, int64_t, int64_t, int64_t> Size(const Difference& d) {
  int64_t nonzero = 0, keys = 0;
  for (const auto& [name, a] : d.minimal.inputs)
    for (double x : a.data) nonzero += x != 0;
  for (const auto& k : d.spec->config) {
    const auto& values = d.minimal.config.values();
    const auto it = values.find(k.name);
    keys += !((it == values.end() ? ConfigValue{} : it->second) == k.verl_default);
  }
  return {BatchRows(*d.spec, d.minimal), TokenColumns(*d.spec, d.minimal), nonzero, keys};
}

std::string RowKey(const FunctionTally& t) {
  return t.spec->family + "/" + t.spec->name + (t.dp_ranks ? " [dp k=" + std::to_string(t.dp_ranks) + "]" : "");
}

// The member two shards disagree on, or "".
std::string Differs(const RunIdentity& a, const RunIdentity& b) {
  if (a.revision != b.revision) return "conform_revision (" + a.revision + " vs " + b.revision + ")";
  if (a.seed != b.seed) return "seed (" + std::to_string(a.seed) + " vs " + std::to_string(b.seed) + ")";
  if (a.cases != b.cases)
    return "cases_per_function (" + std::to_string(a.cases) + " vs " + std::to_string(b.cases) + ")";
  if (a.dp_cases != b.dp_cases)
    return "dp_cases_per_function (" + std::to_string(a.dp_cases) + " vs " + std::to_string(b.dp_cases) + ")";
  if (a.candidate != b.candidate || a.adapter != b.adapter || a.impl != b.impl)
    return "candidate (" + a.candidate + " vs " + b.candidate + ")";
  if (a.reference != b.reference) return "reference (" + a.reference + " vs " + b.reference + ")";
  if (a.only != b.only) return "only ('" + a.only + "' vs '" + b.only + "')";
  if (a.config != b.config) return "config (the --config pins)";
  if (a.baseline != b.baseline) return "baseline ('" + a.baseline + "' vs '" + b.baseline + "')";
  return "";
}

}  // namespace

ShardFile ReadShard(const std::string& path) {
  if (!tools::IsRegularFile(path)) throw BadInput(path + ": " + tools::NotARegularFile(path));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw BadInput(path + ": cannot be read");
  const Json j = ParseJson(text.str(), path);
  if (j.kind != Json::Kind::kObject) throw BadInput(path + ": not a JSON object");
  const Json* schema = j.Find("schema");
  if (!schema || schema->text != "verlconf.explore")
    throw BadInput(path + ": not conform explore's JSON (schema verlconf.explore)");
  const Json* shard = j.Find("shard");
  if (!shard || shard->kind != Json::Kind::kObject)
    throw BadInput(path + ": the explore run of no shard (run conform explore with --shard I/N)");
  ShardFile f;
  f.path = path;
  f.index = WholeNumber(*shard, "index", path + ": shard");
  f.count = WholeNumber(*shard, "count", path + ": shard");
  if (f.count < 1 || f.index >= f.count)
    throw BadInput(path + ": shard " + std::to_string(f.index) + "/" + std::to_string(f.count) +
                   " is no part of a run");
  RunIdentity& id = f.id;
  id.revision = Member(j, "conform_revision", Json::Kind::kString, path).text;
  id.candidate = Member(j, "candidate", Json::Kind::kString, path).text;
  id.adapter = Member(j, "adapter", Json::Kind::kString, path).text;
  id.impl = Member(j, "impl", Json::Kind::kString, path).text;
  id.reference = Member(j, "reference", Json::Kind::kString, path).text;
  id.only = Member(j, "only", Json::Kind::kString, path).text;
  id.baseline = Member(j, "baseline", Json::Kind::kString, path).text;
  id.seed = static_cast<uint64_t>(WholeNumber(j, "seed", path));
  id.cases = WholeNumber(j, "cases_per_function", path);
  id.dp_cases = WholeNumber(j, "dp_cases_per_function", path);
  for (const Json& c : Member(j, "config", Json::Kind::kArray, path).items) {
    if (c.kind != Json::Kind::kString) throw BadInput(path + ": member 'config' holds a value that is not a string");
    id.config.push_back(c.text);
  }
  f.run = DecodeRun(Member(j, "run", Json::Kind::kObject, path), path);
  return f;
}

MergedRun MergeShards(std::vector<ShardFile> shards) {
  if (shards.empty()) throw BadInput("explore merge: no shard given");
  std::sort(shards.begin(), shards.end(), [](const ShardFile& a, const ShardFile& b) { return a.index < b.index; });
  const ShardFile& first = shards.front();
  MergedRun m;
  m.id = first.id;
  m.count = first.count;
  for (size_t k = 0; k < shards.size(); ++k) {
    const ShardFile& s = shards[k];
    if (const std::string what = Differs(first.id, s.id); !what.empty())
      throw BadInput("explore merge: " + s.path + " and " + first.path + " are shards of different runs: " + what);
    if (s.count != first.count)
      throw BadInput("explore merge: " + s.path + " is a shard of " + std::to_string(s.count) + " parts, " +
                     first.path + " of " + std::to_string(first.count));
    if (k && s.index == shards[k - 1].index)
      throw BadInput("explore merge: part " + std::to_string(s.index) + " given twice (" + shards[k - 1].path +
                     " and " + s.path + ")");
    m.merged.push_back(s.index);
  }
  for (int64_t i = 0, k = 0; i < m.count; ++i) {
    if (k < static_cast<int64_t>(m.merged.size()) && m.merged[static_cast<size_t>(k)] == i)
      ++k;
    else
      m.missing.push_back(i);
  }

  ExploreRun& run = m.run;
  run.candidate_name = first.run.candidate_name;
  run.candidate_versions = first.run.candidate_versions;
  run.reference_versions = first.run.reference_versions;
  run.not_provided = first.run.not_provided;
  run.functions = first.run.functions;
  for (FunctionTally& t : run.functions) {  // the counts start again from 0
    FunctionTally zero;
    zero.spec = t.spec;
    zero.dp_ranks = t.dp_ranks;
    t = zero;
  }
  // A baseline entry covered nothing in the whole run when it covered nothing in any part.
  std::map<std::pair<std::string, int>, int> stale_in;
  for (const ShardFile& s : shards) {
    if (s.run.not_provided != first.run.not_provided)
      throw BadInput("explore merge: " + s.path + " and " + first.path +
                     " explored different functions (the candidate's functions differ)");
    if (s.run.functions.size() != run.functions.size())
      throw BadInput("explore merge: " + s.path + " and " + first.path + " have different rows");
    for (size_t r = 0; r < run.functions.size(); ++r) {
      const FunctionTally& a = s.run.functions[r];
      FunctionTally& t = run.functions[r];
      if (a.spec != t.spec || a.dp_ranks != t.dp_ranks)
        throw BadInput("explore merge: row " + std::to_string(r) + " is " + RowKey(a) + " in " + s.path + " but " +
                       RowKey(t) + " in " + first.path);
      t.AddCounts(a);
      if (a.refused_first >= 0 && (t.refused_first < 0 || a.refused_first < t.refused_first))
        t.refused_first = a.refused_first, t.refused_example = a.refused_example;
    }
    for (const tools::BaselineEntry& b : s.run.stale) {
      if (++stale_in[{b.file, b.line}] == static_cast<int>(shards.size())) run.stale.push_back(b);
    }
    run.explore_seconds += s.run.explore_seconds;
    run.shrink_seconds += s.run.shrink_seconds;
  }

  // One difference per (row, failure), as the engine keys them; beside each, the first case
  // of the shard whose minimal case it keeps (ties of size go to the earliest).
  using Key = std::tuple<const FunctionSpec*, int64_t, Failure>;
  std::map<Key, Difference> seen;
  std::map<Key, int64_t> kept_from;
  for (ShardFile& s : shards)
    for (Difference& d : s.run.differences) {
      const Key key{d.spec, d.dp_ranks, d.failure};
      auto [it, fresh] = seen.try_emplace(key);
      Difference& e = it->second;
      if (fresh) {
        kept_from[key] = d.first_index;
        e = std::move(d);
        continue;
      }
      e.cases += d.cases;
      std::vector<int64_t> both;
      std::set_union(e.case_indices.begin(), e.case_indices.end(), d.case_indices.begin(), d.case_indices.end(),
                     std::back_inserter(both));
      if (both.size() > kKeptCaseIndices) both.resize(kKeptCaseIndices);
      e.case_indices = std::move(both);
      if (d.first_index < e.first_index) {
        e.first_index = d.first_index;
        e.first_regime = d.first_regime;
        e.position = d.position;
      }
      // A sharded row's case is its first one, as unsharded; a shrunk one the smallest.
      const bool keep = e.dp_ranks ? d.first_index < kept_from[key]
                                   : std::make_tuple(Size(d), d.first_index) < std::make_tuple(Size(e), kept_from[key]);
      if (keep) {
        kept_from[key] = d.first_index;
        e.minimal = std::move(d.minimal);
        e.golden = std::move(d.golden);
        e.got = std::move(d.got);
        e.report = std::move(d.report);
        e.trials = d.trials;
        e.shrink_seconds = d.shrink_seconds;
        e.exhausted = d.exhausted;
      }
    }
  for (auto& [key, d] : seen) run.differences.push_back(std::move(d));
  std::sort(run.differences.begin(), run.differences.end(), [](const Difference& a, const Difference& b) {
    return std::tie(a.row, a.first_index, a.position) < std::tie(b.row, b.first_index, b.position);
  });
  FinishDifferences(run);
  return m;
}

}  // namespace verlconf::explore
