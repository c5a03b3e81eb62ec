// The one-sided RS options (k2 and k3 at token, sum, mean and max level) through the
// host system with the threshold placed exactly on the statistic: the threshold is the
// smallest float32 at or above the largest statistic the oracle sees, so that sequence
// or token sits on verl's inclusive bound (kept), and one float32 step lower rejects it. There a
// correct float32 implementation may decide either way (its statistic's last bit
// decides): the judge must accept the other decision's value there and nothing else.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "oracle/registry.h"
#include "properties/cuda_host_check.h"

namespace verlconf {
namespace {

constexpr const char* kOneSided[] = {"token_k2",    "token_k3",    "seq_sum_k2", "seq_sum_k3",
                                     "seq_mean_k2", "seq_mean_k3", "seq_max_k2", "seq_max_k3"};

double Kept(const FunctionSpec& spec, Case c, double threshold) {
  c.config.Set("rollout_rs_threshold", threshold);
  const Result r = spec.oracle(c);
  double n = 0;
  for (double v : r.outputs.at("modified_response_mask").data) n += v;
  return n;
}

TEST(CudaHostRolloutCorrection, ThresholdsHitExactly) {
  int hits = 0;
  for (const char* option : kOneSided) {
    const FunctionSpec* spec = FindSpec(option, "rollout_correction");
    ASSERT_NE(spec, nullptr) << option;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      Case c = testing::RandomCase(*spec, seed, 37, 200, true);
      const double top = spec->oracle(c).metrics.at(std::string("rollout_rs_") + option + "_max");
      ASSERT_TRUE(std::isfinite(top)) << option << " seed " << seed;
      // The smallest float32 at or above the (float64) statistic, and the float32 below it.
      float up = static_cast<float>(top);
      if (static_cast<double>(up) < top) up = std::nextafter(up, INFINITY);
      const double at = up, below = std::nextafter(up, -INFINITY);
      // The statistic sits on the bound: kept at it, rejected one float32 step below.
      ASSERT_GT(Kept(*spec, c, at), Kept(*spec, c, below)) << option << " seed " << seed << ": no exact hit at " << at;
      ++hits;
      c.config.Set("rollout_rs_threshold", at);
      EXPECT_EQ(testing::CheckCudaHostAgainstOracle(*spec, c), "") << option << " seed " << seed;
    }
  }
  EXPECT_EQ(hits, 32);
}

}  // namespace
}  // namespace verlconf
