// The judge's contract: a pass is earned. Where a threshold decision can go either way, a
// value passes only if one of the two decisions gives it; the reference side alone says
// where that is; a token fraction moves only with decisions that actually differ; NaN
// matching NaN proves nothing; the tolerance table only loosens, most specific first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracle/core/check.h"
#include "oracle/core/errors.h"
#include "oracle/core/registry.h"

namespace verlconf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A float32 vanilla case, token-mean, clip 0.2, all advantages positive: token (0, 1) sits
// on the upper clip bound (ratio = 1.2 to float32 rounding), the rest are far from any bound.
Case VanillaAtBound() {
  const FunctionSpec* spec = FindSpec("vanilla");
  Case c = spec->generate(GenParams{7, 2, 4, DType::kFloat32});
  c.name = "at_bound";
  c.config = Config(c.Where());
  c.config.Set("clip_ratio", 0.2);
  c.config.Set("loss_agg_mode", std::string("token-mean"));
  c.inputs.erase("rollout_is_weights");
  Array old_lp = Array::Matrix(2, 4, DType::kFloat32), lp = old_lp, adv = old_lp, mask = old_lp;
  for (int64_t k = 0; k < 8; ++k) {
    old_lp[k] = -1.0;
    lp[k] = static_cast<float>(-1.0 + 0.01 * static_cast<double>(k));
    adv[k] = 0.5 + 0.1 * static_cast<double>(k);
    mask[k] = 1.0;
  }
  lp.at(0, 1) = static_cast<float>(-1.0 + std::log(1.2));
  c.inputs["old_log_prob"] = old_lp;
  c.inputs["log_prob"] = lp;
  c.inputs["advantages"] = adv;
  c.inputs["response_mask"] = mask;
  return c;
}

// The golden: what the reference computes (the judge is under test here, not the oracle).
Case WithReference(Case c) {
  const Result r = FindSpec("vanilla")->oracle(c);
  c.outputs = r.outputs;
  c.grads = r.grads;
  c.metrics = r.metrics;
  return c;
}

CaseReport Judge(const Case& golden, const Result& got) {
  return CompareResult(*FindSpec("vanilla"), golden, &got, std::nullopt);
}

const FieldReport& Field(const CaseReport& r, const std::string& name) {
  for (const auto& f : r.fields)
    if (f.field == name) return f;
  throw std::logic_error("no field " + name);
}

TEST(Judge, TheCaseReallyHasOneBoundaryToken) {
  const Case c = VanillaAtBound();
  const Result r = FindSpec("vanilla")->oracle(c);
  double marked = 0;
  for (double b : r.boundary.data) marked += b;
  ASSERT_EQ(marked, 1.0);
  ASSERT_EQ(r.boundary.at(0, 1), 1.0);
}

TEST(Judge, EitherDecisionsValuePassesAtTheBoundaryAndCountsAsAFlip) {
  const Case golden = WithReference(VanillaAtBound());
  Result got = Result::Of(golden);
  // The two decisions at (0, 1): clipped (gradient 0) or not (-A * ratio / tokens).
  const double ratio = std::exp(golden.Input("log_prob").at(0, 1) - golden.Input("old_log_prob").at(0, 1));
  const double unclipped = -golden.Input("advantages").at(0, 1) * ratio / 8.0;
  const double reference = golden.grads.at("log_prob").at(0, 1);
  const double other = reference == 0.0 ? unclipped : 0.0;
  ASSERT_NE(other, reference);
  got.grads["log_prob"].at(0, 1) = other;
  CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kPassed) << r.Describe();
  EXPECT_EQ(Field(r, "grads/log_prob").flips, 1);
  // Halfway is what torch's maximum gives at an exact tie (a ratio rounded onto the bound):
  // accepted. A quarter of the way is no decision's value.
  got.grads["log_prob"].at(0, 1) = 0.5 * (other + reference);
  r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kPassed) << r.Describe();
  got.grads["log_prob"].at(0, 1) = 0.25 * other + 0.75 * reference;
  r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kFailed) << r.Describe();
}

TEST(Judge, NoNonFiniteOrWildValuePassesAtTheBoundary) {
  const Case golden = WithReference(VanillaAtBound());
  for (double bad : {kNaN, -std::numeric_limits<double>::infinity(), 1e30}) {
    Result got = Result::Of(golden);
    got.grads["log_prob"].at(0, 1) = bad;
    const CaseReport r = Judge(golden, got);
    EXPECT_EQ(r.outcome, Outcome::kFailed) << bad << "\n" << r.Describe();
    EXPECT_EQ(Field(r, "grads/log_prob").flips, 0);
  }
}

TEST(Judge, AnImplementationsOwnBoundaryIsIgnored) {
  const Case golden = WithReference(VanillaAtBound());
  Result got = Result::Of(golden);
  got.grads["log_prob"].at(1, 2) *= 1.5;  // far from any bound
  got.boundary = Array::Matrix(2, 4, DType::kFloat32);
  for (double& b : got.boundary.data) b = 1.0;  // "every token is at a bound"
  const CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kFailed) << r.Describe();
}

