// cuda_bench: every registry entry with a CUDA implementation, timed on the device at
// the perf anchor's shape (B=4096 x T=8192) and smaller ones, against the roofline of
// its own minimal traffic at the copy bandwidth measured in the same run, and against
// verl 0.9.0's own timings on one H200 (tools/bench/anchor.cc).
//
//   cuda_bench [--shapes BxT,...] [--repeats R] [--warmup W] [--only KEY,...] [--device N]
//              [--system device|host] [--budget-s S] [--json PATH]
//
// What a figure is: the median over R repeats of the entry's device work on inputs
// already in device memory (cuda_impl/core/system.h, BenchProbe), timed with CUDA events
// on the entry's stream; the uploads before and the downloads after are not in it.
// --system host runs the same entries through Thrust's host system and reports host
// wall-clock milliseconds of whole entry calls: a check of this program's plumbing on a
// machine without a GPU, never a performance figure.
//
// Exit codes: 0 measured, or skipped because no device is usable (the JSON then says
// "status": "skipped" with the reason); 1 a CUDA error or an entry that failed at the
// smallest shape's conformance check; 2 usage.
#include "tools/bench/cuda_bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.h"
#include "cuda_impl/kl/kl_penalty_kernel.h"
#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/judge/judge.h"
#include "oracle/kl/kl_penalty.h"
#include "oracle/registry.h"
#include "tools/bench/alloc_watch.h"
#include "tools/bench/anchor.h"
#include "tools/bench/bench_case.h"
#include "tools/bench/bench_kernels.h"

