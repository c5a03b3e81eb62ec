// The judge where the reference's result is not the only one verl may give:
//  - kl_cov's top-k pick among covariances tied within rounding: any pick of the tied
//    tokens passes, a pick outside them (or of another size) fails;
//  - a sharded case with a ratio on a clip bound: the other decision and the tie's split
//    gradient are those of verl's sharded semantics (the trainer's counts), not of the
//    unsplit batch under its own counts.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "oracle/judge/judge.h"
#include "oracle/policy_loss/cov.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/registry.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/plan.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

// The oracle's kl_cov with `pick` as the recorded pick: what an implementation that
// picked those tokens returns.
Result KlCovPicking(const FunctionSpec& spec, Case c, const std::vector<double>& pick) {
  Array sel(c.Input("response_mask").shape, c.dtype);
  sel.data = pick;
  c.inputs["cov_selected"] = sel;
  return spec.oracle(c);
}

// Two valid tokens: their centred covariances are equal in exact arithmetic, so which
// one torch.topk takes (k = 1) is rounding's or torch's order's.
Case TwoTokenKlCov(DType dtype) {
  const FunctionSpec& spec = *FindSpec("kl_cov", "policy_loss");
  Case c = spec.generate(GenParams{1, 2, 1, dtype});
  c.name = "tied_pair";
  c.config = Config(c.Where());
  ResolveConfig(spec, c.config);
  auto set = [&](const char* name, std::vector<double> v) {
    Array a({2, 1}, dtype);
    a.data = std::move(v);
    c.inputs[name] = a;
  };
  set("advantages", {1.0, static_cast<double>(0.3836958110332489f)});
  set("log_prob", {0.0, -1.0});
  set("old_log_prob", {-0.5, -2.0});  // both log-ratios non-zero: either pick moves the loss
  set("response_mask", {1.0, 1.0});
  c.inputs.erase("rollout_is_weights");
  return testing::WithResult(c, spec.oracle(c));
}

TEST(JudgeChoices, EitherTokenOfATiedPairMayBeKlCovsPick) {
  const FunctionSpec& spec = *FindSpec("kl_cov", "policy_loss");
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const Case golden = TwoTokenKlCov(dtype);
    const Result picked_second = KlCovPicking(spec, golden, {0, 1});
    const CaseReport other = CompareResult(spec, golden, &picked_second, std::nullopt);
    EXPECT_EQ(other.outcome, Outcome::kPassed) << other.detail;
    EXPECT_NE(other.detail.find("another choice"), std::string::npos) << other.detail;
    for (const std::vector<double>& wrong : {std::vector<double>{1, 1}, std::vector<double>{0, 0}}) {
      const Result got = KlCovPicking(spec, golden, wrong);
      EXPECT_EQ(CompareResult(spec, golden, &got, std::nullopt).outcome, Outcome::kFailed)
          << "a pick of " << wrong[0] + wrong[1] << " tokens";
    }
  }
}

TEST(JudgeChoices, APickOutsideTheTiesFails) {
  // Three tokens whose covariances are far apart: the top one is verl's only pick.
  const FunctionSpec& spec = *FindSpec("kl_cov", "policy_loss");
  Case c = TwoTokenKlCov(DType::kFloat32);
  Array a({3, 1}, DType::kFloat32), lp({3, 1}, DType::kFloat32), old({3, 1}, DType::kFloat32),
      m({3, 1}, DType::kFloat32);
  a.data = {2.0, 0.5, -1.0};
  lp.data = {-0.5, -1.0, -3.0};
  old.data = {-1.0, -1.5, -2.0};
  m.data = {1.0, 1.0, 1.0};
  c.inputs = {{"advantages", a}, {"log_prob", lp}, {"old_log_prob", old}, {"response_mask", m}};
  const Case golden = testing::WithResult(c, spec.oracle(c));
  const oracle::PolicyLossInputs in = oracle::ReadPolicyLossInputs(golden);
  oracle::CovLossConfig cfg;
  cfg.kl_cov_ratio = 0.0002;
  cfg.ppo_kl_coef = 0.1;
  cfg.loss_agg_mode = "token-mean";
  bool more = true;
  EXPECT_TRUE(oracle::kl_cov_tied_selections(in, cfg, oracle::kl_cov_default_selection(in, cfg), 16, &more).empty());
  EXPECT_FALSE(more);
  const Result picked_second = KlCovPicking(spec, golden, {0, 1, 0});
  EXPECT_EQ(CompareResult(spec, golden, &picked_second, std::nullopt).outcome, Outcome::kFailed);
}

