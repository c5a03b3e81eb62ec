// Shards of one explore run merged into the run an unsharded explore gives: the same rows
// and counts, the same differences (each found by any shard, kept once, with the smallest
// minimal case any shard shrank it to), in the order a serial run meets them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/explore/engine.h"

namespace verlconf::explore {

// What every shard of one run shares; a merge refuses shards that differ in any of it.
struct RunIdentity {
  std::string revision, candidate, adapter, impl, reference, only, baseline;
  uint64_t seed = 0;
  int64_t cases = 0, dp_cases = 0;
  std::vector<std::string> config;  // --config, as given
};

struct ShardFile {
  std::string path;
  int64_t index = 0, count = 1;
  RunIdentity id;
  ExploreRun run;
};

// A shard's JSON (`conform explore --shard I/N --format json`, or its --out's explore.json);
// BadInput naming the file for anything else: not a regular file, not JSON, no shard, a
// malformed run.
ShardFile ReadShard(const std::string& path);

struct MergedRun {
  RunIdentity id;
  int64_t count = 0;                     // N: the parts the run was cut into
  std::vector<int64_t> merged, missing;  // the parts given, and those not given
  ExploreRun run;
};

// BadInput for shards of different runs (naming the member that differs and both files), a
// part given twice, or rows that do not line up. Missing parts are listed, not refused:
// the caller decides.
MergedRun MergeShards(std::vector<ShardFile> shards);

}  // namespace verlconf::explore
