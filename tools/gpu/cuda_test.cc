// cuda_impl on the device. Runs on a GPU machine (tools/gpu/gpu_check.sh); elsewhere the
// device tests skip with the reason and only the registry bookkeeping runs. The same
// code through Thrust's host system is held to the goldens and the oracle in CI
// (cuda_host_test); here it is the device's turn: goldens, large shapes, bitwise
// determinism, and agreement with the host system.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_impl/core/device.h"
#include "oracle/core/errors.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"
#include "properties/cuda_coverage.h"
#include "properties/cuda_host_check.h"
#include "tools/cli/paths.h"
#include "tools/h5/golden_set.h"

namespace verlconf {
namespace {

// The entries with a cuda slot: the functions cuda_impl registered.
std::vector<const FunctionSpec*> CudaSpecs() {
  std::vector<const FunctionSpec*> v;
  for (const auto& s : Registry())
    if (s.Implementation(Impl::kCuda)) v.push_back(&s);
  return v;
}

std::string Key(const FunctionSpec& s) { return s.family + "/" + s.name; }

// Linking cuda_impl fills cuda slots (a registration naming no entry stops the
// registry's build, so reaching here means every registration found its entry).
TEST(CudaRegistry, SlotsAreFilled) { EXPECT_FALSE(CudaSpecs().empty()); }

// nvcc's build of a source registers both CUDA slots, so they name the same functions.
TEST(CudaRegistry, SlotsComeInPairs) {
  for (const auto& s : Registry())
    EXPECT_EQ(s.Implementation(Impl::kCuda) != nullptr, s.Implementation(Impl::kCudaHost) != nullptr)
        << s.family << "/" << s.name;
}

// Every registry function has both CUDA entries but the exceptions (properties/cuda_coverage.h).
TEST(CudaRegistry, EveryEntryHasBothSlotsButTheExceptions) {
  for (const Impl impl : {Impl::kCuda, Impl::kCudaHost})
    for (const std::string& problem : testing::CudaCoverageProblems(impl)) ADD_FAILURE() << problem;
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda::DeviceUnavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

Case Generated(const FunctionSpec& spec, uint64_t seed, int64_t rows, int64_t cols) {
  Case c = testing::RandomCase(spec, seed, rows, cols, /*mask_rows=*/false);
  c.name = "seed" + std::to_string(seed) + "_" + std::to_string(rows) + "x" + std::to_string(cols);
  return c;
}

// `reference`'s result as the golden of c; false when the reference raises verl's
// error (then the case is not compared here: the host tests hold the error classes).
bool WithReference(Case& c, const RunFn& reference) {
  Result want;
  try {
    want = reference(c);
  } catch (const VerlError&) {
    return false;
  }
  c.outputs = want.outputs;
  c.grads = want.grads;
  c.metrics = want.metrics;
  return true;
}

bool Conforms(const CaseReport& r) { return r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted; }

// Runs check(spec) for every CUDA function on all host cores and reports each
// non-empty answer as a failure. Generating and judging a large case is host work of
// seconds per function; the GPU machine has many cores and the entries share nothing
// (each call has its own stream and workspace), so the functions run side by side.
void ForEachFunctionInParallel(const std::function<std::string(const FunctionSpec&)>& check) {
  std::vector<const FunctionSpec*> specs;
  for (const FunctionSpec* s : CudaSpecs())
    if (s->generate) specs.push_back(s);  // "full" has none: its goldens are its cases
  std::vector<std::string> why(specs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < specs.size(); i = next++) {
      try {
        why[i] = check(*specs[i]);
      } catch (const std::exception& e) {
        why[i] = Key(*specs[i]) + ": " + e.what();
      }
    }
  };
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  for (const std::string& w : why) EXPECT_EQ(w, "");
}

// Every float32 golden case of every CUDA function, on the device.
TEST_F(CudaDevice, EveryFloat32GoldenCaseConforms) {
  const fixtures::GoldenSet goldens = fixtures::GoldenSet::Load(tools::BundledGoldenDir(nullptr));
  std::map<std::string, int> passed;
  for (const auto& [key, c] : goldens.index) {
    const FunctionSpec* spec = SpecFor(*c);
    if (!spec || !spec->Implementation(Impl::kCuda) || c->dtype != DType::kFloat32) continue;
    const CaseReport r = CheckImplementation(*spec, *c, spec->cuda);
    passed[Key(*spec)] += r.outcome == Outcome::kPassed;
    EXPECT_TRUE(Conforms(r)) << r.Describe();
  }
  for (const FunctionSpec* s : CudaSpecs()) EXPECT_GT(passed[Key(*s)], 0) << Key(*s) << ": no PASSED golden case";
}

// Generated inputs against the float64 oracle, from one-token rows to the large shapes
// verl trains at (B up to 4096, T up to 16384).
TEST_F(CudaDevice, MatchesOracleOnGeneratedCases) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},      {1, 16384},  {4096, 1},   {37, 129},
                                                           {512, 4096}, {4096, 256}, {256, 16384}};
  std::atomic<int> compared{0};
  ForEachFunctionInParallel([&](const FunctionSpec& spec) {
    std::string why;
    for (size_t k = 0; k < shapes.size(); ++k) {
      Case golden = Generated(spec, 11 + k, shapes[k].first, shapes[k].second);
      if (!WithReference(golden, spec.oracle)) continue;
      const CaseReport r = CheckImplementation(spec, golden, spec.cuda);
      if (!Conforms(r)) why += r.Describe() + "\n";
      ++compared;
    }
    return why;
  });
  EXPECT_GT(compared.load(), 0);
}