// Any kl_cov case: every pick the oracle lists as equally valid passes against its own
// (and so would a torch.topk that breaks the tie otherwise).
RC_GTEST_PROP(JudgeChoices, EveryListedTiedPickPasses, ()) {
  const FunctionSpec& spec = *FindSpec("kl_cov", "policy_loss");
  const auto rows = *rc::gen::inRange<int64_t>(2, 6);
  const auto cols = *rc::gen::inRange<int64_t>(1, 5);
  const DType dtype = *rc::gen::element(DType::kFloat32, DType::kFloat64);
  Case c = spec.generate(GenParams{*rc::gen::arbitrary<uint32_t>(), rows, cols, dtype});
  c.inputs.erase("cov_selected");
  // Quantised advantages and log-probs: ties at the pick's edge are common.
  for (const char* name : {"advantages", "log_prob"})
    for (double& x : c.inputs.at(name).data) x = std::round(x * 2.0) / 2.0;
  ResolveConfig(spec, c.config);
  const Result ref = spec.oracle(c);
  const Case golden = testing::WithResult(c, ref);
  for (const Result& alt : ref.alternatives) {
    const CaseReport r = CompareResult(spec, golden, &alt, std::nullopt);
    RC_ASSERT(r.outcome != Outcome::kFailed);
  }
}

// A float32 ratio exactly on 1 + clip_ratio_high in a sharded vanilla loss, a row fully
// masked (the trainer counts it, the batch's own count does not): the tie's halved
// gradient passes against the sharded semantics, a gradient off by more fails.
TEST(JudgeChoices, ASplitGradientOnABoundaryPassesAgainstTheShardedSemantics) {
  const FunctionSpec& spec = *FindSpec("vanilla", "policy_loss");
  Case full = spec.generate(GenParams{5, 4, 3, DType::kFloat32});
  full.name = "sharded_tie";
  full.config = Config(full.Where());
  full.config.Set("loss_agg_mode", std::string("seq-mean-token-mean"));
  ResolveConfig(spec, full.config);
  full.inputs.erase("rollout_is_weights");
  // A float32 log-ratio whose float32 exp is 1 + 0.2 exactly, and whose exact exp lies
  // below 1.2: the oracle keeps the token unclipped, torch's float32 sits on the bound.
  float d = std::log(1.2f);
  for (int i = 0; i < 64 && !(std::exp(d) == 1.2f && std::exp(static_cast<double>(d)) < 1.2); ++i)
    d = std::nextafter(d, 0.0f);
  ASSERT_EQ(std::exp(d), 1.2f);
  ASSERT_LT(std::exp(static_cast<double>(d)), 1.2);
  for (double& x : full.inputs.at("advantages").data) x = 1.0;
  for (double& x : full.inputs.at("old_log_prob").data) x = 0.0;
  for (double& x : full.inputs.at("log_prob").data) x = -0.25;
  for (double& x : full.inputs.at("response_mask").data) x = 1.0;
  full.inputs.at("log_prob").at(0, 1) = static_cast<double>(d);
  for (int64_t t = 0; t < 3; ++t) full.inputs.at("response_mask").at(3, t) = 0.0;
  sharding::ShardPlan plan;
  plan.ranks = {sharding::Rank{{sharding::MicroBatch{{0, 1}}}}, sharding::Rank{{sharding::MicroBatch{{2, 3}}}}};
  const RunFn semantics = sharding::ShardedSemantics(spec, plan);
  const Result want = semantics(full);
  Case golden = full;
  golden.outputs["pg_loss"] = want.outputs.at("pg_loss");
  golden.grads["log_prob"] = want.grads.at("log_prob");
  ASSERT_NE(want.grads.at("log_prob").at(0, 1), 0.0);

  Result got;
  got.outputs = golden.outputs;
  got.grads = golden.grads;
  got.grads.at("log_prob").at(0, 1) *= 0.5;  // torch.maximum's split at the tie
  const CaseReport tie = CompareResult(spec, golden, &got, std::nullopt, kOracleVerlVersion, &semantics);
  EXPECT_EQ(tie.outcome, Outcome::kPassed) << tie.detail;
  // The batch's own counts (3 live rows, not the trainer's 4) scale the tie otherwise.
  EXPECT_EQ(CompareResult(spec, golden, &got, std::nullopt).outcome, Outcome::kFailed);
  got.grads.at("log_prob").at(0, 1) = want.grads.at("log_prob").at(0, 1) * 0.3;
  EXPECT_EQ(CompareResult(spec, golden, &got, std::nullopt, kOracleVerlVersion, &semantics).outcome, Outcome::kFailed);
}

}  // namespace
}  // namespace verlconf
