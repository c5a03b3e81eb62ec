// The perf anchor: verl 0.9.0's own timings of its functions on one H200 (torch
// 2.11.0+cu130, fp32, B=4096 x T=8192, groups of 16), measured outside this repository
// and copied into anchor.cc, which is their record here. cuda_bench prints each row next to the
// registry entry (and configuration) it times, so the comparison with verl is in the
// same table even when bench_verl.py could not run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "oracle/core/case.h"

namespace verlconf::bench {

inline constexpr int64_t kAnchorBatch = 4096;
inline constexpr int64_t kAnchorTokens = 8192;
inline constexpr int64_t kAnchorGroup = 16;
inline constexpr double kAnchorCopyGBps = 3891.9;
inline constexpr double kTargetFactor = 1.5;  // the targets: within 1.5x of the roofline

struct AnchorRow {
  std::string label;   // the anchor's row name, e.g. "loss/vanilla_fwd_bwd"
  std::string family;  // the registry entry it times
  std::string name;
  std::map<std::string, ConfigValue> config;  // on top of verl's defaults
  double verl_ms;                             // verl 0.9.0 eager
  double roofline_ms;                         // the anchor's minimal traffic / 3891.9 GB/s
  // The anchor's target is 1.5x its roofline, except gae (3x: a scan over T).
  double target_factor = kTargetFactor;
};

const std::vector<AnchorRow>& AnchorRows();

}  // namespace verlconf::bench