bool BitwiseEqual(const std::map<std::string, Array>& a, const std::map<std::string, Array>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, arr] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.shape != arr.shape ||
        std::memcmp(arr.data.data(), it->second.data.data(), arr.data.size() * sizeof(double)) != 0)
      return false;
  }
  return true;
}

// Deterministic by construction (no float atomics): two runs on the device are bitwise
// identical in outputs, gradients and metrics, at the perf anchor's shape (4096 x 8192:
// many blocks per row and per reduction, so any order-dependent step would show).
TEST_F(CudaDevice, BitwiseDeterministic) {
  ForEachFunctionInParallel([](const FunctionSpec& spec) -> std::string {
    const Case c = Generated(spec, 99, 4096, 8192);
    Result a, b;
    try {
      a = spec.cuda(c);
      b = spec.cuda(c);
    } catch (const VerlError&) {
      return "";
    }
    std::string why;
    if (!BitwiseEqual(a.outputs, b.outputs)) why += Key(spec) + ": outputs differ between two runs\n";
    if (!BitwiseEqual(a.grads, b.grads)) why += Key(spec) + ": gradients differ between two runs\n";
    bool same_metrics = a.metrics.size() == b.metrics.size();
    for (const auto& [k, v] : a.metrics)
      same_metrics = same_metrics && b.metrics.count(k) && std::memcmp(&v, &b.metrics.at(k), sizeof v) == 0;
    if (!same_metrics) why += Key(spec) + ": metrics differ between two runs\n";
    return why;
  });
}

// The device and the host system run the same code: they agree within the float32
// profile (the order of a reduction, and the device's expf, may differ by ulps).
TEST_F(CudaDevice, AgreesWithTheHostSystem) {
  ForEachFunctionInParallel([](const FunctionSpec& spec) -> std::string {
    Case golden = Generated(spec, 5, 512, 4096);
    if (!WithReference(golden, spec.cuda_host)) return "";
    const CaseReport r = CheckImplementation(spec, golden, spec.cuda);
    return Conforms(r) ? "" : r.Describe();
  });
}

}  // namespace
}  // namespace verlconf
