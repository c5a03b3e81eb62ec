// Where a CUDA entry runs, and how a family registers one entry for both places: the
// same function fills the registry's `cuda` slot (on the device) and its `cuda-host`
// slot (the identical code through Thrust's host system; see system.cuh).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/case.h"

namespace verlconf::cuda {

enum class System { kDevice, kHost };

using SystemRunFn = std::function<Result(System, const Case&)>;

// Registers run for (family, name) in the cuda-host slot, and with `with_device` in the
// cuda slot too. Returns true.
bool RegisterCudaEntryIn(bool with_device, const std::string& family, const std::string& name, SystemRunFn run);

// Registers run for (family, name) in the slots this translation unit was compiled for:
// nvcc's build has device code and fills both the cuda and the cuda-host slot; the host
// copy (cuda.bzl, compiled by the C++ compiler through Thrust's CPP system) fills only
// cuda-host. Internal linkage: the two builds of one source differ here, and each must
// keep its own. Call from a static initialiser of an alwayslink library.
static inline bool RegisterCudaEntry(const std::string& family, const std::string& name, SystemRunFn run) {
#ifdef __CUDACC__
  return RegisterCudaEntryIn(true, family, name, std::move(run));
#else
  return RegisterCudaEntryIn(false, family, name, std::move(run));
#endif
}

// Device timing of entry calls, for tools/bench. While a probe is installed on the
// calling thread, every RunEntry pass (WithPolicy) on the device runs it `warmup` times
// and then `repeats` times, each repeat between two CUDA events on the entry's stream;
// the median of each WithPolicy call is added to `ms`, and the workspace's peak to
// `workspace_peak_bytes`. So the figure is the entry's device work on inputs already in
// device memory (the uploads before and the downloads after are not in it), and a
// WithPolicy function must be idempotent: it never writes its inputs and rewrites all of
// its outputs. The host system ignores the probe.
struct BenchProbe {
  int warmup = 3;
  int repeats = 20;
  double ms = 0;                    // sum over the call's WithPolicy passes of their medians
  std::vector<double> repeat_ms;    // the repeats of the last pass, for the spread
  size_t workspace_peak_bytes = 0;  // the largest peak of the call's workspaces
  int passes = 0;                   // WithPolicy calls seen
  // Called around the timed repeats (after the warm-up), e.g. to watch allocations.
  std::function<void()> window_begin, window_end;
};

// Installs `probe` (nullptr removes it) for the calling thread; returns the previous one.
BenchProbe* SetBenchProbe(BenchProbe* probe);
BenchProbe* CurrentBenchProbe();

}  // namespace verlconf::cuda
