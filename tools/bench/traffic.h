// The traffic report: for every CUDA entry, the bytes its passes move at the perf anchor's
// shape (B=4096 x T=8192, float32) against its minimal traffic, counted on the host.
//
// An entry runs through its host twin (the cuda-host slot) with a TrafficLedger installed
// (cuda_impl/core/traffic.h), so every row template records the footprint it declares and
// its launch, and a Thrust pass outside the templates marks the entry as not counted. The
// anchor's shape is too large to run on the CPU in CI; the bytes of a call are
// a B T + b B + c T + d in its shape (token matrices, row vectors, token-long vectors,
// scalars), so four host runs at small shapes fit the four coefficients and the fit is
// evaluated at the anchor, for the declared bytes and for the minimal ones alike.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda_impl/core/traffic.h"
#include "oracle/core/function_spec.h"
#include "tools/bench/bench_case.h"

namespace verlconf::bench {

// a B T + b B + c T + d.
struct BytesModel {
  double a = 0, b = 0, c = 0, d = 0;
  double At(double rows, double tokens) const { return a * rows * tokens + b * rows + c * tokens + d; }
};

// The model through f at (r1, t1), (r2, t1), (r1, t2), (r2, t2): f[0..3] in that order.
BytesModel FitBytes(int64_t r1, int64_t r2, int64_t t1, int64_t t2, const double f[4]);

// An entry the budget excuses from 1.5x, with the bound it is held to instead and why.
struct TrafficException {
  std::string label;
  double bound;
  std::string reason;
};
const std::vector<TrafficException>& TrafficExceptions();

struct TrafficRow {
  std::string label;
  // "ok", "over budget", "not counted" (a raw Thrust pass), "raises" (verl refuses the
  // defaults: nothing runs), "error" (the host run failed).
  std::string verdict;
  std::string detail;
  double moved = 0, minimal = 0;  // bytes at the anchor's shape
  int64_t launches = 0, host_syncs = 0;
  double budget = 1.5;
  std::map<std::string, int64_t> raw_passes;
  double ratio() const { return minimal > 0 ? moved / minimal : 0; }
  bool within() const { return verdict == "ok"; }
};

// The row of `item`, its entry run through `impl` (normally its cuda-host slot) at the
// four fit shapes.
TrafficRow MeasureTraffic(const BenchItem& item, const RunFn& impl, CaseMaker& maker);

// The budget applied to a measured row (ratio against 1.5x or its exception's bound).
void JudgeTraffic(TrafficRow& row, const std::vector<TrafficException>& exceptions);

// The exceptions that excuse nothing any more (their entry is within 1.5x, or gone),
// each as a line saying so.
std::vector<std::string> StaleExceptions(const std::vector<TrafficRow>& rows,
                                         const std::vector<TrafficException>& exceptions);

// The command: `traffic [--only KEY,...] [--json PATH]`; exit 0 when every row is within
// its budget and no exception is stale, 1 otherwise, 2 on a usage error.
int TrafficMain(int argc, char** argv);

}  // namespace verlconf::bench
