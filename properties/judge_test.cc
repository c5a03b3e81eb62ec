// The judge's contract: a pass is earned. Where a threshold decision can go either way, a
// value passes only if one of the two decisions gives it; the reference side alone says
// where that is; a token fraction moves only with decisions that actually differ; NaN
// matching NaN proves nothing; the tolerance table only loosens, most specific first.
#include "oracle/judge/judge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "oracle/core/errors.h"
#include "oracle/judge/grade.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "properties/testing.h"

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
  c = testing::WithResult(std::move(c), r);
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
  EXPECT_NE(Field(r, "metrics/actor/pg_clipfrac").note.find("1/8): the count it implies differs"), std::string::npos)
      << Field(r, "metrics/actor/pg_clipfrac").note;
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

// A masked token is in no fraction: a boundary the reference marks there allows nothing,
// whichever way a candidate decides it.
TEST(Judge, AMaskedBoundaryTokenGivesNoAllowance) {
  Case c = VanillaAtBound();
  c.inputs["response_mask"].at(0, 1) = 0.0;
  const Case golden = WithReference(c);
  ASSERT_EQ(FindSpec("vanilla")->oracle(golden).boundary.at(0, 1), 1.0);
  Result got = Result::Of(golden);
  got.metrics["actor/pg_clipfrac"] += 1.0 / 7.0;  // one valid token's worth
  const CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "metrics/actor/pg_clipfrac").outcome, Outcome::kFailed) << r.Describe();
  EXPECT_EQ(Field(r, "metrics/actor/pg_clipfrac").note.find("of it for tokens"), std::string::npos)
      << Field(r, "metrics/actor/pg_clipfrac").note;
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

// torch.maximum splits a tie's gradient evenly between its arguments, and a clamp at its
// own bound passes none: with A < 0 both sides of the bound give -A r, yet a float32 ratio
// rounded exactly onto the bound gives half of it. Accepted there; no other fraction is.
TEST(Judge, HalfADecisionsGradientPassesAtAnExactTie) {
  Case c = VanillaAtBound();
  c.inputs["advantages"].at(0, 1) = -0.6;
  const Case golden = WithReference(c);
  const double reference = golden.grads.at("log_prob").at(0, 1);
  ASSERT_NE(reference, 0.0);
  Result got = Result::Of(golden);
  got.grads["log_prob"].at(0, 1) = 0.5 * reference;
  CaseReport r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kPassed) << r.Describe();
  EXPECT_EQ(Field(r, "grads/log_prob").flips, 1);
  for (double wrong : {0.25, 0.75, -0.5}) {
    got.grads["log_prob"].at(0, 1) = wrong * reference;
    r = Judge(golden, got);
    EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kFailed) << wrong << "\n" << r.Describe();
  }
  // Off the boundary a half is just wrong.
  got = Result::Of(golden);
  got.grads["log_prob"].at(1, 2) *= 0.5;
  r = Judge(golden, got);
  EXPECT_EQ(Field(r, "grads/log_prob").outcome, Outcome::kFailed) << r.Describe();
}

// Several tokens on the IcePop bounds at once (ratios 5 and 0.5, float32): a float32
// implementation may keep or drop each of them on its own. `spec` is an IcePop preset
// whose decision input is `decides`; token 3 is far from any bound.
struct IcePopAtBounds {
  const FunctionSpec* spec;
  Case golden;
  std::string decides;
  static constexpr int kOnBound = 3;  // tokens 0 and 2 at ratio 5, token 1 at 0.5

  explicit IcePopAtBounds(const std::string& name) : spec(FindSpec(name)) {
    Case c = spec->generate(GenParams{3, 1, 4, DType::kFloat32});
    c.name = "icepop_at_bounds";
    c.config = Config(c.Where());
    Case storage;
    c = Case(Resolved(*spec, c, storage));
    const bool bypass = c.OptionalInput("log_prob") != nullptr;
    decides = bypass ? "log_prob" : "old_log_prob";
    Array base = Array::Matrix(1, 4, DType::kFloat32), top = base, mask = base, adv = base;
    const double lr[4] = {std::log(5.0), std::log(0.5), std::log(5.0), 0.1};
    const double from[4] = {-1.0, -2.0, -1.5, -0.7};
    for (int64_t k = 0; k < 4; ++k) {
      base[k] = from[k];
      top[k] = static_cast<float>(from[k] + lr[k]);
      mask[k] = 1.0;
      adv[k] = 0.0;  // the bypass loss shows no decision: every one is the metrics' alone
    }
    c.inputs["rollout_log_prob"] = base;
    c.inputs[decides] = top;
    c.inputs["response_mask"] = mask;
    if (bypass) c.inputs["advantages"] = adv;
    golden = c;
    const Result r = spec->oracle(c);
    golden = testing::WithResult(std::move(golden), r);
  }

  // What an implementation computes that keeps token k (bit k of `kept`) or drops it:
  // the decision input moved a rounding-sized step to that side of the bound.
  Result Deciding(unsigned kept) const {
    Case c = golden;
    for (int k = 0; k < kOnBound; ++k) {
      const bool upper = k != 1, keep = (kept >> k) & 1u;
      // Each token its own step: the weights are float32, and tokens 0 and 2 (both at
      // ratio 5) moved alike would round to the same kept weight, the subsets' means
      // then coinciding.
      c.inputs[decides][k] += (upper == keep ? -1.0 : 1.0) * 2e-6 * (1.0 + 0.25 * k);
    }
    return spec->oracle(c);
  }

  CaseReport Judge(const Result& got) const { return CompareResult(*spec, golden, &got, std::nullopt); }
};

TEST(JudgeDecisions, EveryTokenOnAnIcePopBoundIsMarked) {
  for (const char* name : {"decoupled_token_icepop", "bypass_pg_token_icepop"}) {
    const IcePopAtBounds t(name);
    const Result r = t.spec->oracle(t.golden);
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(r.boundary[k], k < IcePopAtBounds::kOnBound ? 1.0 : 0.0) << name << k;
  }
}

// Every subset of the boundary tokens kept, the rest dropped, passes: a statistic of the
// kept weights (their mean, std, ESS, per-row means) and the loss follow the decisions
// each token took, not one direction for all of them.
TEST(JudgeDecisions, EverySubsetOfDecisionsAtTheBoundsPasses) {
  for (const char* name : {"decoupled_token_icepop", "bypass_pg_token_icepop"}) {
    const IcePopAtBounds t(name);
    std::set<double> means;
    for (unsigned kept = 0; kept < (1u << IcePopAtBounds::kOnBound); ++kept) {
      const Result got = t.Deciding(kept);
      means.insert(got.metrics.at("rollout_corr/rollout_is_mean"));
      const CaseReport r = t.Judge(got);
      EXPECT_NE(r.outcome, Outcome::kFailed) << name << " kept " << kept << "\n" << r.Describe();
    }
    EXPECT_EQ(means.size(), 1u << IcePopAtBounds::kOnBound) << name << ": the subsets must differ";
  }
}

