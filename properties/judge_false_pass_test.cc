// Two ways a wrong implementation could pass, each held shut in both directions:
//  - a statistic computed exactly and lying exactly on its bound is decided by the
//    comparison alone (verl's inclusive >= / <=): an exclusive comparison fails there,
//    while a float32 statistic that rounds onto a bound keeps its allowance;
//  - the absolute tolerance is scaled by the aggregation's weights and coefficient, so a
//    loss times kl_loss_coef 1e-3 or 1e-4 cannot hide a 10% error under the table's atol,
//    while a correct float32 result still passes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/judge/judge.h"
#include "oracle/kl/kl_penalty.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

Case Golden(const FunctionSpec& spec, Case c) {
  const Result r = spec.oracle(c);
  c.outputs = r.outputs;
  c.grads = r.grads;
  c.metrics = r.metrics;
  c.vjps = r.vjps;
  return c;
}

CaseReport Judge(const FunctionSpec& spec, const Case& golden, const Result& got) {
  return CompareResult(spec, golden, &got, std::nullopt);
}

// float32(x): what a float32 implementation holds for a value computed exactly.
Result RoundedToFloat32(Result r) {
  auto round = [](Array& a) {
    for (double& x : a.data) x = static_cast<double>(static_cast<float>(x));
  };
  for (auto& [name, a] : r.outputs) round(a);
  for (auto& [name, a] : r.grads) round(a);
  for (auto& [name, a] : r.vjps) round(a);
  for (auto& [name, v] : r.metrics) v = static_cast<double>(static_cast<float>(v));
  return r;
}

// ------------------------------------------------------------------ exact ties

// A rejection case whose log-ratio row holds exact ties: `ties` tokens at `at` (a
// statistic exactly on a bound), the others far inside the band.
Case RejectionCase(const std::string& function, DType dtype, const std::string& or_threshold, double threshold,
                   double at, int ties) {
  const FunctionSpec* spec = FindSpec(function);
  Case c = spec->generate(GenParams{3, 2, 4, dtype});
  c.name = "exact_ties";
  c.config = Config(c.Where());
  if (or_threshold.empty())
    c.config.Set("rollout_rs_threshold", threshold);
  else
    c.config.Set("rollout_rs_threshold", or_threshold);
  Array lr = Array::Matrix(2, 4, dtype), mask = lr;
  for (int64_t k = 0; k < 8; ++k) {
    lr[k] = k < ties ? at : 0.0625 * static_cast<double>(k % 3 + 1) * (k % 2 ? -1.0 : 1.0);
    mask[k] = 1.0;
  }
  c.inputs = {{"log_ratio", lr}, {"response_mask", mask}};
  return c;
}

// What an implementation with exclusive comparisons returns: the reference on inputs
// where each tie has moved one ulp to the rejecting side.
Result Exclusive(const FunctionSpec& spec, Case c, int ties, double toward) {
  Array& lr = c.inputs.at("log_ratio");
  for (int64_t k = 0; k < ties; ++k) lr[k] = std::nextafter(lr[k], toward);
  return spec.oracle(c);
}

struct Tie {
  const char* function;
  const char* or_threshold;  // "" for a numeric threshold
  double threshold;
  double at;      // the log-ratio whose statistic is exactly on a bound
  double toward;  // the direction that makes it rejected
};

const Tie kTies[] = {
    // k1 = -lr = 0 on the lower bound log(1.0) = 0 (kept: >=).
    {"token_k1", "1.0_2.0", 0, 0.0, 1.0},
    // k1 = -lr = 0 on the upper bound log(1.0) = 0 (kept: <=).
    {"token_k1", "0.5_1.0", 0, 0.0, -1.0},
    // k2 = lr^2 / 2 = 0.125 exactly on its threshold (kept: <=).
    {"token_k2", "", 0.125, 0.5, 1.0},
    // The row's k2 sum 4 * 0.125 + ... : seq_max_k2 on 0.125.
    {"seq_max_k2", "", 0.125, 0.5, 1.0},
};