namespace verlconf::bench {
namespace {

using cuda::Check;
using cuda::DeviceBuffer;

struct Shape {
  int64_t rows, tokens;
};

struct Options {
  std::vector<Shape> shapes = {{kAnchorBatch, kAnchorTokens}, {1024, 2048}, {256, 512}};
  int repeats = 10, warmup = 2, device = 0;
  std::vector<std::string> only;
  bool host = false;
  double budget_s = 0;  // 0: no limit
  std::string json;
};

constexpr const char* kUsage =
    "usage: cuda_bench [--shapes BxT,...] [--repeats R] [--warmup W] [--only KEY,...] [--device N]\n"
    "                  [--system device|host] [--budget-s S] [--json PATH]\n"
    "  --shapes    default 4096x8192,1024x2048,256x512 (the first is the perf anchor's shape)\n"
    "  --only      labels (family/name, or an anchor row such as rc/token_is) or family names\n"
    "  --system    host: the same entries through Thrust's host system, wall-clock, for a\n"
    "              plumbing check without a GPU (no performance figure)\n"
    "  --budget-s  stop starting new rows after S seconds; the rest are listed as not run\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct SkipRow : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t ParseInt(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    throw UsageError(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                     v + "'");
  return x;
}

std::vector<std::string> SplitComma(const std::string& flag, const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw UsageError(flag + ": empty item in '" + v + "'");
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// `bazel run` starts binaries in their runfiles tree; paths the user typed are
// relative to where they typed them.
std::string ResolveUserPath(const std::string& p) {
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (p.empty() || p[0] == '/' || !wd || !*wd) return p;
  return std::string(wd) + "/" + p;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (a.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + a + "'");
      if (i + 1 >= argc) throw UsageError("option " + a + " needs a value (or is unknown)");
      v = argv[++i];
    }
    if (a == "--shapes") {
      o.shapes.clear();
      for (const std::string& s : SplitComma(a, v)) {
        const size_t x = s.find('x');
        if (x == std::string::npos) throw UsageError("--shapes: expected BxT, got '" + s + "'");
        o.shapes.push_back(
            {ParseInt(a, s.substr(0, x), 1, int64_t{1} << 20), ParseInt(a, s.substr(x + 1), 1, int64_t{1} << 20)});
      }
    } else if (a == "--repeats") {
      o.repeats = static_cast<int>(ParseInt(a, v, 1, 100000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(ParseInt(a, v, 0, 100000));
    } else if (a == "--device") {
      o.device = static_cast<int>(ParseInt(a, v, 0, 1023));
    } else if (a == "--only") {
      o.only = SplitComma(a, v);
    } else if (a == "--system") {
      if (v != "device" && v != "host") throw UsageError("--system: expected device or host, got '" + v + "'");
      o.host = v == "host";
    } else if (a == "--budget-s") {
      o.budget_s = static_cast<double>(ParseInt(a, v, 1, 86400));
    } else if (a == "--json") {
      if (v.empty()) throw UsageError("--json: empty path");
      o.json = ResolveUserPath(v);
    } else {
      throw UsageError("unknown option " + a);
    }
  }
  return o;
}

void WriteText(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  // Written whole to a temporary and renamed, so a reader never sees half a report.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text << "\n";
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string Fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// Median of repeats, each launch between its own pair of events.
template <typename F>
double TimeIt(int warmup, int repeats, cudaStream_t s, F&& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  Check(cudaStreamSynchronize(s), "warm-up");
  std::vector<cudaEvent_t> ev(2 * repeats);
  for (auto& e : ev) Check(cudaEventCreate(&e), "cudaEventCreate");
  for (int k = 0; k < repeats; ++k) {
    Check(cudaEventRecord(ev[2 * k], s), "cudaEventRecord");
    launch();
    Check(cudaEventRecord(ev[2 * k + 1], s), "cudaEventRecord");
  }
  Check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  std::vector<double> ms(repeats);
  for (int k = 0; k < repeats; ++k) {
    float t = 0;
    Check(cudaEventElapsedTime(&t, ev[2 * k], ev[2 * k + 1]), "cudaEventElapsedTime");
    ms[k] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The device copy bandwidth at a shape, read + write counted, as in the anchor: the
// better of cudaMemcpy D2D and a plain copy kernel.
struct Copy {
  double memcpy_gbps = 0, kernel_gbps = 0, gbps = 0;
};
Copy MeasureCopy(int64_t n, const Options& o, cudaStream_t s) {
  DeviceBuffer<float> a(n), b(n);
  Check(cudaMemsetAsync(a.get(), 0, n * sizeof(float), s), "cudaMemset");
  const double bytes = 8.0 * static_cast<double>(n);
  Copy c;
  c.memcpy_gbps = bytes / 1e6 / TimeIt(o.warmup, o.repeats, s, [&] {
                    Check(cudaMemcpyAsync(b.get(), a.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s), "copy");
                  });
  c.kernel_gbps = bytes / 1e6 / TimeIt(o.warmup, o.repeats, s, [&] { CopyFloats(a.get(), b.get(), n, 0, s); });
  c.gbps = std::max(c.memcpy_gbps, c.kernel_gbps);
  return c;
}

struct Row {
  std::string label, family, name, status = "ok", detail;
  int64_t rows = 0, tokens = 0;
  double ms = 0, min_ms = 0, max_ms = 0, bytes = 0, roofline_ms = 0;
  size_t workspace_peak = 0, window_allocs = 0, window_alloc_peak = 0;
  int passes = 0;
  std::string conformance;  // at the smallest shape: the judge's outcome against the oracle
  const AnchorRow* anchor = nullptr;
  bool anchor_shape = false;
};

// The judge's outcome of `result` against the oracle on the same case.
std::string Conformance(const FunctionSpec& spec, const Case& c, const RunFn& impl) {
  Case golden = c;
  try {
    const Result want = spec.oracle(c);
    golden.outputs = want.outputs;
    golden.grads = want.grads;
    golden.metrics = want.metrics;
  } catch (const VerlError& e) {
    golden.expect_error = std::string(e.what());
  }
  const CaseReport r = CheckImplementation(spec, golden, impl);
  return OutcomeName(r.outcome);
}

Row RunItem(const BenchItem& item, const Case& c, const Options& o, const Copy& copy, bool check, Row row) {
  const FunctionSpec& spec = *item.spec;
  const RunFn& impl = o.host ? spec.cuda_host : spec.cuda;
  Result result;
  cuda::BenchProbe probe;
  probe.warmup = o.warmup;
  probe.repeats = o.repeats;
  probe.window_begin = [] { BeginAllocWatch(); };
  AllocStats stats;
  probe.window_end = [&stats] { stats = EndAllocWatch(); };
  try {
    if (o.host) {
      const auto t0 = std::chrono::steady_clock::now();
      result = impl(c);
      row.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      row.min_ms = row.max_ms = row.ms;
    } else {
      cuda::SetBenchProbe(&probe);
      try {
        result = impl(c);
      } catch (...) {
        cuda::SetBenchProbe(nullptr);
        throw;
      }
      cuda::SetBenchProbe(nullptr);
      row.ms = probe.ms;
      std::sort(probe.repeat_ms.begin(), probe.repeat_ms.end());
      if (!probe.repeat_ms.empty()) row.min_ms = probe.repeat_ms.front(), row.max_ms = probe.repeat_ms.back();
      row.passes = probe.passes;
      row.workspace_peak = probe.workspace_peak_bytes;
      row.window_allocs = stats.calls;
      row.window_alloc_peak = stats.peak;
      if (probe.passes == 0) row.status = "error", row.detail = "the entry ran no device pass";
    }
  } catch (const VerlError& e) {
    // verl raises for these inputs ("full"): the CUDA entry raises as the oracle does.
    row.status = "raises";
    row.detail = e.what();
    return row;
  }
  row.bytes = MinimalTrafficBytes(c, result);
  if (!o.host) row.roofline_ms = row.bytes / (copy.gbps * 1e6);
  if (check) {
    row.conformance = Conformance(spec, c, impl);
    if (row.conformance != "PASSED" && row.conformance != "MISTRUSTED") row.status = "error";
  }
  return row;
}

// verl's name -> kl_penalty_float4's kind, as cuda_impl/kl/kl_penalty.cuh numbers them.
struct Float4Row {
  std::string name;
  int64_t rows = 0, tokens = 0;
  double ms = 0, entry_ms = 0;
};

std::vector<Float4Row> BenchFloat4(int64_t n, const Options& o, cudaStream_t s, const std::vector<Row>& rows) {
  std::vector<Float4Row> out;
  DeviceBuffer<float> lp(n), ref(n), kl(n), grad(n);
  FillLogProbs(lp.get(), ref.get(), n, 20261201, 0.5f, s);
  Check(cudaGetLastError(), "FillLogProbs");
  for (const Row& r : rows) {
    if (r.family != "kl" || r.status != "ok") continue;
    const oracle::KlEstimator e = oracle::ParseKlName(r.name);
    Float4Row f;
    f.name = r.name;
    f.entry_ms = r.ms;
    f.ms = TimeIt(o.warmup, o.repeats, s, [&] {
      cuda::kl_penalty_float4(lp.get(), ref.get(), kl.get(), grad.get(), n, static_cast<int>(e.kind),
                              e.straight_through, s);
    });
    out.push_back(f);
  }
  return out;
}

int Run(const Options& o) {
  JsonWriter j;
  j.BeginObject().Key("schema").String("verlconf-cuda-bench/2").Key("created").String(UtcNow());
  j.Key("system").String(o.host ? "host" : "device").Key("repeats").Int(o.repeats).Key("warmup").Int(o.warmup);
  j.Key("shapes").BeginArray();
  for (const Shape& s : o.shapes) j.BeginArray().Int(s.rows).Int(s.tokens).EndArray();
  j.EndArray();
  cudaStream_t s = nullptr;
  if (!o.host) {
    const std::string why = cuda::DeviceUnavailableReason();
    if (!why.empty()) {
      std::cout << "cuda_bench: SKIPPED: " << why << "\n";
      j.Key("status").String("skipped").Key("reason").String(why).EndObject();
      WriteText(o.json, j.str());
      return 0;
    }
    int count = 0;
    Check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (o.device >= count)
      throw UsageError("--device " + std::to_string(o.device) + ": only " + std::to_string(count) + " device(s)");
    Check(cudaSetDevice(o.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    Check(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::printf("cuda_bench: %s (sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MB), driver %d, runtime %d\n", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0,
                prop.l2CacheSize / 1e6, driver, runtime);
    j.Key("device").BeginObject().Key("name").String(prop.name);
    j.Key("compute_capability").String(std::to_string(prop.major) + "." + std::to_string(prop.minor));
    j.Key("sm_count").Int(prop.multiProcessorCount).Key("l2_bytes").Int(prop.l2CacheSize);
    j.Key("driver").Int(driver).Key("runtime").Int(runtime).EndObject();
    Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  } else {
    std::printf(
        "cuda_bench: --system host: Thrust's host system, wall-clock of whole entry calls "
        "(a plumbing check, not a performance figure)\n");
  }

  const std::vector<BenchItem> items = BenchItems(o.only);
  if (items.empty()) throw UsageError("--only selects no entry with a CUDA implementation");
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // The smallest shape's results are also judged against the oracle (a timing of an
  // entry that computes garbage means nothing); the larger ones are the tests' business.
  size_t smallest = 0;
  for (size_t i = 1; i < o.shapes.size(); ++i)
    if (o.shapes[i].rows * o.shapes[i].tokens < o.shapes[smallest].rows * o.shapes[smallest].tokens) smallest = i;

  bool failed = false;
  std::vector<std::string> not_run;
  std::vector<Row> all_rows;
  std::vector<std::pair<Shape, Copy>> copies;
  std::vector<Float4Row> float4_rows;
  for (size_t si = 0; si < o.shapes.size(); ++si) {
    const Shape& shape = o.shapes[si];
    const bool anchor_shape = shape.rows == kAnchorBatch && shape.tokens == kAnchorTokens;
    Copy copy;
    std::printf("\nshape B=%lld x T=%lld fp32", static_cast<long long>(shape.rows),
                static_cast<long long>(shape.tokens));
    if (!o.host) {
      copy = MeasureCopy(shape.rows * shape.tokens, o, s);
      std::printf(": copy bandwidth (read+write) %.1f GB/s (memcpy %.1f, kernel %.1f; anchor H200 %.1f)", copy.gbps,
                  copy.memcpy_gbps, copy.kernel_gbps, kAnchorCopyGBps);
      copies.push_back({shape, copy});
    }
    std::printf("\n");
    std::printf("%-44s %7s %9s %8s %9s %7s %7s %9s %9s %9s %s\n", "entry", "T", o.host ? "host ms" : "ms", "GB/s",
                "roof ms", "x roof", "meets", "wksp MB", "verl ms", "verl/us", "conformance");
    CaseMaker maker;
    std::vector<Row> rows;
    for (const BenchItem& item : items) {
      if (o.budget_s > 0 && elapsed_s() > o.budget_s) {
        not_run.push_back(item.label + "@" + std::to_string(shape.rows) + "x" + std::to_string(shape.tokens));
        continue;
      }
      Row row;
      row.label = item.label, row.family = item.spec->family, row.name = item.spec->name;
      row.rows = shape.rows, row.tokens = TokensFor(*item.spec, shape.tokens), row.anchor = item.anchor;
      row.anchor_shape = anchor_shape;
      try {
        // The names verl only raises for ("full") have no generator: nothing to time.
        if (!item.spec->generate) throw SkipRow("the registry has no input generator for it (verl only raises)");
        const Case c = maker.Make(item, shape.rows, shape.tokens, kAnchorGroup);
        row = RunItem(item, c, o, copy, si == smallest, row);
      } catch (const SkipRow& e) {
        row.status = "skipped";
        row.detail = e.what();
      } catch (const std::exception& e) {
        row.status = "error";
        row.detail = e.what();
      }
      failed |= row.status == "error";
      const double target = row.roofline_ms * (row.anchor ? row.anchor->target_factor : kTargetFactor);
      const bool compare_verl = row.anchor && anchor_shape && !o.host && row.status == "ok";
      if (row.status == "ok" && o.host) {
        std::printf("%-44s %7lld %9.4f %8s %9s %7s %7s %9s %9s %9s %s\n", row.label.c_str(),
                    static_cast<long long>(row.tokens), row.ms, "-", "-", "-", "-", "-", "-", "-",
                    row.conformance.empty() ? "-" : row.conformance.c_str());
      } else if (row.status == "ok") {
        std::printf("%-44s %7lld %9.4f %8.1f %9.4f %7.2f %7s %9.2f %9s %9s %s\n", row.label.c_str(),
                    static_cast<long long>(row.tokens), row.ms, row.bytes / row.ms / 1e6, row.roofline_ms,
                    row.ms / row.roofline_ms, row.ms <= target ? "yes" : "NO", row.workspace_peak / 1e6,
                    compare_verl ? Fixed(row.anchor->verl_ms, 3).c_str() : "-",
                    compare_verl ? Fixed(row.anchor->verl_ms / row.ms, 1).c_str() : "-",
                    row.conformance.empty() ? "-" : row.conformance.c_str());
      } else {
        std::printf("%-44s %s: %s\n", row.label.c_str(), row.status.c_str(), row.detail.c_str());
      }
      rows.push_back(row);
    }
    if (!o.host) {
      std::vector<Float4Row> f4 = BenchFloat4(shape.rows * shape.tokens, o, s, rows);
      if (!f4.empty()) std::printf("kl_penalty_float4 (hand-written kernel) vs the CCCL entry, value + gradient:\n");
      for (Float4Row& f : f4) {
        std::printf("  %-14s float4 %.4f ms, CCCL entry %.4f ms (entry / float4 %.2f)\n", f.name.c_str(), f.ms,
                    f.entry_ms, f.entry_ms / f.ms);
        f.rows = shape.rows, f.tokens = shape.tokens;
        float4_rows.push_back(f);
      }
    }
    all_rows.insert(all_rows.end(), rows.begin(), rows.end());
  }
  j.Key("results").BeginArray();
  for (const Row& row : all_rows) {
    const double target = row.roofline_ms * (row.anchor ? row.anchor->target_factor : kTargetFactor);
    const bool compare_verl = row.anchor && row.anchor_shape && !o.host && row.status == "ok";
    j.BeginObject().Key("label").String(row.label).Key("family").String(row.family).Key("name").String(row.name);
    j.Key("rows").Int(row.rows).Key("tokens").Int(row.tokens);
    j.Key("status").String(row.status);
    if (!row.detail.empty()) j.Key("detail").String(row.detail);
    if (row.status == "ok") {
      j.Key(o.host ? "host_wall_ms" : "ms").Number(row.ms);
      if (!o.host) {
        j.Key("min_ms").Number(row.min_ms).Key("max_ms").Number(row.max_ms).Key("device_passes").Int(row.passes);
        j.Key("gbps").Number(row.bytes / row.ms / 1e6).Key("roofline_ms").Number(row.roofline_ms);
        j.Key("ratio_to_roofline").Number(row.ms / row.roofline_ms).Key("target_ms").Number(target);
        j.Key("meets_target").Bool(row.ms <= target);
        j.Key("workspace_peak_bytes").Int(static_cast<int64_t>(row.workspace_peak));
        j.Key("allocations_in_timed_repeats").Int(static_cast<int64_t>(row.window_allocs));
      }
      j.Key("minimal_traffic_bytes").Number(row.bytes);
      if (!row.conformance.empty()) j.Key("conformance").String(row.conformance);
      if (row.anchor) {
        j.Key("anchor").BeginObject().Key("row").String(row.anchor->label);
        j.Key("verl_eager_ms").Number(row.anchor->verl_ms).Key("roofline_ms").Number(row.anchor->roofline_ms);
        j.Key("shape_matches").Bool(row.anchor_shape);
        if (compare_verl) j.Key("speedup_vs_verl_eager").Number(row.anchor->verl_ms / row.ms);
        j.EndObject();
      }
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("copy_bandwidth").BeginArray();
  for (const auto& [shape, copy] : copies) {
    j.BeginObject().Key("rows").Int(shape.rows).Key("tokens").Int(shape.tokens).Key("gbps").Number(copy.gbps);
    j.Key("memcpy_gbps").Number(copy.memcpy_gbps).Key("copy_kernel_gbps").Number(copy.kernel_gbps).EndObject();
  }
  j.EndArray();
  j.Key("kl_float4").BeginArray();
  for (const Float4Row& f : float4_rows) {
    j.BeginObject().Key("name").String(f.name).Key("rows").Int(f.rows).Key("tokens").Int(f.tokens);
    j.Key("float4_ms").Number(f.ms).Key("cccl_entry_ms").Number(f.entry_ms).EndObject();
  }
  j.EndArray();
  j.Key("not_run_budget").BeginArray();
  for (const std::string& n : not_run) j.String(n);
  j.EndArray();
  j.Key("status").String(failed ? "error" : "ok").EndObject();
  if (!not_run.empty())
    std::printf("\n%zu rows not run: the --budget-s of %.0f s was spent\n", not_run.size(), o.budget_s);
  std::printf(
      "\nms: median device time of the entry on device-resident inputs; roof: its minimal traffic (inputs "
      "read, outputs and gradients written once, fp32) / the copy bandwidth; meets: within the target "
      "factor (1.5x, gae 3x); verl ms: verl 0.9.0 eager from the perf anchor (anchor shape only).\n");
  WriteText(o.json, j.str());
  if (s) cudaStreamDestroy(s);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace verlconf::bench

int verlconf::bench::BenchMain(int argc, char** argv) {
  using verlconf::bench::Options;
  using verlconf::bench::UsageError;
  Options o;
  try {
    o = verlconf::bench::Parse(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "cuda_bench: " << e.what() << "\n" << verlconf::bench::kUsage;
    return 2;
  }
  try {
    return verlconf::bench::Run(o);
  } catch (const UsageError& e) {
    std::cerr << "cuda_bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cuda_bench: error: " << e.what() << "\n";
    return 1;
  }
}