// ... while a value no subset gives, a statistic the weights contradict, or an error
// off the boundary still fails.
TEST(JudgeDecisions, AValueNoSubsetOfDecisionsGivesFails) {
  for (const char* name : {"decoupled_token_icepop", "bypass_pg_token_icepop"}) {
    const IcePopAtBounds t(name);
    const std::string mean = "rollout_corr/rollout_is_mean", std = "rollout_corr/rollout_is_std";
    for (unsigned kept = 0; kept < (1u << IcePopAtBounds::kOnBound); ++kept) {
      const Result right = t.Deciding(kept);
      Result got = right;
      got.metrics[mean] += 1e-3;
      EXPECT_EQ(t.Judge(got).outcome, Outcome::kFailed) << name << " kept " << kept;
      got = right;
      got.metrics[std] *= 1.01;
      EXPECT_EQ(t.Judge(got).outcome, Outcome::kFailed) << name << " kept " << kept;
      // Halfway between two subsets' means is neither.
      got = right;
      got.metrics[mean] = 0.5 * (right.metrics.at(mean) + t.Deciding(kept ^ 1u).metrics.at(mean));
      EXPECT_EQ(t.Judge(got).outcome, Outcome::kFailed) << name << " kept " << kept;
    }
    if (t.golden.outputs.count("rollout_is_weights")) {
      // The weights keep every token; a mean that drops token 0 contradicts them.
      Result got = t.Deciding(0b111);
      got.metrics[mean] = t.Deciding(0b110).metrics.at(mean);
      const CaseReport r = t.Judge(got);
      EXPECT_EQ(Field(r, "metrics/" + mean).outcome, Outcome::kFailed) << r.Describe();
      // And the weight of the token far from any bound is held exactly as before.
      got = t.Deciding(0b101);
      got.outputs["rollout_is_weights"][3] *= 1.001;
      EXPECT_EQ(Field(t.Judge(got), "outputs/rollout_is_weights").outcome, Outcome::kFailed);
    }
  }
}

// Whether verl raises can hang on a decision at a bound: IcePop drops the one token whose
// ratio sits a hair under 0.5, every applied weight is zero and the ESS divides by zero; a
// float32 implementation that keeps it returns a result, judged against that decision's.
TEST(JudgeDecisions, AnErrorThatHangsOnABoundaryDecisionAllowsTheOtherDecisionsResult) {
  const FunctionSpec* spec = FindSpec("decoupled_token_icepop");
  Case c = spec->generate(GenParams{3, 1, 1, DType::kFloat32});
  c.name = "icepop_error_at_bound";
  c.config = Config(c.Where());
  Case storage;
  c = Case(Resolved(*spec, c, storage));
  Array old_lp = Array::Matrix(1, 1, DType::kFloat32), rollout = old_lp, mask = old_lp;
  // Minus rollout: log(0.5) less 4.8e-7, one float32 step of the log-prob; the float32
  // weight is 0.49999976, a float32 ulp or so under the bound (2e-9 under log(0.5) would
  // round to 0.5 itself, on the bound and kept).
  old_lp[0] = -6.608520984649658;
  rollout[0] = -5.9153733253479;
  mask[0] = 1.0;
  c.inputs["old_log_prob"] = old_lp;
  c.inputs["rollout_log_prob"] = rollout;
  c.inputs["response_mask"] = mask;
  try {
    spec->oracle(c);
    FAIL() << "the oracle keeps the token";
  } catch (const VerlError& e) {
    c.expect_error = e.what();
  }
  Case kept = c;
  kept.expect_error.reset();
  kept.inputs["old_log_prob"][0] += 1e-6;
  const Result right = spec->oracle(kept);
  CaseReport r = CompareResult(*spec, c, &right, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  Result got = right;
  got.outputs["rollout_is_weights"][0] *= 1.01;
  EXPECT_EQ(CompareResult(*spec, c, &got, std::nullopt).outcome, Outcome::kFailed);
  got = right;
  got.metrics["rollout_corr/rollout_is_mean"] += 0.01;
  EXPECT_EQ(CompareResult(*spec, c, &got, std::nullopt).outcome, Outcome::kFailed);
  // The other way round (verl's rounding kept it and returned; the candidate dropped it and
  // raised): the error is the other decision's too.
  Case returned = c;
  returned.expect_error.reset();
  returned = testing::WithResult(std::move(returned), right);
  const std::string zero_division = *c.expect_error;
  EXPECT_EQ(CompareResult(*spec, returned, nullptr, zero_division).outcome, Outcome::kPassed);
  EXPECT_EQ(CompareResult(*spec, returned, nullptr, std::string("ValueError: no")).outcome, Outcome::kFailed);
  // Far from the bound the same error is no decision's: a result there fails.
  Case far = c;
  far.inputs["old_log_prob"][0] -= 0.5;
  got = right;
  EXPECT_EQ(CompareResult(*spec, far, &got, std::nullopt).outcome, Outcome::kFailed);
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

// Every registry entry with a fraction metric, both dtypes, on its own generated cases:
// the fraction moved by an ulp (another correct summation order) is not a failure; moved
// by the smallest count step the case allows it is, and the note says the count differs.
TEST(JudgeFractions, AnUlpPassesAndOneCountFailsForEveryFractionMetric) {
  int judged = 0, exact = 0;
  for (const FunctionSpec& spec : Registry()) {
    if (spec.discrete_metrics.empty() || !spec.generate || !spec.oracle) continue;
    for (const DType dtype : {DType::kFloat64, DType::kFloat32}) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        Case c = spec.generate(GenParams{seed, 5, 24, dtype});
        Case storage;
        const Case& golden = Resolved(spec, c, storage);
        Result ref;
        try {
          ref = spec.oracle(golden);
        } catch (const std::exception&) {
          continue;  // a generated config verl raises on: no fraction to judge
        }
        Case g = golden;
        g = testing::WithResult(std::move(g), ref);
        int64_t n = 1;
        for (const auto& [name, x] : g.inputs) n = std::max<int64_t>(n, x.size());
        for (const std::string& m : spec.discrete_metrics) {
          auto it = g.metrics.find(m);
          if (it == g.metrics.end() || !std::isfinite(it->second)) continue;
          const std::string field = "metrics/" + m;
          Result got = ref;
          got.metrics[m] = std::nextafter(it->second, 2.0);
          CaseReport r = CompareResult(spec, g, &got, std::nullopt);
          EXPECT_NE(Field(r, field).outcome, Outcome::kFailed) << spec.name << " " << m << "\n" << r.Describe();
          EXPECT_LE(Field(r, field).err_tol, 1e-3) << spec.name << " " << m;
          // Where the reference decides some valid token within rounding (a generated
          // threshold hit exactly), the fraction may also move by those tokens' share:
          // one count beyond that allowance, then.
          const double allowance = std::max(0.0, Field(r, field).tol.atol - 0.5 / static_cast<double>(n));
          const double step = 1.0 / static_cast<double>(n) + allowance;
          got.metrics[m] = it->second + (it->second >= 0.5 ? -step : step);
          r = CompareResult(spec, g, &got, std::nullopt);
          EXPECT_EQ(Field(r, field).outcome, Outcome::kFailed) << spec.name << " " << m << "\n" << r.Describe();
          EXPECT_NE(Field(r, field).note.find("the count it implies differs"), std::string::npos)
              << Field(r, field).note;
          exact += allowance == 0.0;
          ++judged;
        }
      }
    }
  }
  EXPECT_GT(judged, 100);
  EXPECT_GT(exact, judged / 2);  // most with no allowance at all: one count fails there
}

