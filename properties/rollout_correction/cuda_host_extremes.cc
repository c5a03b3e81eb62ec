// The rollout-correction CUDA entries through the host system at the edges the random
// shapes rarely reach: 8192-token rows whose log-ratio sums run far past float32's exp
// range (+-164, where exp overflows at 88.7), a row whose ratio is exactly 1 (nothing
// rejected, IS weight exactly 1), and a row of each sign (every token or sequence
// rejected by the usual thresholds), for every entry of the family and bypass_mode,
// with each entry's generated configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "oracle/core/generate.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"
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

TEST(CudaHostRolloutCorrection, OverflowingRowsAndExactRatios) {
  const std::vector<const FunctionSpec*> entries = Entries();
  ASSERT_GE(entries.size(), 38u);  // the 37 rollout_correction entries and bypass_mode
  for (const FunctionSpec* spec : entries)
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::string why = testing::CheckCudaHostAgainstOracle(*spec, Extreme(*spec, seed));
      EXPECT_EQ(why, "") << spec->family << "/" << spec->name << " seed " << seed;
    }
}

// Found by the test above: with only the ratio-1 row kept (geo RS rejects the others),
// bypass_ppo_clip_geo_rs's seq-mean-token-sum loss is -sum(A) over 8192 advantages
// whose magnitudes add to ~6500 and whose sum is ~0.29. A float32 sum in one sequential
// order (cuda-host's, before its rows were summed as trees) is off by 5e-5, 1e-8 of that
// magnitude: correct float32 rounding, which a bound relative to |loss| (256 eps32) fails;
// the judge allows for the terms' magnitude (oracle/judge/tolerance.cc). The candidate is
// cuda-host's result with its loss moved by that much, and by twice the allowance, which fails.
TEST(CudaHostRolloutCorrection, ACancellingLossIsJudgedAgainstItsTermsMagnitude) {
  const FunctionSpec* spec = FindSpec("bypass_ppo_clip_geo_rs", "rollout_correction");
  ASSERT_NE(spec, nullptr);
  Case golden = Extreme(*spec, 3);
  const Result want = spec->oracle(golden);
  golden.outputs = want.outputs;
  golden.grads = want.grads;
  golden.metrics = want.metrics;
  auto moved_by = [spec](double delta) -> RunFn {
    return [spec, delta](const Case& c) {
      Result got = spec->cuda_host(c);
      got.outputs.at("pg_loss").data[0] += delta;
      return got;
    };
  };
  const CaseReport r = CheckImplementation(*spec, golden, moved_by(5e-5));
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  const FieldReport* loss = nullptr;
  for (const auto& f : r.fields)
    if (f.field == "outputs/pg_loss") loss = &f;
  ASSERT_NE(loss, nullptr);
  EXPECT_NE(loss->tol.reason.find("float32 sum of 8192 terms"), std::string::npos) << loss->tol.reason;
  const Tolerance plain = DefaultTolerance(DType::kFloat32);
  const double w = want.outputs.at("pg_loss").data[0];
  EXPECT_GT(loss->worst_abs, plain.atol + plain.rtol * std::fabs(w)) << "the loss no longer cancels: update this test";
  const double allowed = loss->tol.atol + loss->tol.rtol * std::fabs(w);
  EXPECT_EQ(CheckImplementation(*spec, golden, moved_by(2 * allowed)).outcome, Outcome::kFailed) << allowed;
}

}  // namespace
}  // namespace verlconf