TEST(ExactTies, AreNotRoundingQuestions) {
  for (const DType dtype : {DType::kFloat64, DType::kFloat32})
    for (const Tie& t : kTies) {
      const FunctionSpec& spec = *FindSpec(t.function);
      const Case golden = Golden(spec, RejectionCase(t.function, dtype, t.or_threshold, t.threshold, t.at, 2));
      const std::string what = std::string(t.function) + " " + DTypeName(dtype);
      const Result ref = spec.oracle(golden);
      for (int64_t k = 0; k < ref.boundary.size(); ++k) EXPECT_EQ(ref.boundary[k], 0.0) << what << " token " << k;
      EXPECT_EQ(ref.outputs.at("modified_response_mask")[0], 1.0) << what << ": verl's comparison is inclusive";
      EXPECT_EQ(Judge(spec, golden, ref).outcome, Outcome::kPassed) << what;
      // The same decisions with every metric one ulp of the case's dtype off (a fraction of
      // the same count rounded otherwise, a mean summed in another order) pass too.
      Result ulp = ref;
      for (auto& [name, v] : ulp.metrics)
        if (v != 0.0 && std::isfinite(v))
          v = dtype == DType::kFloat32 ? static_cast<double>(std::nextafter(static_cast<float>(v), 1e30f))
                                       : std::nextafter(v, 1e300);
      EXPECT_EQ(Judge(spec, golden, ulp).outcome, Outcome::kPassed) << what << " (metrics one ulp off)";
      const Result exclusive = Exclusive(spec, golden, 2, t.toward);
      ASSERT_EQ(exclusive.outputs.at("modified_response_mask")[0], 0.0) << what;
      const CaseReport r = Judge(spec, golden, exclusive);
      EXPECT_EQ(r.outcome, Outcome::kFailed) << what << "\n" << r.Describe();
    }
}

// IcePop's lower bound 1.0 and a log-ratio of exactly 0: the weight is exactly 1, kept.
TEST(ExactTies, AnIcePopWeightOfExactlyOneOnItsBoundIsKept) {
  const FunctionSpec& spec = *FindSpec("compute_rollout_correction_weights");
  for (const DType dtype : {DType::kFloat64, DType::kFloat32}) {
    Case c = spec.generate(GenParams{5, 2, 4, dtype});
    c.name = "icepop_exact";
    c.config = Config(c.Where());
    c.config.Set("rollout_is", std::string("token"));
    c.config.Set("rollout_is_threshold", std::string("1.0_2.0"));
    c.config.Set("rollout_is_batch_normalize", static_cast<int64_t>(0));
    Array lr = Array::Matrix(2, 4, dtype), mask = lr;
    for (int64_t k = 0; k < 8; ++k) {
      lr[k] = k < 3 ? 0.0 : 0.25 * static_cast<double>(k % 3 + 1);
      mask[k] = 1.0;
    }
    c.inputs = {{"log_ratio", lr}, {"response_mask", mask}};
    const Case golden = Golden(spec, c);
    const Result ref = spec.oracle(golden);
    for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(ref.boundary[k], 0.0) << DTypeName(dtype) << " token " << k;
    EXPECT_EQ(Judge(spec, golden, ref).outcome, Outcome::kPassed);
    // An exclusive lower bound drops the weights of exactly 1.
    Result exclusive = ref;
    for (int64_t k = 0; k < 3; ++k) exclusive.outputs.at("rollout_is_weights")[k] = 0.0;
    const CaseReport r = Judge(spec, golden, exclusive);
    EXPECT_EQ(r.outcome, Outcome::kFailed) << DTypeName(dtype) << "\n" << r.Describe();
  }
}

