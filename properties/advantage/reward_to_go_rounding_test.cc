// A float32 reward-to-go whose rewards cancel is judged by the rounding of its sum, not of
// its small result: summed in another order than verl's (a scan) it passes; a reward
// left out, or the sum of the wrong suffix, still fails.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oracle/judge/judge.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

// One row of `n` rewards, the first half about +1 and the second about -1, so that the
// partial sums grow to n / 2 and the reward-to-go of the whole row is small against them.
Case CancellingRow(const FunctionSpec& spec, int64_t n) {
  Case c = spec.generate(GenParams{11, 1, n, DType::kFloat32});
  c.name = "cancelling_row";
  Array& r = c.inputs.at("token_level_rewards");
  for (int64_t t = 0; t < n; ++t)
    r.at(0, t) =
        static_cast<double>(static_cast<float>((t < n / 2 ? 1.0 : -1.0) * (0.9 + 0.1 * ((t * 7919) % 13) / 13.0)));
  for (double& m : c.inputs.at("response_mask").data) m = 1.0;
  const Result want = spec.oracle(c);
  c.outputs = want.outputs;
  c.grads = want.grads;
  c.metrics = want.metrics;
  return c;
}

// The reward-to-go in float32 by a blocked scan (blocks of 32 summed first, then the
// blocks' suffix sums): the order of a parallel implementation.
std::vector<float> BlockedRewardToGo(const Array& r) {
  const int64_t n = r.cols(), block = 32;
  std::vector<float> g(static_cast<size_t>(n));
  float carry = 0.0f;
  for (int64_t end = n; end > 0; end -= block) {
    const int64_t begin = std::max<int64_t>(0, end - block);
    float local = 0.0f;
    for (int64_t t = end - 1; t >= begin; --t) {
      local += static_cast<float>(r.at(0, t));
      g[static_cast<size_t>(t)] = local;
    }
    for (int64_t t = begin; t < end; ++t) g[static_cast<size_t>(t)] += carry;
    carry += local;
  }
  return g;
}

// Long enough that a scan's float32 rounding exceeds the dtype's tolerance of the
// smallest sums (at 2,000 tokens 0.74 times it).
constexpr int64_t kTokens = 6000;

TEST(RewardToGoRounding, ASumInAnotherFloat32OrderPassesAndAMissingRewardFails) {
  // (remax's tolerance is its score scale's condition number, which covers it already.)
  for (const char* name : {"optimal_token_baseline", "tir_optimal_token_baseline"}) {
    SCOPED_TRACE(name);
    const FunctionSpec& spec = *FindSpec(name, "advantage");
    const Case golden = CancellingRow(spec, kTokens);
    const std::vector<float> g = BlockedRewardToGo(golden.Input("token_level_rewards"));
    Result got;
    got.outputs = golden.outputs;
    got.grads = golden.grads;
    Array& returns = got.outputs.at("returns");
    Array& advantages = got.outputs.at("advantages");
    for (int64_t t = 0; t < returns.size(); ++t) {
      const double moved = static_cast<double>(g[static_cast<size_t>(t)]) - returns[t];
      returns[t] += moved;
      advantages[t] += moved;
    }
    const CaseReport scan = CompareResult(spec, golden, &got, std::nullopt);
    EXPECT_EQ(scan.outcome, Outcome::kPassed) << scan.detail;

    // The last reward left out of every sum (a scan that starts one token early).
    const double last = golden.Input("token_level_rewards").at(0, kTokens - 1);
    Result dropped = got;
    for (int64_t t = 0; t < kTokens; ++t) {
      dropped.outputs.at("returns")[t] -= last;
      dropped.outputs.at("advantages")[t] -= last;
    }
    EXPECT_EQ(CompareResult(spec, golden, &dropped, std::nullopt).outcome, Outcome::kFailed);

    // Each token given the sum that starts one token later (an off-by-one suffix).
    Result shifted = got;
    for (int64_t t = 0; t + 1 < kTokens; ++t) {
      shifted.outputs.at("returns")[t] = got.outputs.at("returns")[t + 1];
      shifted.outputs.at("advantages")[t] = got.outputs.at("advantages")[t + 1];
    }
    EXPECT_EQ(CompareResult(spec, golden, &shifted, std::nullopt).outcome, Outcome::kFailed);
  }
}

}  // namespace
}  // namespace verlconf
