// CUDA implementation vs oracle. Runs on a GPU machine (tools/gpu_check.sh); elsewhere
// the device tests skip with the reason and only the registry bookkeeping runs.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_impl/core/device.h"
#include "oracle/core/check.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

// The entries with a cuda slot: the functions cuda_impl registered.
std::vector<const FunctionSpec*> CudaSpecs() {
  std::vector<const FunctionSpec*> v;
  for (const auto& s : Registry())
    if (s.Implementation(Impl::kCuda)) v.push_back(&s);
  return v;
}

// Linking cuda_impl fills cuda slots (a registration naming no entry stops the
// registry's build, so reaching here means every registration found its entry).
TEST(CudaRegistry, SlotsAreFilled) { EXPECT_FALSE(CudaSpecs().empty()); }

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
  for (const FunctionSpec* s : CudaSpecs()) {
    const FunctionSpec& spec = *s;
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
      const CaseReport r = CheckImplementation(spec, golden, spec.cuda);
      EXPECT_NE(r.outcome, Outcome::kFailed) << r.Describe();
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// Deterministic by construction (no atomics): two runs are bitwise identical.
TEST_F(CudaDevice, BitwiseDeterministic) {
  for (const FunctionSpec* spec : CudaSpecs()) {
    GenParams p;
    p.seed = 99;
    p.batch = 64;
    p.tokens = 1000;
    p.dtype = DType::kFloat32;
    const Case c = spec->generate(p);
    const Result a = spec->cuda(c), b = spec->cuda(c);
    for (const auto& [k, arr] : a.outputs)
      EXPECT_EQ(0, std::memcmp(arr.data.data(), b.outputs.at(k).data.data(), arr.data.size() * sizeof(double))) << spec->family << "/" << spec->name;
  }
}

}  // namespace
}  // namespace verlconf