// The other direction: a float32 log-ratio that rounds onto IcePop's bound (the exact
// difference of the log-probs lies beyond it) keeps its allowance, and the candidate
// that decided on the exact difference passes.
TEST(ExactTies, AFloat32StatisticRoundedOntoABoundKeepsItsAllowance) {
  const FunctionSpec& spec = *FindSpec("decoupled_token_icepop");
  Case c = spec.generate(GenParams{9, 1, 4, DType::kFloat32});
  c.name = "rounded_onto_bound";
  c.config = Config(c.Where());
  c.config.Set("threshold", 2.0);
  c.config.Set("threshold_lower", 0.5);
  // old - rollout is float32(log 2) only after float32 rounding.
  const float ln2 = static_cast<float>(std::log(2.0));
  Array old_lp = Array::Matrix(1, 4, DType::kFloat32), rollout = old_lp, mask = old_lp;
  bool found = false;
  // A small rollout log-prob and a large difference: the float32 subtraction rounds.
  for (int step = 1; step < 100000 && !found; ++step) {
    const float r = -1e-3f - 1e-9f * static_cast<float>(step);
    const float o = r + ln2;
    const double exact = static_cast<double>(o) - static_cast<double>(r);
    if (static_cast<float>(exact) == ln2 && exact > static_cast<double>(ln2)) {
      old_lp[0] = o;
      rollout[0] = r;
      found = true;
    }
  }
  ASSERT_TRUE(found);
  for (int64_t k = 1; k < 4; ++k) {
    old_lp[k] = -1.0;
    rollout[k] = -1.0 - 0.125 * static_cast<double>(k);
  }
  for (double& m : mask.data) m = 1.0;
  c.inputs = {{"old_log_prob", old_lp}, {"rollout_log_prob", rollout}, {"response_mask", mask}};
  const Case golden = Golden(spec, c);
  const Result ref = spec.oracle(golden);
  EXPECT_EQ(ref.boundary[0], 1.0);
  // Decided on the exact difference: beyond the upper bound, dropped.
  Case exact_side = golden;
  exact_side.inputs.at("old_log_prob")[0] = static_cast<double>(old_lp[0]) + 1e-6;
  const Result other = spec.oracle(exact_side);
  ASSERT_NE(other.outputs.at("rollout_is_weights")[0], ref.outputs.at("rollout_is_weights")[0]);
  Result got = ref;
  got.outputs.at("rollout_is_weights")[0] = other.outputs.at("rollout_is_weights")[0];
  got.outputs.at("response_mask")[0] = other.outputs.at("response_mask")[0];
  const CaseReport r = Judge(spec, golden, got);
  EXPECT_NE(r.outcome, Outcome::kFailed) << r.Describe();
}

// ------------------------------------------------------------------ scaled outputs

Case KlLossCase(double coef, uint64_t seed, const std::string& agg) {
  const FunctionSpec& spec = *FindSpec("actor_kl_loss");
  Case c = spec.generate(GenParams{seed, 8, 32, DType::kFloat32});
  c.name = "coef";
  c.config.Set("kl_loss_coef", coef);
  c.config.Set("kl_loss_type", std::string("low_var_kl"));
  c.config.Set("loss_agg_mode", agg);
  return Golden(spec, c);
}