// A fraction of rows moves by one row over the rows when a row's decision sits on a
// bound, whatever the row's length. verl's float32 row mean of raw IS weights [0, 1, 1]
// is float32(2) / 3, which rounds onto float32(1 / 1.5) itself (not below the lower
// bound); the exact mean 2/3 is below it. Row 1 is 3 of the 11 valid tokens but 1 of
// the 3 rows: rollout_is_seq_fraction_low may move by 1/3, and not by two rows' worth.
TEST(JudgeFractions, ARowFractionMovesByTheBoundaryRowsShare) {
  const FunctionSpec& spec = *FindSpec("compute_is_metrics");
  Case c = spec.generate(GenParams{1, 3, 4, DType::kFloat32});
  c.name = "row_on_lower_bound";
  c.config = Config(c.Where());
  c.config.Set("rollout_is", std::string("token"));
  c.config.Set("rollout_is_threshold", 1.5);
  c.inputs.erase("log_ratio_sum");
  Array raw = Array::Matrix(3, 4, DType::kFloat32), lr = raw, mask = raw;
  const double raw_rows[3][4] = {{0.1, 0.1, 0.1, 0.1}, {0.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 1.0, 1.0}};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t t = 0; t < 4; ++t) {
      raw.at(i, t) = static_cast<float>(raw_rows[i][t]);
      lr.at(i, t) = raw_rows[i][t] > 0 ? static_cast<float>(std::log(static_cast<float>(raw_rows[i][t]))) : -30.0;
      mask.at(i, t) = i == 1 && t == 3 ? 0.0 : 1.0;
    }
  c.inputs["raw_rollout_is_weights"] = raw;
  c.inputs["rollout_is_weights"] = raw;
  c.inputs["log_ratio_for_metrics"] = lr;
  c.inputs["response_mask"] = mask;
  Case storage;
  Case golden = Resolved(spec, c, storage);
  const Result ref = spec.oracle(golden);
  ASSERT_EQ(ref.boundary.at(1, 0), 1.0);
  ASSERT_EQ(ref.boundary.at(0, 0), 0.0);
  ASSERT_EQ(ref.boundary.at(2, 0), 0.0);
  const std::string m = "rollout_is_seq_fraction_low", field = "metrics/" + m;
  ASSERT_DOUBLE_EQ(ref.metrics.at(m), static_cast<double>(static_cast<float>(2.0 / 3.0)));  // rows 0 and 1
  golden.outputs = ref.outputs;
  golden.metrics = ref.metrics;
  golden.metrics[m] = static_cast<double>(static_cast<float>(1.0 / 3.0));  // verl's: row 0 only
  // Either decision for row 1, on either side.
  EXPECT_NE(Field(CompareResult(spec, golden, &ref, std::nullopt), field).outcome, Outcome::kFailed);
  Result got = ref;
  got.metrics[m] = golden.metrics[m];
  Case other = golden;
  other.metrics[m] = ref.metrics.at(m);
  EXPECT_NE(Field(CompareResult(spec, other, &got, std::nullopt), field).outcome, Outcome::kFailed);
  // Two rows' worth away from the reference is more than row 1 can explain (rows 0 and 2
  // are far from both bounds), whichever decision the reference took.
  got.metrics[m] = 1.0;
  CaseReport r = CompareResult(spec, golden, &got, std::nullopt);
  EXPECT_EQ(Field(r, field).outcome, Outcome::kFailed) << r.Describe();
  got.metrics[m] = 0.0;
  r = CompareResult(spec, other, &got, std::nullopt);
  EXPECT_EQ(Field(r, field).outcome, Outcome::kFailed) << r.Describe();
  // A token fraction keeps the tokens' share: the token-level ratio fraction moved by a
  // third (more than row 1's 3 of 11 tokens) fails.
  const std::string tf = "rollout_is_ratio_fraction_low";
  got = ref;
  got.metrics[tf] = ref.metrics.at(tf) + 1.0 / 3.0;
  EXPECT_EQ(Field(CompareResult(spec, golden, &got, std::nullopt), "metrics/" + tf).outcome, Outcome::kFailed);
}

// verl's fraction is k / (n + 1e-8) (masked_mean's guard), and the division is held to
// the dtype's tolerance: a fraction counted exactly (k / n) is the same count, so it
// fails in float64 graded "small" (systematic, so not float64 rounding, and never
// "material"); in float32 the guard is below the tolerance and it passes.
TEST(JudgeFractions, AnExactCountWithoutVerlsGuardIsASmallDifferenceInFloat64) {
  const FunctionSpec& spec = *FindSpec("vanilla");
  int tested = 0;
  for (const DType dtype : {DType::kFloat64, DType::kFloat32})
    for (uint64_t seed = 1; seed <= 24; ++seed) {
      Case c = spec.generate(GenParams{seed, 1 + static_cast<int64_t>(seed % 3), 2, dtype});
      c.name = "exact_count";
      Case storage;
      Case golden = Resolved(spec, c, storage);
      const Result ref = spec.oracle(golden);
      golden = testing::WithResult(std::move(golden), ref);
      const std::string m = "actor/pg_clipfrac";
      const double w = ref.metrics.at(m);
      bool near = false;  // a boundary token may move the count itself
      for (double b : ref.boundary.data) near = near || b != 0.0;
      if (w == 0.0 || near) continue;
      double n = 0;
      for (double x : golden.Input("response_mask").data) n += x;
      Result got = ref;
      got.metrics[m] = w * (n + 1e-8) / n;  // k / n
      const CaseReport r = CompareResult(spec, golden, &got, std::nullopt);
      const FieldReport& f = Field(r, "metrics/" + m);
      if (dtype == DType::kFloat64) {
        EXPECT_EQ(f.outcome, Outcome::kFailed) << r.Describe();
        EXPECT_EQ(FieldGrade(f), Grade::kSmall) << r.Describe();
        EXPECT_NE(f.note.find("the count agrees"), std::string::npos) << f.note;
      } else {
        EXPECT_EQ(f.outcome, Outcome::kPassed) << r.Describe();
      }
      ++tested;
    }
  EXPECT_GT(tested, 4);
}

