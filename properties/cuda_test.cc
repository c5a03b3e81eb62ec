// CUDA implementation vs oracle. Runs on a GPU machine (tools/gpu_check.sh); elsewhere
// the device tests skip with the reason and only the registry bookkeeping runs.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_impl/core/entries.h"
#include "oracle/core/check.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

// The registry's `cuda` flags and cuda_impl's entry table must name the same functions.
TEST(CudaRegistry, FlagsMatchEntries) {
  for (const auto& s : Registry()) EXPECT_EQ(s.cuda, cuda::FindEntry(s.name) != nullptr) << s.name;
  for (const auto& n : cuda::EntryNames()) EXPECT_NE(FindSpec(n), nullptr) << n;
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda::DeviceUnavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

// Every CUDA entry on generated inputs, float32 tolerance against the float64 oracle.
TEST_F(CudaDevice, MatchesOracleOnGeneratedCases) {
  int compared = 0;
  for (const auto& name : cuda::EntryNames()) {
    const FunctionSpec& spec = *FindSpec(name);
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      GenParams p;
      p.seed = seed;
      p.batch = 1 + static_cast<int64_t>(seed % 7) * 5;
      p.tokens = 1 + static_cast<int64_t>(seed * 37 % 300);
      p.dtype = DType::kFloat32;
      Case golden = spec.generate(p);
      golden.name = "seed" + std::to_string(seed);
      const Result want = spec.oracle(golden);
      golden.outputs = want.outputs;
      golden.grads = want.grads;
      golden.metrics = want.metrics;
      const CaseReport r = CheckImplementation(spec, golden, *cuda::FindEntry(name));
      EXPECT_NE(r.outcome, Outcome::kFailed) << r.Describe();
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// Deterministic by construction (no atomics): two runs are bitwise identical.
TEST_F(CudaDevice, BitwiseDeterministic) {
  for (const auto& name : cuda::EntryNames()) {
    GenParams p;
    p.seed = 99;
    p.batch = 64;
    p.tokens = 1000;
    p.dtype = DType::kFloat32;
    const Case c = FindSpec(name)->generate(p);
    const Result a = (*cuda::FindEntry(name))(c), b = (*cuda::FindEntry(name))(c);
    for (const auto& [k, arr] : a.outputs)
      EXPECT_EQ(0, std::memcmp(arr.data.data(), b.outputs.at(k).data.data(), arr.data.size() * sizeof(double))) << name;
  }
}

}  // namespace
}  // namespace verlconf
