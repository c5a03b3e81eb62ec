// Invariants of reward-side KL (apply_kl_penalty, compute_rewards, the KL controllers),
// each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/reward_kl/reward_kl.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::RunOracle;

Case Gen(const std::string& name, const GenParams& p) { return FindSpec(name, "reward_kl")->generate(p); }

// The in-reward penalty only touches response tokens: kld is multiplied by the mask
// before it is subtracted.
RC_GTEST_PROP(ApplyKlPenalty, MaskedTokensKeepTheirScore, ()) {
  const Case c = Gen("apply_kl_penalty", *ArbitraryParams());
  const Array r = RunOracle(c).outputs.at("token_level_rewards");
  const Array& m = c.Input("response_mask");
  for (int64_t k = 0; k < r.size(); ++k)
    if (m[k] == 0.0) RC_ASSERT(r[k] == c.Input("token_level_scores")[k]);
}

// With the k1 estimator ("kl") and every token valid, apply_kl_penalty is exactly
// compute_rewards with kl_ratio = beta: both subtract beta (old - ref).
RC_GTEST_PROP(ApplyKlPenalty, K1OnFullMaskIsComputeRewards, ()) {
  Case c = Gen("apply_kl_penalty", *ArbitraryParams());
  c.config.Set("kl_penalty", std::string("kl"));
  for (double& m : c.inputs["response_mask"].data) m = 1.0;
  Case cr;
  cr.family = "reward_kl";
  cr.function = "compute_rewards";
  cr.inputs["token_level_scores"] = c.Input("token_level_scores");
  cr.inputs["old_log_prob"] = c.Input("old_log_probs");
  cr.inputs["ref_log_prob"] = c.Input("ref_log_prob");
  cr.config.Set("kl_ratio", c.config.Double("kl_coef", 0.001));
  RC_ASSERT(testing::Close(RunOracle(c).outputs.at("token_level_rewards"),
                           RunOracle(cr).outputs.at("token_level_rewards"), testing::Tol{1e-15, 1e-15},
                           testing::NanPolicy::kNanEqualsNan));
}

// The metric reports the coefficient that was applied (before the update), and the
// controller moves it by at most a factor 1 +- 0.2 n_steps / horizon.
RC_GTEST_PROP(ApplyKlPenalty, CoefficientMovesWithinTheControllerBand, ()) {
  const Case c = Gen("apply_kl_penalty", *ArbitraryParams());
  const Result r = RunOracle(c);
  const double beta = c.config.Double("kl_coef", 0.001);
  RC_ASSERT(r.metrics.at("actor/reward_kl_penalty_coeff") == beta);
  const double next = r.outputs.at("kl_coef")[0];
  if (c.config.String("kl_ctrl_type", "fixed") == "fixed") {
    RC_ASSERT(next == beta);
  } else {
    const double band = 0.2 * static_cast<double>(c.Input("response_mask").rows()) /
                        static_cast<double>(c.config.Int("horizon", 10000));
    const double slack = 1e-14 * beta * (1 + band);
    RC_ASSERT(next >= beta * (1 - band) - slack && next <= beta * (1 + band) + slack);
  }
}

// The fixed controller's update is a no-op, whatever it is told.
RC_GTEST_PROP(KlController, FixedNeverMoves, ()) {
  const Case c = Gen("fixed", *ArbitraryParams());
  RC_ASSERT(RunOracle(c).outputs.at("value")[0] == c.config.Double("kl_coef", 0.001));
}

// The adaptive controller raises the coefficient when the KL is above target and lowers
// it below, never faster than the clipped proportional error allows, and is monotone in
// the measured KL.
RC_GTEST_PROP(KlController, AdaptiveIsMonotoneAndClipped, ()) {
  Case c = Gen("adaptive", *ArbitraryParams());
  const double beta = c.config.Double("kl_coef", 0.001), target = c.config.Double("target_kl", 0.1);
  const double n = static_cast<double>(c.config.Int("n_steps", 1)), h = static_cast<double>(c.config.Int("horizon", 1));
  const double kl = c.Input("current_kl")[0];
  const double v = RunOracle(c).outputs.at("value")[0];
  const double slack = 1e-14 * beta * (1 + 0.2 * n / h);  // rounding of the multiplier
  RC_ASSERT(v >= beta * (1 - 0.2 * n / h) - slack);
  RC_ASSERT(v <= beta * (1 + 0.2 * n / h) + slack);
  if (kl > target) RC_ASSERT(v >= beta);
  if (kl < target) RC_ASSERT(v <= beta);
  Case more = c;
  more.inputs["current_kl"][0] = kl + 0.01;
  RC_ASSERT(RunOracle(more).outputs.at("value")[0] >= v);
}

// verl's failure modes: target 0 divides a Python float by zero; an adaptive horizon
// <= 0 fails get_kl_controller's assert.
TEST(KlController, AdaptiveErrorsAreVerls) {
  oracle::KlControl k;
  k.type = "adaptive";
  k.target_kl = 0.0;
  EXPECT_THROW(oracle::kl_controller_update(k, 0.1, 1), VerlError);
  k.target_kl = 0.1;
  k.horizon = 0;
  try {
    oracle::kl_controller_update(k, 0.1, 1);
    FAIL();
  } catch (const VerlError& e) {
    EXPECT_EQ(e.kind(), "AssertionError");
  }
  // Six horizons' worth of steps below target: 1 - 0.2 * 6 < 0, the coefficient flips sign.
  k.horizon = 100;
  k.kl_coef = 0.1;
  EXPECT_LT(oracle::kl_controller_update(k, 0.0, 600), 0.0);
}

}  // namespace
}  // namespace verlconf