// bypass_mode counts its clip fractions over the tokens rejection sampling kept, not over
// the response mask: a boundary token's share is of those. Token 1's log-ratio is exactly
// fl(log 0.8) and its k1 exactly on log(1.25), kept; torch's exp gives a ratio an ulp
// below 0.8, clipped, libm's 0.8, not. Token 0 is rejected (k1 = 1), tokens 2 and 3 are
// kept and clipped (ratio 1.22 > 1.2). verl (0.9.1, measured): pg_clipfrac 3/(3 + 1e-8),
// the oracle 2/3: a third of the kept tokens, a quarter of the response.
TEST(JudgeFractions, ABypassClipFractionMovesByItsShareOfTheKeptTokens) {
  const FunctionSpec& spec = *FindSpec("bypass_mode");
  Case c = spec.generate(GenParams{1, 1, 4, DType::kFloat64});
  c.name = "kept_on_clip_bound";
  c.config = Config(c.Where());
  c.config.Set("loss_type", std::string("ppo_clip"));
  c.config.Set("rollout_rs", std::string("token_k1"));
  c.config.Set("rollout_rs_threshold", std::string("0.8_1.25"));
  const double old_lp[4] = {0.0, -0.4169018999673692, 0.0, 0.0}, lp[4] = {-1.0, -0.640045451281579, 0.2, 0.2},
               adv[4] = {0.0, -1.0, 1.0, 1.0};
  Array o = Array::Matrix(1, 4, DType::kFloat64), l = o, a = o, mask = o;
  for (int64_t t = 0; t < 4; ++t) {
    o[t] = old_lp[t];
    l[t] = lp[t];
    a[t] = adv[t];
    mask[t] = 1.0;
  }
  c.inputs = {{"old_log_prob", o}, {"log_prob", l}, {"advantages", a}, {"response_mask", mask}};
  Case storage;
  Case golden = Resolved(spec, c, storage);
  const Result ref = spec.oracle(golden);
  ASSERT_EQ(ref.boundary[1], 1.0);
  const std::string m = "actor/pg_clipfrac", field = "metrics/" + m;
  ASSERT_NEAR(ref.metrics.at(m), 2.0 / 3.0, 1e-7);
  golden = testing::WithResult(std::move(golden), ref);
  golden.outputs.at("pg_loss")[0] = -0.5333333333333333;  // verl's, with its gradient 0
  for (double& g : golden.grads.at("log_prob").data) g = 0.0;
  golden.metrics[m] = 0.9999999966666667;
  CaseReport r = CompareResult(spec, golden, &ref, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  // Counted over the response mask instead (2 or 3 of 4) is a different count.
  Result got = ref;
  got.metrics[m] = 0.5;
  r = CompareResult(spec, golden, &got, std::nullopt);
  EXPECT_EQ(Field(r, field).outcome, Outcome::kFailed) << r.Describe();
}

// IS weights normalised by their batch mean: the decision on one token's bound moves
// every weight. Row 1's log-ratio is -fl(log 1.25), its ratio exp of it 0.8 by libm and an
// ulp below by torch: verl 0.9.1 drops it (IcePop lower bound 0.8) and row 0's weight
// becomes 2.00000001, the oracle keeps it (1.112, 0.888). Each side's array is one set
// of decisions, so both pass; an array no set of decisions gives fails.
TEST(JudgeDecisions, ANormalisedWeightArrayOfOtherDecisionsPassesAsAWhole) {
  const FunctionSpec& spec = *FindSpec("compute_rollout_correction_weights");
  Case c = spec.generate(GenParams{1, 2, 1, DType::kFloat64});
  c.name = "normalised_on_bound";
  c.config = Config(c.Where());
  c.config.Set("rollout_is", std::string("token"));
  c.config.Set("rollout_is_threshold", std::string("0.8_1.25"));
  c.config.Set("rollout_is_batch_normalize", int64_t{1});
  Array lr = Array::Matrix(2, 1, DType::kFloat64), mask = lr;
  lr[0] = 0.0013511284052086922, lr[1] = -0.22314355131420976, mask[0] = mask[1] = 1.0;
  c.inputs = {{"log_ratio", lr}, {"response_mask", mask}};
  Case storage;
  Case golden = Resolved(spec, c, storage);
  const Result ref = spec.oracle(golden);
  ASSERT_EQ(ref.boundary[1], 1.0);
  ASSERT_GT(ref.outputs.at("rollout_is_weights")[1], 0.8);
  golden.outputs = ref.outputs;
  golden.metrics = ref.metrics;
  // verl's (measured), its metrics with row 1 dropped.
  golden.outputs.at("rollout_is_weights")[0] = 2.00000001, golden.outputs.at("rollout_is_weights")[1] = 0.0;
  golden.metrics["rollout_is_batch_norm_factor"] = 0.5006760182918314;
  golden.metrics["rollout_is_mean"] = 0.5006760182918314;
  golden.metrics["rollout_is_min"] = 0.0;
  CaseReport r = CompareResult(spec, golden, &ref, std::nullopt);
  EXPECT_EQ(Field(r, "outputs/rollout_is_weights").outcome, Outcome::kPassed) << r.Describe();
  // The weights left unnormalised, or normalised by a mean 10% off: no decision gives them.
  for (const double scale : {1.0 / 1.1, 0.0}) {
    Result got = ref;
    Array& w = got.outputs.at("rollout_is_weights");
    if (scale == 0.0) {
      w[0] = std::exp(lr[0]), w[1] = std::exp(lr[1]);
    } else {
      for (double& x : w.data) x *= scale;
    }
    r = CompareResult(spec, golden, &got, std::nullopt);
    EXPECT_EQ(Field(r, "outputs/rollout_is_weights").outcome, Outcome::kFailed) << scale << "\n" << r.Describe();
  }
}

// The optimal token baseline's w = 1 - 2 pi + sum pi^2 cancels near pi = 1: two float32
// rows whose W are about 3e-5 each leave verl 0.9.1 (measured) 4e-4 from the exact
// baseline. That rounding is allowed; a baseline 0.1 off is not.
TEST(JudgeTolerances, AnOptimalTokenBaselineKeepsItsWeightsCancellation) {
  const FunctionSpec& spec = *FindSpec("optimal_token_baseline");
  Case c = spec.generate(GenParams{1, 2, 1, DType::kFloat32});
  c.name = "cancelling_w";
  c.config = Config(c.Where());
  Array olp = Array::Matrix(2, 1, DType::kFloat32), spi = olp, rewards = olp, mask = olp;
  Array index({2}, DType::kInt64);
  olp[0] = -0.0037921133916825056, olp[1] = -0.003691744292154908;
  spi[0] = 0.9924578666687012, spi[1] = 0.9926571249961853;
  rewards[0] = -1.0, rewards[1] = 0.0, mask[0] = mask[1] = 1.0, index[0] = index[1] = 0;
  c.inputs = {{"old_log_probs", olp},
              {"sum_pi_squared", spi},
              {"token_level_rewards", rewards},
              {"response_mask", mask},
              {"index", index}};
  Case storage;
  Case golden = Resolved(spec, c, storage);
  const Result ref = spec.oracle(golden);
  golden.outputs = ref.outputs;
  golden.outputs.at("advantages")[0] = -0.49301964044570923, golden.outputs.at("advantages")[1] = 0.5069803595542908;
  CaseReport r = CompareResult(spec, golden, &ref, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  Result got = ref;
  for (double& a : got.outputs.at("advantages").data) a += 0.1;
  r = CompareResult(spec, golden, &got, std::nullopt);
  EXPECT_EQ(Field(r, "outputs/advantages").outcome, Outcome::kFailed) << r.Describe();
}

// Rollout-correction metrics whose float32 rounding scales with the case's own sizes,
// each held both ways: verl's differently rounded value passes, a genuinely different
// one fails.
struct RolloutCase {
  const FunctionSpec& spec;
  Case golden;
  Result ref;
  RolloutCase(const std::string& name, int64_t rows, int64_t tokens, DType d, const std::function<void(Case&)>& fill)
      : spec(*FindSpec(name)) {
    Case c = spec.generate(GenParams{1, rows, tokens, d});
    c.name = "scaled";
    c.config = Config(c.Where());
    fill(c);
    Case storage;
    golden = Resolved(spec, c, storage);
    ref = spec.oracle(golden);
    golden = testing::WithResult(std::move(golden), ref);
  }
  // The outcome when verl's metric `m` is `want` and the oracle's value is the candidate.
  Outcome With(const std::string& m, double want) const {
    Case g = golden;
    g.metrics[m] = want;
    return Field(CompareResult(spec, g, &ref, std::nullopt), "metrics/" + m).outcome;
  }
};

// Every token past the clamp, the k3 statistic (~4.85e8) clamped to the threshold 10 for
// the std: sqrt(E[x^2] - E[x]^2) of 64 equal values of 10 is what float32 leaves of
// 100 - 100. verl gives ~2.4e-3 there (measured at 3169 tokens: the table's fixed 2e-3
// failed it); E[x^2] is bounded by the threshold's square, not by the unclamped mean.
TEST(JudgeTolerances, AFloat32StdIsBoundedByItsClampedValues) {
  const RolloutCase t("seq_mean_k3", 1, 64, DType::kFloat32, [](Case& c) {
    for (double& x : c.inputs["log_ratio"].data) x = 25.0;
    for (double& x : c.inputs["response_mask"].data) x = 1.0;
    c.config.Set("rollout_rs_threshold", std::string("10"));
  });
  const std::string m = "rollout_rs_seq_mean_k3_std";
  ASSERT_LT(t.ref.metrics.at(m), 1e-3);
  EXPECT_NE(t.With(m, 2.4e-3), Outcome::kFailed);
  EXPECT_NE(t.With(m, 8e-3), Outcome::kFailed);  // sqrt(eps32 * 100 * 5): a few ulps of E[x^2]
  EXPECT_EQ(t.With(m, 0.05), Outcome::kFailed);  // a spread of the clamped values
  EXPECT_EQ(t.With(m, 1.0), Outcome::kFailed);
}

// The std of per-row sums past the clamp: two float32 rows of 16 tokens at 4.85e8 each are
// ~7.8e9 apiece, where a float32 ulp is 512; verl's std of two such sums may be 0 or
// hundreds where the exact value differs. A spread of 1e-3 of the values is no rounding.
TEST(JudgeTolerances, APerRowStdKeepsThePerRowValuesRounding) {
  for (const DType d : {DType::kFloat32, DType::kFloat64}) {
    const RolloutCase t("seq_sum_k3", 2, 16, d, [](Case& c) {
      Array& lr = c.inputs["log_ratio"];
      for (int64_t k = 0; k < lr.size(); ++k) lr[k] = k == 3 ? 24.0 : 21.0;  // all past the clamp
      for (double& x : c.inputs["response_mask"].data) x = 1.0;
      c.config.Set("rollout_rs_threshold", 0.1);
    });
    const std::string m = "rollout_rs_seq_sum_k3_seq_std";
    const double v = t.ref.metrics.at("rollout_rs_seq_sum_k3_seq_max");
    ASSERT_GT(v, 7e9);
    const double ulp = d == DType::kFloat32 ? 1024.0 : 2e-6;  // a couple of ulps of the sums
    EXPECT_NE(t.With(m, t.ref.metrics.at(m) + ulp), Outcome::kFailed) << DTypeName(d);
    EXPECT_EQ(t.With(m, t.ref.metrics.at(m) + 1e-3 * v), Outcome::kFailed) << DTypeName(d);
  }
}

// A row of stale log-ratios, about +-0.9 alternating from token `begin` on (a float32 sum of
// a thousand of them rounds visibly), against a rollout log-prob of -2.
void FillStaleLogProbs(Array& old_lp, Array& rollout, int64_t begin, int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    rollout[begin + t] = -2.0;
    old_lp[begin + t] = static_cast<float>(-2.0 + (t % 2 ? 1.0 : -1.0) * (0.9 + 1e-4 * static_cast<double>(t % 97)));
  }
}

// The float32 log-ratios' sum accumulated one token at a time in float32 (one order verl
// may take) and exactly.
std::pair<float, double> LogRatioSums(const Array& old_lp, const Array& rollout) {
  float sequential = 0.0f;
  double exact = 0.0;
  for (int64_t k = 0; k < old_lp.size(); ++k) {
    const float lr = static_cast<float>(old_lp[k]) - static_cast<float>(rollout[k]);
    sequential += lr;
    exact += static_cast<double>(lr);
  }
  return {sequential, exact};
}

// Sequence-level IS: rollout_is_min is exp of a row's float32 sum of log-ratios, and a
// float32 sum of 1000 stale log-ratios (|lr| ~ 1) is good to ~1e-4 absolute, which exp
// makes a relative error of the metric. The same sum accumulated one token at a time in
// float32 (another order) passes; the sum with one log-ratio 1% off fails.
TEST(JudgeTolerances, ASequenceWeightKeepsItsLogSumsRounding) {
  const RolloutCase t("decoupled_seq_is", 1, 1000, DType::kFloat32, [](Case& c) {
    Array& old_lp = c.inputs["old_log_prob"];
    FillStaleLogProbs(old_lp, c.inputs["rollout_log_prob"], 0, old_lp.size());
    old_lp[0] = static_cast<float>(-2.0 + 3.0);  // a positive sum: the row's weight is far from 0
    for (double& x : c.inputs["response_mask"].data) x = 1.0;
    c.config.Set("threshold", 1e6);
  });
  const Array& old_lp = t.golden.Input("old_log_prob");
  const Array& rollout = t.golden.Input("rollout_log_prob");
  const auto [sequential, exact] = LogRatioSums(old_lp, rollout);
  const std::string m = "rollout_corr/rollout_is_min";
  ASSERT_NEAR(std::log(t.ref.metrics.at(m)), exact, 1e-9);
  EXPECT_NE(t.With(m, static_cast<double>(std::exp(sequential))), Outcome::kFailed);
  const double without = exact - (static_cast<double>(static_cast<float>(old_lp[2])) - rollout[2]) +
                         0.99 * (static_cast<double>(static_cast<float>(old_lp[2])) - rollout[2]);
  EXPECT_EQ(t.With(m, std::exp(without)), Outcome::kFailed);
  // chi2_seq of the one row, exp(2 * sum) - 1: the same two sums, doubled in the exponent.
  const std::string chi2 = "rollout_corr/chi2_seq";
  ASSERT_NEAR(std::log(t.ref.metrics.at(chi2) + 1.0), 2.0 * exact, 1e-9);
  EXPECT_NE(t.With(chi2, std::exp(2.0 * static_cast<double>(sequential)) - 1.0), Outcome::kFailed);
  EXPECT_EQ(t.With(chi2, std::exp(2.0 * without) - 1.0), Outcome::kFailed);
}

// chi2_seq called directly (compute_offpolicy_metrics, and the same under the rollout_corr/
// prefix): exp(2 * the row's float32 log-ratio sum) - 1 keeps that sum's rounding as it does
// in the pipeline. The sum accumulated one token at a time in float32 passes; one
// log-ratio 1% off fails.
TEST(JudgeTolerances, ADirectChi2SeqKeepsItsLogSumsRounding) {
  for (const auto& [name, old_name, m] :
       {std::tuple<std::string, std::string, std::string>{"compute_offpolicy_metrics", "old_log_prob", "chi2_seq"},
        {"compute_rollout_corr_metrics_from_logprobs", "log_prob", "rollout_corr/chi2_seq"}}) {
    const std::string old_input = old_name;  // (a structured binding is not captured before C++20)
    const RolloutCase t(name, 1, 1000, DType::kFloat32, [&old_input](Case& c) {
      c.inputs["rollout_log_prob"] = c.inputs.at(old_input);  // optional in the generator: drawn or not
      Array& old_lp = c.inputs[old_input];
      FillStaleLogProbs(old_lp, c.inputs["rollout_log_prob"], 0, old_lp.size());
      old_lp[0] = static_cast<float>(-2.0 + 3.0);
      for (double& x : c.inputs["response_mask"].data) x = 1.0;
    });
    const Array& old_lp = t.golden.Input(old_name);
    const Array& rollout = t.golden.Input("rollout_log_prob");
    const auto [sequential, exact] = LogRatioSums(old_lp, rollout);
    ASSERT_NEAR(std::log(t.ref.metrics.at(m) + 1.0), 2.0 * exact, 1e-9) << name;
    ASSERT_GT(std::fabs(static_cast<double>(sequential) - exact), 1e-6) << name;  // the rounding is there
    EXPECT_NE(t.With(m, std::exp(2.0 * static_cast<double>(sequential)) - 1.0), Outcome::kFailed) << name;
    const double lr2 = static_cast<double>(static_cast<float>(old_lp[2])) - rollout[2];
    EXPECT_EQ(t.With(m, std::exp(2.0 * (exact - 0.01 * lr2)) - 1.0), Outcome::kFailed) << name;
  }
}

// The ESS, 1 / mean((w / (mean(w) + 1e-8))^2), of sequence weights near exp(-20): the 1e-8
// does not scale with the weights, so a shift d of every row's log-ratio sum (what their
// float32 rounding may do) moves the ESS by nearly 2d relative, twice what it does to a
// weight. Sums shifted by 0.95 of the allowed rounding pass; by three times it, fail.
TEST(JudgeTolerances, TheEssKeepsTwiceItsLogSumsRounding) {
  const RolloutCase t("decoupled_seq_is", 2, 1000, DType::kFloat32, [](Case& c) {
    Array& old_lp = c.inputs["old_log_prob"];
    for (int64_t i = 0; i < 2; ++i) FillStaleLogProbs(old_lp, c.inputs["rollout_log_prob"], i * 1000, 1000);
    // The other 999 tokens sum to about +0.9: row sums near -19.4 and -19.7, inside the +-20 clamp.
    old_lp[0] = static_cast<float>(-2.0 - 20.3);
    old_lp[1000] = static_cast<float>(-2.0 - 20.6);
    for (double& x : c.inputs["response_mask"].data) x = 1.0;
    c.config.Set("threshold", 1e6);
  });
  const std::string m = "rollout_corr/rollout_is_eff_sample_size";
  const Array& old_lp = t.golden.Input("old_log_prob");
  const Array& rollout = t.golden.Input("rollout_log_prob");
  double sums[2] = {0.0, 0.0};
  for (int64_t k = 0; k < old_lp.size(); ++k) sums[k / 1000] += old_lp[k] - rollout[k];
  for (const double sum : sums) {
    ASSERT_LT(sum, -19.0);
    ASSERT_GT(sum, -20.0);
  }
  // Every token of a row carries the row's weight, so the ESS is that of the two weights.
  auto ess = [](double s0, double s1) {
    const double w0 = std::exp(s0), w1 = std::exp(s1), mean = (w0 + w1) / 2.0;
    const double n0 = w0 / (mean + 1e-8), n1 = w1 / (mean + 1e-8);
    return 1.0 / ((n0 * n0 + n1 * n1) / 2.0);
  };
  ASSERT_NEAR(t.ref.metrics.at(m), ess(sums[0], sums[1]), 1e-6 * t.ref.metrics.at(m));  // the weights are float32
  const auto tol = t.spec.case_tolerance(t.golden, "metrics/" + m);
  ASSERT_TRUE(tol.has_value());
  const double allowed = tol->rtol - DefaultTolerance(DType::kFloat32).rtol;  // the sums' rounding, doubled
  ASSERT_GT(allowed, 0.0);
  const double d = allowed / 2.0;  // what one sum may carry
  const double moved = ess(sums[0] + 0.95 * d, sums[1] + 0.95 * d);
  ASSERT_GT(std::fabs(moved / t.ref.metrics.at(m) - 1.0), 1.2 * d);  // more than one sum's share
  EXPECT_NE(t.With(m, moved), Outcome::kFailed);
  EXPECT_EQ(t.With(m, ess(sums[0] + 3.0 * d, sums[1] + 3.0 * d)), Outcome::kFailed);
}

// A float64 case whose fraction is float32 all the same (verl's .float().mean() over the
// rows): row 2's log-ratio sum is log(1.5), between libm's and torch's float32 log of the
// threshold, so verl counts no row high and the oracle one of three, float32(1/3) =
// 0.33333334, a hair over the row's share 1/3. That passes; two rows' worth does not.
TEST(JudgeFractions, AFloat32FractionOfAFloat64CaseMovesByARowsFloat32Share) {
  const RolloutCase t("decoupled_seq_is", 3, 1, DType::kFloat64, [](Case& c) {
    c.inputs["old_log_prob"] = Array::Matrix(3, 1);
    c.inputs["rollout_log_prob"] = Array::Matrix(3, 1);
    c.inputs["old_log_prob"][2] = -2.0 + std::log(1.5);
    c.inputs["rollout_log_prob"][2] = -2.0;
    c.inputs["response_mask"] = Array::Matrix(3, 1);
    for (double& x : c.inputs["response_mask"].data) x = 1.0;
    c.config.Set("threshold", std::string("1.5"));
  });
  const std::string m = "rollout_corr/rollout_is_ratio_fraction_high";
  const double third = static_cast<double>(static_cast<float>(1.0 / 3.0));
  ASSERT_EQ(t.ref.metrics.at(m), third);
  EXPECT_NE(t.With(m, 0.0), Outcome::kFailed);
  Case g = t.golden;
  Result got = t.ref;
  got.metrics[m] = static_cast<double>(static_cast<float>(2.0 / 3.0));
  g.metrics[m] = 0.0;
  EXPECT_EQ(Field(CompareResult(t.spec, g, &got, std::nullopt), "metrics/" + m).outcome, Outcome::kFailed);
}

// The critic's clip fraction over every token instead of the valid ones is a different
// definition; it must fail even though most tokens sit strictly inside the clip range,
// where the clip returns v itself and no decision is rounding-dependent.
TEST(JudgeFractions, AnUnmaskedValueClipFractionFails) {
  const FunctionSpec& spec = *FindSpec("compute_value_loss");
  int differing = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Case c = spec.generate(GenParams{seed, 6, 32, DType::kFloat64});
    Case storage;
    Case g = Resolved(spec, c, storage);
    const Result ref = spec.oracle(g);
    g = testing::WithResult(std::move(g), ref);
    const Array& v = g.Input("vpreds");
    const Array& V = g.Input("values");
    const Array& R = g.Input("returns");
    const double cr = g.config.Double("cliprange_value");
    double clipped = 0;
    for (int64_t k = 0; k < v.size(); ++k) {
      const double vc = std::max(std::min(v[k], V[k] + cr), V[k] - cr);
      clipped += (vc - R[k]) * (vc - R[k]) > (v[k] - R[k]) * (v[k] - R[k]);
    }
    const double unmasked = clipped / static_cast<double>(v.size());
    if (unmasked == ref.metrics.at("vf_clipfrac")) continue;
    ++differing;
    Result got = ref;
    got.metrics["vf_clipfrac"] = unmasked;
    const CaseReport r = CompareResult(spec, g, &got, std::nullopt);
    EXPECT_EQ(Field(r, "metrics/vf_clipfrac").outcome, Outcome::kFailed) << r.Describe();
    // Nothing strictly inside the clip range is marked as a rounding-dependent decision.
    for (int64_t k = 0; k < v.size(); ++k) {
      if (v[k] < V[k] + cr - 1e-9 && v[k] > V[k] - cr + 1e-9) {
        EXPECT_EQ(ref.boundary[k], 0.0) << seed << " " << k;
      }
    }
  }
  EXPECT_GT(differing, 10);
}