TEST(ScaledOutputs, ATenPercentErrorAtASmallCoefficientFailsInFloat32) {
  const FunctionSpec& spec = *FindSpec("actor_kl_loss");
  for (const double coef : {1e-3, 1e-4})
    for (const char* agg : {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum"})
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        const Case golden = KlLossCase(coef, seed, agg);
        const std::string what = "coef " + std::to_string(coef) + " " + agg + " seed " + std::to_string(seed);
        const Result right = RoundedToFloat32(spec.oracle(golden));
        EXPECT_EQ(Judge(spec, golden, right).outcome, Outcome::kPassed) << what;
        Result loss_off = right;
        loss_off.outputs.at("kl_term")[0] *= 1.1;
        EXPECT_EQ(Judge(spec, golden, loss_off).outcome, Outcome::kFailed) << what << " (loss)";
        Result grad_off = right;
        for (double& g : grad_off.grads.at("log_prob").data) g *= 1.1;
        EXPECT_EQ(Judge(spec, golden, grad_off).outcome, Outcome::kFailed) << what << " (gradient)";
      }
}

// The other direction of the narrowed atol: a correct float32 result computed another way
// passes. The KL term summed in float32 in reverse token order (not the reference's exact
// sum, not torch's pairwise one), each gradient element as float32 products, and the
// reference's own values moved one float32 ulp, all at kl_loss_coef 1e-3 and 1e-4.
TEST(ScaledOutputs, ACorrectFloat32ResultComputedAnotherWayPasses) {
  const FunctionSpec& spec = *FindSpec("actor_kl_loss");
  for (const double coef : {1e-3, 1e-4})
    for (const char* agg : {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum"})
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        const Case golden = KlLossCase(coef, seed, agg);
        const std::string what = "coef " + std::to_string(coef) + " " + agg + " seed " + std::to_string(seed);
        const Array& lp = golden.Input("log_prob");
        const Array& ref = golden.Input("ref_log_prob");
        const Array kl = oracle::kl_penalty(lp, ref, "low_var_kl");
        const Array dkl = oracle::kl_penalty_grad(lp, ref, "low_var_kl");
        const Array w = oracle::agg_loss_weights(golden.Input("response_mask"), agg, oracle::GlobalBatchInfo{});
        float sum = 0.0f;
        for (int64_t k = kl.size() - 1; k >= 0; --k) sum += static_cast<float>(w[k]) * static_cast<float>(kl[k]);
        Result other = RoundedToFloat32(spec.oracle(golden));
        other.outputs.at("kl_term")[0] = static_cast<double>(static_cast<float>(coef) * sum);
        Array& g = other.grads.at("log_prob");
        for (int64_t k = 0; k < g.size(); ++k)
          g[k] = static_cast<double>(static_cast<float>(coef) * static_cast<float>(w[k]) * static_cast<float>(dkl[k]));
        CaseReport r = Judge(spec, golden, other);
        EXPECT_EQ(r.outcome, Outcome::kPassed) << what << " (another order)\n" << r.Describe();
        Result ulp = RoundedToFloat32(spec.oracle(golden));
        auto up = [](double& x) { x = static_cast<double>(std::nextafter(static_cast<float>(x), 1e30f)); };
        up(ulp.outputs.at("kl_term")[0]);
        for (double& x : ulp.grads.at("log_prob").data) up(x);
        r = Judge(spec, golden, ulp);
        EXPECT_EQ(r.outcome, Outcome::kPassed) << what << " (one ulp)\n" << r.Describe();
      }
}

// A KL penalty beside sparse scores (verl's: the score on the last token only): every
// other element is kl_coef times a KL of order one.
TEST(ScaledOutputs, ATenPercentErrorInASmallKlPenaltyFailsInFloat32) {
  const FunctionSpec& spec = *FindSpec("apply_kl_penalty");
  for (const double coef : {1e-3, 1e-4})
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      Case c = spec.generate(GenParams{seed, 6, 16, DType::kFloat32});
      c.name = "sparse";
      c.config.Set("kl_coef", coef);
      c.config.Set("kl_ctrl_type", std::string("fixed"));
      Array& scores = c.inputs.at("token_level_scores");
      for (int64_t i = 0; i < scores.rows(); ++i)
        for (int64_t t = 0; t + 1 < scores.cols(); ++t) scores.at(i, t) = 0.0;
      const Case golden = Golden(spec, c);
      const std::string what = "coef " + std::to_string(coef) + " seed " + std::to_string(seed);
      const Result right = RoundedToFloat32(spec.oracle(golden));
      EXPECT_EQ(Judge(spec, golden, right).outcome, Outcome::kPassed) << what;
      // Computed another way: float32(score - float32(coef * float32(kld))), the penalty
      // taken from the reference (scores - rewards) in float64.
      Result other = right;
      for (int64_t k = 0; k < scores.size(); ++k) {
        const float penalty = static_cast<float>(scores[k] - golden.outputs.at("token_level_rewards")[k]);
        other.outputs.at("token_level_rewards")[k] = static_cast<double>(static_cast<float>(scores[k]) - penalty);
      }
      EXPECT_EQ(Judge(spec, golden, other).outcome, Outcome::kPassed) << what << " (another way)";
      // The penalty (scores - rewards) 10% larger.
      Result off = right;
      Array& rewards = off.outputs.at("token_level_rewards");
      for (int64_t k = 0; k < rewards.size(); ++k) rewards[k] -= 0.1 * (scores[k] - rewards[k]);
      EXPECT_EQ(Judge(spec, golden, off).outcome, Outcome::kFailed) << what;
    }
}

// A local micro-batch whose loss is divided by a much larger global token count is a
// small-scaled output too.
TEST(ScaledOutputs, ALocalShareOfAGlobalTokenCountIsJudgedAtItsOwnScale) {
  const FunctionSpec& spec = *FindSpec("token-mean");
  Case c = spec.generate(GenParams{4, 4, 16, DType::kFloat32});
  c.name = "global";
  c.config.Set("dp_size", static_cast<int64_t>(1));
  c.config.Set("batch_num_tokens", int64_t{100000});
  const Case golden = Golden(spec, c);
  const Result right = RoundedToFloat32(spec.oracle(golden));
  ASSERT_LT(std::fabs(right.outputs.at("loss")[0]), 3e-5) << "the loss must be below the table's atol";
  EXPECT_EQ(Judge(spec, golden, right).outcome, Outcome::kPassed);
  Result off = right;
  off.outputs.at("loss")[0] *= 1.1;
  EXPECT_EQ(Judge(spec, golden, off).outcome, Outcome::kFailed);
}

}  // namespace
}  // namespace verlconf