TEST(Judge, AClipFractionMovesOnlyWithDecisionsThatDiffer) {
  const Case golden = WithReference(VanillaAtBound());
  // Same decisions everywhere (every element-wise field equal), fraction moved by the
  // one boundary token's share: nothing justifies the move.
  Result got = Result::Of(golden);
  got.metrics["actor/pg_clipfrac"] += 1.0 / 8.0;
  CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "metrics/actor/pg_clipfrac").outcome, Outcome::kFailed) << r.Describe();
  EXPECT_NE(Field(r, "metrics/actor/pg_clipfrac").note.find("no token's decision differs"), std::string::npos);
  // The same move is fine when the gradient shows that decision taken the other way.
  const double ratio = std::exp(golden.Input("log_prob").at(0, 1) - golden.Input("old_log_prob").at(0, 1));
  const double reference = golden.grads.at("log_prob").at(0, 1);
  got.grads["log_prob"].at(0, 1) = reference == 0.0 ? -golden.Input("advantages").at(0, 1) * ratio / 8.0 : 0.0;
  got.metrics["actor/pg_clipfrac"] = golden.metrics.at("actor/pg_clipfrac") + (reference == 0.0 ? -1.0 : 1.0) / 8.0;
  r = Judge(golden, got);
  // (PASSED, or MISTRUSTED where the reference fraction is 0: either way not failed.)
  EXPECT_NE(Field(r, "metrics/actor/pg_clipfrac").outcome, Outcome::kFailed) << r.Describe();
  EXPECT_EQ(Field(r, "grads/log_prob").flips, 1);
  // But not by two tokens' worth.
  got.metrics["actor/pg_clipfrac"] = golden.metrics.at("actor/pg_clipfrac") + 2.0 / 8.0;
  r = Judge(golden, got);
  EXPECT_EQ(Field(r, "metrics/actor/pg_clipfrac").outcome, Outcome::kFailed) << r.Describe();
}

TEST(Judge, NaNMatchingNaNProvesNothing) {
  const Array nan = Array::Scalar(kNaN);
  const FieldReport f = CompareField("outputs/loss", &nan, nan, DefaultTolerance(DType::kFloat64), false);
  EXPECT_EQ(f.outcome, Outcome::kMistrusted);
  // And a NaN against a number says NaN, not a relative error of 0.
  const Array one = Array::Scalar(1.0);
  const FieldReport g = CompareField("outputs/loss", &nan, one, DefaultTolerance(DType::kFloat64), false);
  EXPECT_EQ(g.outcome, Outcome::kFailed);
  EXPECT_NE(g.Describe().find("nan"), std::string::npos) << g.Describe();
}

TEST(Judge, ANonFiniteReferenceWhereVerlGivesANumberIsBadInput) {
  Case golden = WithReference(VanillaAtBound());
  golden.outputs["pg_loss"] = Array::Scalar(kNaN, DType::kFloat32);
  Result got = Result::Of(golden);
  try {
    Judge(golden, got);
    FAIL() << "a tampered NaN reference was judged";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("outputs/pg_loss"), std::string::npos) << e.what();
  }
}

TEST(Judge, AMissingFieldIsUnsupportedAndTheCaseIsJudgedOnTheRest) {
  const Case golden = WithReference(VanillaAtBound());
  Result got = Result::Of(golden);
  got.metrics.erase("actor/ppo_kl");
  CaseReport r = Judge(golden, got);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  EXPECT_TRUE(r.partial);
  EXPECT_EQ(Field(r, "metrics/actor/ppo_kl").outcome, Outcome::kUnsupported);
  EXPECT_NE(r.detail.find("metrics/actor/ppo_kl"), std::string::npos) << r.detail;
  got.grads["log_prob"].at(1, 1) += 1.0;  // and a wrong present field still fails it
  r = Judge(golden, got);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
}

TEST(Judge, AFloat32AnswerToAFloat64CaseIsReportedAsSuch) {
  Case c = VanillaAtBound();
  c.dtype = DType::kFloat64;
  for (auto& [n, a] : c.inputs) a.dtype = DType::kFloat64;
  const Case golden = WithReference(c);
  Result got = Result::Of(golden);
  got.grads["log_prob"].dtype = DType::kFloat32;
  const CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kFailed);
  EXPECT_NE(Field(r, "grads/log_prob").note.find("returned float32 for a float64 case"), std::string::npos);
}

FunctionSpec SpecWith(std::vector<ToleranceOverride> t) {
  FunctionSpec s;
  s.name = "probe";
  s.family = "test";
  s.tolerances = std::move(t);
  return s;
}

TEST(Judge, AnOverrideTighterThanTheDefaultIsRefused) {
  const Tolerance d = DefaultTolerance(DType::kFloat64);
  EXPECT_THROW(ValidateTolerances(SpecWith({{"*", DType::kFloat64, d.rtol / 2, d.atol, "tighter"}})), std::logic_error);
  EXPECT_THROW(ValidateTolerances(SpecWith({{"outputs/x", DType::kFloat64, d.rtol, d.atol / 2, "tighter"}})),
               std::logic_error);
  EXPECT_THROW(ValidateTolerances(SpecWith({{"*", DType::kFloat64, d.rtol * 2, d.atol, ""}})), std::logic_error);
  EXPECT_NO_THROW(ValidateTolerances(SpecWith({{"*", DType::kFloat64, d.rtol * 2, d.atol, "looser"}})));
  // The registry holds every entry to this.
  for (const auto& s : Registry()) EXPECT_NO_THROW(ValidateTolerances(s)) << s.name;
}

TEST(Judge, TheMostSpecificOverrideWins) {
  const Tolerance d = DefaultTolerance(DType::kFloat64);
  // "*" listed first must not shadow the field's own entry.
  const FunctionSpec s = SpecWith(
      {{"*", DType::kFloat64, d.rtol * 8, d.atol, "wide"}, {"outputs/x", DType::kFloat64, d.rtol * 2, d.atol, "own"}});
  EXPECT_EQ(ToleranceFor(s, "outputs/x", DType::kFloat64).reason, "own");
  EXPECT_EQ(ToleranceFor(s, "outputs/y", DType::kFloat64).reason, "wide");
  EXPECT_EQ(ToleranceFor(s, "outputs/x", DType::kFloat32).rtol, DefaultTolerance(DType::kFloat32).rtol);
}

}  // namespace
}  // namespace verlconf