// Agreement on zeros alone proves nothing: a case whose every output, gradient and
// projection reference is zero is MISTRUSTED, not PASSED, even though a zero VJP is a
// real check beside a non-zero field.
TEST(JudgeVacuity, ACaseAgreeingOnlyOnZerosIsMistrusted) {
  FunctionSpec bare;
  bare.name = "bare";
  bare.family = "test";
  Case g;
  g.function = "bare";
  g.name = "zeros";
  g.dtype = DType::kFloat64;
  g.outputs["x"] = Array::Matrix(2, 3);
  g.grads["log_prob"] = Array::Matrix(2, 3);
  g.vjps["x/log_prob"] = Array::Matrix(2, 3);
  Result got = Result::Of(g);
  CaseReport r = CompareResult(bare, g, &got, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kMistrusted) << r.Describe();
  g.outputs["x"].at(1, 2) = 0.5;  // one number that is not zero: now the zeros beside it count
  got = Result::Of(g);
  r = CompareResult(bare, g, &got, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  got.vjps["x/log_prob"].at(0, 0) = 1.0;  // and a gradient through a detached output fails
  r = CompareResult(bare, g, &got, std::nullopt);
  EXPECT_EQ(r.outcome, Outcome::kFailed) << r.Describe();
}

// verl's NaN is a result: a candidate must reproduce it. A 0 in its place fails; the NaN
// reproduced beside finite numbers passes; a field holding nothing but NaN, reproduced,
// is MISTRUSTED (agreeing on it alone proves nothing), never PASSED.
TEST(JudgeVacuity, VerlsNaNIsAResult) {
  const Tolerance t = DefaultTolerance(DType::kFloat64);
  Array want = Array::Matrix(1, 3), got = want;
  want[0] = kNaN;
  want[1] = 0.25;
  got[0] = kNaN;
  got[1] = 0.25;
  EXPECT_EQ(CompareField("outputs/x", &got, want, t, false).outcome, Outcome::kPassed);
  got[0] = 0.0;
  EXPECT_EQ(CompareField("outputs/x", &got, want, t, false).outcome, Outcome::kFailed);
  const Array nan = Array::Scalar(kNaN), zero = Array::Scalar(0.0);
  EXPECT_EQ(CompareField("outputs/loss", &nan, nan, t, false).outcome, Outcome::kMistrusted);
  EXPECT_EQ(CompareField("outputs/loss", &zero, nan, t, false).outcome, Outcome::kFailed);
}

// A golden of another verl release is judged, not refused: a config that release
// accepted and the mirrored one raises on makes the oracle raise, which against a
// golden result is a FAILED case; for the mirrored release the same file is bad input.
TEST(JudgeVersions, AConfigOnlyTheMirroredReleaseRefusesIsAResultElsewhere) {
  const FunctionSpec& spec = *FindSpec("compute_rollout_rejection_mask");
  Case c = spec.generate(GenParams{3, 4, 8, DType::kFloat32});
  c.config.Set("rollout_rs", std::string("token_k1"));
  c.config.Set("rollout_rs_threshold", std::string("1.1_0.9"));  // lower above upper
  c.expect_error.reset();
  c.outputs["modified_response_mask"] = c.Input("response_mask");
  EXPECT_THROW(CheckImplementation(spec, c, spec.oracle), BadInput);
  EXPECT_THROW(CheckImplementation(spec, c, spec.oracle, kOracleVerlVersion), BadInput);
  const CaseReport r = CheckImplementation(spec, c, spec.oracle, "0.8.0");
  EXPECT_EQ(r.outcome, Outcome::kFailed) << r.Describe();
  EXPECT_NE(r.detail.find("but verl returned a result"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace verlconf

namespace verlconf {
namespace {

FieldReport FailedWith(double got, double want, DType dtype = DType::kFloat32) {
  FieldReport f;
  f.field = "outputs/x";
  f.dtype = dtype;
  f.outcome = Outcome::kFailed;
  f.mismatched = 1;
  f.total = 1;
  f.worst_abs = std::fabs(got - want);
  f.worst_rel = want != 0 ? std::fabs(got - want) / std::fabs(want) : 0.0;
  f.worst_mismatches.push_back({0, got, want, 2.0});
  f.grade_non_finite = std::isfinite(got) != std::isfinite(want) || !std::isfinite(want);
  if (want == 0.0)
    f.grade_abs_at_zero = std::fabs(got);
  else
    f.grade_rel = std::fabs(got - want) / std::fabs(want);
  return f;
}

// Sizes come from the numbers alone: a grade never turns a failure into a pass.
TEST(Grades, FromTheJudgedNumbers) {
  EXPECT_EQ(FieldGrade(FailedWith(1.0 + 1e-7, 1.0)), Grade::kRounding);
  EXPECT_EQ(FieldGrade(FailedWith(1.0 + 1e-4, 1.0)), Grade::kSmall);
  EXPECT_EQ(FieldGrade(FailedWith(1.01, 1.0)), Grade::kMaterial);
  EXPECT_EQ(FieldGrade(FailedWith(kNaN, 1.0)), Grade::kMaterial);
  EXPECT_EQ(FieldGrade(FailedWith(0.5, 0.0)), Grade::kMaterial);
  EXPECT_EQ(FieldGrade(FailedWith(1e-8, 0.0)), Grade::kRounding);
  FieldReport shape;
  shape.outcome = Outcome::kFailed;
  EXPECT_EQ(FieldGrade(shape), Grade::kMaterial);
  // The other float dtype with every value within tolerance: the values agree.
  FieldReport dtype_only = shape;
  dtype_only.dtype_differs = true;
  EXPECT_EQ(FieldGrade(dtype_only), Grade::kRounding);
  FieldReport passed = FailedWith(1.01, 1.0);
  passed.outcome = Outcome::kPassed;
  EXPECT_EQ(FieldGrade(passed), Grade::kNone);
  CaseReport error_semantics;
  error_semantics.outcome = Outcome::kFailed;
  EXPECT_EQ(CaseGrade(error_semantics), Grade::kMaterial);
  CaseReport two;
  two.outcome = Outcome::kFailed;
  two.fields = {FailedWith(1.0 + 1e-7, 1.0), FailedWith(1.0 + 1e-4, 1.0)};
  EXPECT_EQ(CaseGrade(two), Grade::kSmall);
}

// Rounding is the case dtype's: a float64 case off by float32 rounding, or by an epsilon of
// 1e-9 where verl adds 1e-6 (1.4e-6 relative, thousands of times the tolerance), is
// systematic: "small", not "rounding".
TEST(Grades, RoundingIsTheCaseDtypes) {
  EXPECT_EQ(FieldGrade(FailedWith(-0.7071067802, -0.7071057812, DType::kFloat64)), Grade::kSmall);
  EXPECT_EQ(FieldGrade(FailedWith(-0.7071067802, -0.7071057812, DType::kFloat32)), Grade::kRounding);
  EXPECT_EQ(FieldGrade(FailedWith(5.900000095, 5.9, DType::kFloat64)), Grade::kSmall);
  EXPECT_EQ(FieldGrade(FailedWith(1.0 + 1e-13, 1.0, DType::kFloat64)), Grade::kRounding);
  EXPECT_EQ(FieldGrade(FailedWith(1e-14, 0.0, DType::kFloat64)), Grade::kRounding);
  EXPECT_EQ(FieldGrade(FailedWith(1e-8, 0.0, DType::kFloat64)), Grade::kSmall);
  EXPECT_EQ(FieldGrade(FailedWith(1.01, 1.0, DType::kFloat64)), Grade::kMaterial);
  EXPECT_EQ(ValueGrade(1.0 + 1e-7, 1.0, DType::kFloat32), Grade::kRounding);
  EXPECT_EQ(ValueGrade(1.0 + 1e-7, 1.0, DType::kFloat64), Grade::kSmall);
  EXPECT_EQ(ValueGrade(0.0, kNaN, DType::kFloat64), Grade::kMaterial);
}

// At a boundary the reference allows either decision's value. An element that took the
// other decision and carries rounding besides misses by that rounding, and one that took it
// exactly is no miss at all: neither may make a rounding-sized failure elsewhere material.
// A value near neither decision is graded from the nearer one, which keeps it material.
TEST(Grades, AMissIsMeasuredFromTheNearestDecision) {
  const Tolerance tol{1e-10, 1e-12, ""};
  Array want = Array::Matrix(1, 3), other = Array::Matrix(1, 3), boundary = Array::Matrix(1, 3);
  want.data = {-0.0135, 0.5, 0.25};
  other.data = {-0.0271, 0.5, 0.25};  // at element 0 the other decision doubles the gradient
  boundary.data = {1.0, 0.0, 0.0};
  want.dtype = other.dtype = DType::kFloat32;  // the misses below are float32 rounding
  const DecisionView view{&boundary, {&other}};
  auto graded = [&](double g0, double g1) {
    Array got = want;
    got.data[0] = g0;
    got.data[1] = g1;
    return CompareField("grads/log_prob", &got, want, tol, false, view);
  };
  // The other decision with rounding on top: failed, graded rounding, shown beside it.
  const FieldReport rounding = graded(-0.0271 * (1 + 3e-8), 0.5);
  EXPECT_EQ(rounding.outcome, Outcome::kFailed);
  EXPECT_EQ(FieldGrade(rounding), Grade::kRounding);
  EXPECT_NE(rounding.Describe().find("the other decision at this boundary gives -0.0271"), std::string::npos)
      << rounding.Describe();
  // An exact flip beside a rounding miss elsewhere: the flip passes, the grade is the miss's.
  const FieldReport flip_and_miss = graded(-0.0271, 0.5 * (1 + 2e-7));
  EXPECT_EQ(flip_and_miss.flips, 1);
  EXPECT_EQ(FieldGrade(flip_and_miss), Grade::kRounding);
  // Near neither decision: material, as before.
  EXPECT_EQ(FieldGrade(graded(-0.05, 0.5)), Grade::kMaterial);
  // Off the boundary the reference's own value is the only one allowed.
  EXPECT_EQ(FieldGrade(graded(-0.0135, 0.5 * 1.01)), Grade::kMaterial);
}

}  // namespace
}  // namespace verlconf
