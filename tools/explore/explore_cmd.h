// `conform explore`: generated cases judged against the live oracle (or verl itself), every
// difference shrunk to a minimal case, written as a replayable fixture and a Python repro.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace verlconf::explore {

struct ExploreCommand {
  std::string adapter;               // as given ("" for --impl)
  std::string python;                // the interpreter, resolved
  std::string impl;                  // "" with --adapter; else oracle, cuda or cuda-host
  std::string reference = "oracle";  // or "verl": verl's own adapter in --python
  std::string out;                   // resolved; "" to keep no files
  std::string report;                // Markdown file, or ""
  std::string junit;                 // JUnit XML file, or ""
  std::string only;
  std::string baseline;  // accepted differences (tools/cli/baseline.h), or ""
  bool json = false;
  int jobs = 1;
  uint64_t seed = 0;
  int64_t cases = 100;
  double shrink_seconds = 25;
  int64_t call_timeout = 600;       // seconds one adapter call may take (0: none)
  int64_t dp_cases = -1;            // sharded cases per function and k; -1: cases / 10, at least 1
  std::vector<std::string> config;  // --config KEY=V[,V...], as given
  std::string argv0;
  std::string display;  // how the user runs conform, for the replay lines
  // --shard I/N: this run judges part I of N (engine.h); its JSON then carries the run
  // for `explore merge`. 0 parts: the whole run.
  int64_t shard_index = 0, shard_count = 0;
  // Set by a merge: the parts it was given of how many, for the reports to say so.
  std::vector<int64_t> merged_parts, missing_parts;
  int64_t merged_count = 0;
};

int RunExploreCommand(const ExploreCommand& o, std::ostream& out);

// `conform explore merge SHARD.json...`: the shards of one run, reported as that run.
struct ExploreMergeCommand {
  std::vector<std::string> shards;  // resolved paths
  std::string out, report, junit;   // as explore's
  bool json = false;
  bool partial = false;  // report what the given parts hold even where parts are missing
  std::string argv0, display;
};

int RunExploreMerge(const ExploreMergeCommand& m, std::ostream& out);

}  // namespace verlconf::explore
