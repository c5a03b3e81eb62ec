// cuda_impl through Thrust's host system (the cuda-host slot): the CUDA code itself,
// templates and passes included, run on the CPU, so CI checks it without a GPU. Against
// every float32 golden case of every function it implements, and against the oracle on
// random shapes and configs (rows not a multiple of 32 or 128, one-token rows, fully
// masked rows, B up to 512, T up to 4096). float64 cases are not its business: it
// computes in float32 (check_cmd SKIPs them).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"
#include "properties/cuda_host_check.h"
#include "tools/cli/paths.h"
#include "tools/h5/golden_set.h"

namespace verlconf {
namespace {

std::vector<const FunctionSpec*> CudaHostSpecs() {
  std::vector<const FunctionSpec*> v;
  for (const auto& s : Registry())
    if (s.Implementation(Impl::kCudaHost)) v.push_back(&s);
  return v;
}

std::string Key(const FunctionSpec& s) { return s.family + "/" + s.name; }

// The functions with a generator (the names verl only raises for, "full", have none:
// their goldens are their cases).
std::vector<const FunctionSpec*> GeneratedSpecs() {
  std::vector<const FunctionSpec*> v;
  for (const FunctionSpec* s : CudaHostSpecs())
    if (s->generate) v.push_back(s);
  return v;
}

// This binary links the host copies of the CUDA sources (cuda.bzl): the cuda-host slot
// alone, so no device code (and no nvcc) is needed to check it.
TEST(CudaHostRegistry, TheHostBuildFillsTheCudaHostSlotAlone) {
  ASSERT_FALSE(CudaHostSpecs().empty());
  for (const auto& s : Registry()) EXPECT_EQ(s.Implementation(Impl::kCuda), nullptr) << Key(s);
}

// Every float32 golden case of an implemented function conforms, and each function has
// at least one PASSED case: an entry that only yields MISTRUSTED (or raises only where
// verl raises) has shown nothing.
TEST(CudaHostGolden, EveryFloat32CaseConforms) {
  const fixtures::GoldenSet goldens = fixtures::GoldenSet::Load(tools::BundledGoldenDir(nullptr));
  std::map<std::string, std::map<Outcome, int>> tally;
  for (const auto& [key, c] : goldens.index) {
    const FunctionSpec* spec = SpecFor(*c);
    if (!spec || !spec->Implementation(Impl::kCudaHost) || c->dtype != DType::kFloat32) continue;
    const CaseReport r = CheckImplementation(*spec, *c, spec->cuda_host);
    ++tally[Key(*spec)][r.outcome];
    EXPECT_TRUE(r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted) << r.Describe();
  }
  for (const FunctionSpec* s : CudaHostSpecs()) {
    const auto it = tally.find(Key(*s));
    ASSERT_NE(it, tally.end()) << Key(*s) << ": no float32 golden case";
    EXPECT_GT(it->second[Outcome::kPassed], 0) << Key(*s) << ": no PASSED float32 golden case";
  }
}

using testing::RandomCase;
std::string CheckAgainstOracle(const FunctionSpec& spec, Case golden) {
  return testing::CheckCudaHostAgainstOracle(spec, std::move(golden));
}

RC_GTEST_PROP(CudaHost, MatchesOracleOnRandomShapes, ()) {
  static const std::vector<const FunctionSpec*> specs = GeneratedSpecs();
  const FunctionSpec& spec = **rc::gen::elementOf(specs);
  const int64_t rows = *rc::gen::oneOf(rc::gen::just<int64_t>(1), rc::gen::inRange<int64_t>(1, 513));
  // Up to 4096 tokens per row, at most 2^18 tokens per case to keep the property cheap
  // (the largest shape is checked once per function below).
  const int64_t max_cols = std::min<int64_t>(4096, (int64_t{1} << 18) / rows);
  const int64_t cols = *rc::gen::oneOf(rc::gen::just<int64_t>(1), rc::gen::inRange<int64_t>(1, max_cols + 1));
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1u << 30);
  RC_TAG(spec.family);
  const std::string why = CheckAgainstOracle(spec, RandomCase(spec, seed, rows, cols, *rc::gen::arbitrary<bool>()));
  RC_ASSERT(why == "");
}

// The largest batch and the longest rows the host path is held to, each at 2^18 tokens
// (a 512 x 4096 case costs the host several seconds per function in the float64 oracle
// alone, times every function); one test per function so that the shards share them.
class CudaHostLarge : public ::testing::TestWithParam<const FunctionSpec*> {};

TEST_P(CudaHostLarge, MatchesOracleAt512x512And64x4096) {
  const FunctionSpec& spec = *GetParam();
  EXPECT_EQ(CheckAgainstOracle(spec, RandomCase(spec, 7, 512, 512, true)), "") << Key(spec);
  EXPECT_EQ(CheckAgainstOracle(spec, RandomCase(spec, 8, 64, 4096, true)), "") << Key(spec);
}

// gtest names allow [A-Za-z0-9_] only: "kl/low_var_kl+" -> "kl_low_var_kl_plus".
std::string TestName(const ::testing::TestParamInfo<const FunctionSpec*>& info) {
  std::string n;
  for (const char ch : Key(*info.param)) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      n += ch;
    else
      n += ch == '+' ? "_plus" : "_";
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Registry, CudaHostLarge, ::testing::ValuesIn(GeneratedSpecs()), TestName);

}  // namespace
}  // namespace verlconf
