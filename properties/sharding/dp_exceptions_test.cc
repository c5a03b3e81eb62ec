// verl's own exceptions to data-parallel invariance, each shown on a batch built to
// expose it, with the formula docs/verl-quirks.md gives for it; which registry entries
// are local statistics; and that the invariance check catches the fault it exists for
// (a per-rank local normaliser).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "oracle/core/errors.h"
#include "oracle/registry.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/shard.h"
#include "properties/sharding/sharding_testing.h"

namespace verlconf {
namespace {

using sharding::DpKind;
using sharding::ShardPlan;
using testing::CloseResults;
using testing::Tol;

constexpr Tol kLossTol{1e-10, 1e-12};
constexpr Tol kGradTol{1e-10, 1e-15};

const FunctionSpec& Spec(const std::string& family, const std::string& name) {
  const FunctionSpec* s = FindSpec(name, family);
  if (!s) throw std::logic_error("no registry entry " + family + "/" + name);
  return *s;
}

// ranks[r][m] = the rows of rank r's micro-batch m.
ShardPlan Plan(const std::vector<std::vector<std::vector<int64_t>>>& ranks) {
  ShardPlan p;
  for (const auto& r : ranks) {
    sharding::Rank rank;
    for (const auto& rows : r) rank.micro_batches.push_back({rows});
    p.ranks.push_back(rank);
  }
  return p;
}

// An aggregation case: loss_mat rows i of value (i + 1) * (t + 1) / 10, and rows of the
// given valid lengths (0 = fully masked).
Case AggCase(const std::string& mode, const std::vector<int64_t>& lengths, int64_t cols) {
  const int64_t rows = static_cast<int64_t>(lengths.size());
  GenParams p;
  p.batch = rows;
  p.tokens = cols;
  Case c = Spec("aggregation", mode).generate(p);
  Array& loss = c.inputs.at("loss_mat");
  Array& mask = c.inputs.at("loss_mask");
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < cols; ++t) {
      loss.at(i, t) = static_cast<double>((i + 1) * (t + 1)) / 10.0;
      mask.at(i, t) = t < lengths[static_cast<size_t>(i)] ? 1.0 : 0.0;
    }
  return c;
}

double Loss(const Result& r) { return r.outputs.begin()->second[0]; }

// seq-mean-token-sum-norm divides by loss_mask.shape[-1] when loss_scale_factor is None:
// in verl's unpadded engine that is each micro-batch's longest response, not the batch's.
TEST(DpExceptions, SumNormWithoutScaleFactorDividesByEachMicroBatchsHorizon) {
  const FunctionSpec& spec = Spec("aggregation", "seq-mean-token-sum-norm");
  const Case full = AggCase(spec.name, {8, 6, 3, 2}, 8);
  const ShardPlan plan = Plan({{{0, 1}}, {{2, 3}}});  // horizons 8 and 3
  EXPECT_EQ(sharding::Classify(spec, full, plan).kind, DpKind::kHorizon);
  const Result whole = sharding::FullBatchReference(spec, spec.oracle, full);
  const Result sharded = sharding::RunSharded(spec, spec.oracle, full, plan);
  // Rows 2 and 3 are divided by 3 instead of 8: their share grows by 8/3.
  double rows01 = 0, rows23 = 0;
  for (int64_t t = 0; t < 8; ++t) {
    rows01 += full.Input("loss_mat").at(0, t) * full.Input("loss_mask").at(0, t) +
              full.Input("loss_mat").at(1, t) * full.Input("loss_mask").at(1, t);
    rows23 += full.Input("loss_mat").at(2, t) * full.Input("loss_mask").at(2, t) +
              full.Input("loss_mat").at(3, t) * full.Input("loss_mask").at(3, t);
  }
  EXPECT_NEAR(Loss(whole), (rows01 + rows23) / 4.0 / 8.0, 1e-12);
  EXPECT_NEAR(Loss(sharded), (rows01 / 8.0 + rows23 / 3.0) / 4.0, 1e-12);
  EXPECT_TRUE(
      CloseResults(spec, sharded, sharding::ShardedReference(spec, spec.oracle, full, plan), kLossTol, kGradTol, 1.0));
  EXPECT_FALSE(CloseResults(spec, sharded, whole, kLossTol, kGradTol, 1.0));

  // A constant loss_scale_factor (what verl's docstring advises) restores invariance, as
  // does a trainer that pads every micro-batch to the batch's width.
  Case fixed = full;
  fixed.config.Set("loss_scale_factor", 8.0);
  EXPECT_EQ(sharding::Classify(spec, fixed, plan).kind, DpKind::kInvariant);
  EXPECT_TRUE(CloseResults(spec, sharding::RunSharded(spec, spec.oracle, fixed, plan),
                           sharding::FullBatchReference(spec, spec.oracle, fixed), kLossTol, kGradTol, 1.0));
  ShardPlan padded = plan;
  padded.trainer.horizon = sharding::Horizon::kFull;
  EXPECT_EQ(sharding::Classify(spec, full, padded).kind, DpKind::kInvariant);
  EXPECT_TRUE(
      CloseResults(spec, sharding::RunSharded(spec, spec.oracle, full, padded), whole, kLossTol, kGradTol, 1.0));
}

// global_batch_size is ppo_mini_batch_size * rollout.n: fully masked sequences count.
// agg_loss alone counts live ones, so the sharded loss is the full batch's times
// live / B for every seq-mean mode.
TEST(DpExceptions, FullyMaskedSequencesCountInGlobalBatchSize) {
  for (const char* mode : {"seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"}) {
    const FunctionSpec& spec = Spec("aggregation", mode);
    Case full = AggCase(mode, {5, 0, 3, 4, 0, 2}, 6);
    full.config.Set("loss_scale_factor", 6.0);  // the horizon apart
    const ShardPlan plan = Plan({{{0, 1}, {2}}, {{3, 4, 5}}});
    EXPECT_EQ(sharding::Classify(spec, full, plan).kind, DpKind::kTrainerCounts) << mode;
    const Result whole = sharding::FullBatchReference(spec, spec.oracle, full);
    const Result sharded = sharding::RunSharded(spec, spec.oracle, full, plan);
    EXPECT_NEAR(Loss(sharded), Loss(whole) * 4.0 / 6.0, 1e-12) << mode;
    EXPECT_TRUE(
        CloseResults(spec, sharded, sharding::ShardedReference(spec, spec.oracle, full, plan), kLossTol, kGradTol, 1.0))
        << mode;
    ShardPlan live = plan;
    live.trainer.sequences = sharding::SequenceCount::kLive;
    EXPECT_EQ(sharding::Classify(spec, full, live).kind, DpKind::kInvariant) << mode;
    EXPECT_TRUE(CloseResults(spec, sharding::RunSharded(spec, spec.oracle, full, live), whole, kLossTol, kGradTol, 1.0))
        << mode;
  }
}

// geo_mean takes torch.mean over the rows it is given: with k ranks of m equal
// micro-batches each, the combination is m times the full batch's loss.
TEST(DpExceptions, GeoMeanIsAMeanOverEachMicroBatch) {
  const FunctionSpec& spec = Spec("policy_loss", "geo_mean");
  GenParams p;
  p.seed = 7;
  p.batch = 12;
  p.tokens = 10;
  const Case full = spec.generate(p);
  const ShardPlan plan = Plan({{{0, 1}, {2, 3}, {4, 5}}, {{6, 7}, {8, 9}, {10, 11}}});
  EXPECT_EQ(sharding::Classify(spec, full, plan).kind, DpKind::kLocal);
  const Result whole = sharding::FullBatchReference(spec, spec.oracle, full);
  const Result sharded = sharding::RunSharded(spec, spec.oracle, full, plan);
  ASSERT_GT(std::fabs(Loss(whole)), 1e-6);
  EXPECT_NEAR(Loss(sharded), 3.0 * Loss(whole), 1e-12 * std::fabs(Loss(whole)) + 1e-14);
}

// Losses that take no global-batch arguments (the deprecated compute_policy_loss,
// compute_entropy_loss) normalise each micro-batch by itself and are divided by k by
// DDP's average: with token-sum the combination is the full batch's over k.
TEST(DpExceptions, NoGlobalArgumentsMeansALocalNormaliser) {
  for (const char* name : {"compute_policy_loss", "compute_entropy_loss"}) {
    const FunctionSpec& spec = Spec("policy_loss", name);
    GenParams p;
    p.seed = 11;
    p.batch = 8;
    p.tokens = 6;
    Case full = spec.generate(p);
    full.config.Set("loss_agg_mode", std::string("token-sum"));
    const ShardPlan four = Plan({{{0, 1, 2}, {3}}, {{4}, {5}}, {{7}}, {{6}}});
    EXPECT_EQ(sharding::Classify(spec, full, four).kind, DpKind::kLocal) << name;
    const Result whole = sharding::FullBatchReference(spec, spec.oracle, full);
    const Result sharded = sharding::RunSharded(spec, spec.oracle, full, four);
    EXPECT_NEAR(Loss(sharded), Loss(whole) / 4.0, 1e-12 * (1.0 + std::fabs(Loss(whole)))) << name;
  }
}

// Which entries are local statistics whatever the sharding: the list the quirks
// document gives. (clip_cov and kl_cov only without a token pick of their own.)
TEST(DpExceptions, TheLocalStatisticsAreTheDocumentedOnes) {
  std::set<std::string> local;
  for (const FunctionSpec* spec : testing::AggregatingLosses()) {
    GenParams p;
    p.seed = 3;
    Case c = spec->generate(p);
    c.config = Config();
    ResolveConfig(*spec, c.config);
    c.inputs.erase("cov_selected");
    if (!sharding::LocalStatisticReason(*spec, c).empty()) local.insert(spec->family + "/" + spec->name);
  }
  const std::set<std::string> documented = {"policy_loss/compute_policy_loss", "policy_loss/compute_entropy_loss",
                                            "policy_loss/geo_mean", "policy_loss/clip_cov", "policy_loss/kl_cov"};
  EXPECT_EQ(local, documented);
}

// A golden's covariance pick is the full batch's; a candidate (verl itself included) picks
// again in each micro-batch, so its sharded calls are judged as a local statistic, not
// against the recorded pick. Only the cov losses lose their pick.
TEST(DpExceptions, ARecordedCovariancePickIsNoReferenceForShardedCalls) {
  for (const FunctionSpec* spec : testing::AggregatingLosses()) {
    GenParams p;
    p.seed = 7;
    Case c = spec->generate(p);
    c.config = Config();
    ResolveConfig(*spec, c.config);
    if (spec->FindInput("cov_selected")) {
      Array pick = c.Input(sharding::LossMaskInput(*spec)->name);
      c.inputs["cov_selected"] = pick;
      ASSERT_TRUE(sharding::LocalStatisticReason(*spec, c).empty()) << spec->name;  // given: per token
    }
    const Case judged = sharding::JudgedFullBatch(*spec, c);
    if (spec->FindInput("cov_selected")) {
      EXPECT_FALSE(judged.OptionalInput("cov_selected")) << spec->name;
      EXPECT_NE(sharding::LocalStatisticReason(*spec, judged), "") << spec->name;
    } else {
      EXPECT_EQ(judged.inputs.size(), c.inputs.size()) << spec->name;
    }
  }
}

// A micro-batch without a valid token: the losses that run the rollout-correction
// pipeline inside themselves (bypass mode) raise, as verl's helpers do; every other loss
// returns (a zero or 0/0 contribution).
TEST(DpExceptions, OnlyThePipelineLossesRefuseAnAllMaskedMicroBatch) {
  for (const FunctionSpec* spec : testing::AggregatingLosses()) {
    GenParams p;
    p.seed = 5;
    p.batch = 3;
    p.tokens = 4;
    Case c = spec->generate(p);
    for (const InputSpec& in : spec->inputs)
      if (in.is_mask && in.role == Role::kTokens && c.inputs.count(in.name))
        for (double& v : c.inputs.at(in.name).data) v = 0.0;
    bool raised = false;
    try {
      spec->oracle(c);
    } catch (const VerlError&) {
      raised = true;
    }
    EXPECT_EQ(raised, sharding::MicroBatchMayRaise(*spec)) << spec->family << "/" << spec->name;
  }
}

// The fault the check exists for: each rank normalises by its own counts (a local token
// or sequence mean, no dp_size) and DDP averages. It must be caught on every loss that
// verl makes invariant, on some of 40 random shardings.
class LocalNormaliser : public ::testing::TestWithParam<const FunctionSpec*> {};

TEST_P(LocalNormaliser, IsCaught) {
  const FunctionSpec& spec = *GetParam();
  if (!sharding::TakesGlobalBatchInfo(spec)) GTEST_SKIP() << "no global-batch arguments to leave out";
  if (spec.family == "policy_loss" && spec.name == "geo_mean") GTEST_SKIP() << "global-batch arguments ignored";
  const RunFn local = [&spec](const Case& c) {
    Case d = c;
    for (const char* key : {"dp_size", "batch_num_tokens", "global_batch_size"}) d.config.Erase(key);
    return spec.oracle(d);
  };
  int compared = 0, caught = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    GenParams p;
    p.seed = seed;
    p.batch = 12;
    p.tokens = 9;
    Case full = spec.generate(p);
    oracle::InputGen g(seed);
    const ShardPlan plan = sharding::RandomPlan(g, p.batch, seed % 2 ? 2 : 4, 2);
    if (spec.FindInput("cov_selected") && !full.OptionalInput("cov_selected")) {
      // A token pick of the batch's own, so that the loss is per token (invariant).
      Array pick = full.Input(sharding::LossMaskInput(spec)->name);
      for (double& v : pick.data) v = v != 0.0 && g.Coin(0.2) ? 1.0 : 0.0;
      full.inputs["cov_selected"] = pick;
    }
    if (!sharding::LocalStatisticReason(spec, full).empty()) continue;
    Result want, faulty;
    try {
      want = sharding::ShardedReference(spec, spec.oracle, full, plan);
      faulty = sharding::RunSharded(spec, local, full, plan);
    } catch (const VerlError&) {
      continue;  // verl refuses the batch or one of its micro-batches
    }
    ++compared;
    if (!CloseResults(spec, faulty, want, kLossTol, kGradTol, want.magnitude.abs_sum)) ++caught;
    // The pristine run passes the same check.
    EXPECT_TRUE(CloseResults(spec, sharding::RunSharded(spec, spec.oracle, full, plan), want, kLossTol, kGradTol,
                             want.magnitude.abs_sum))
        << "seed " << seed;
  }
  ASSERT_GT(compared, 0) << "every draw was a local statistic or refused";
  EXPECT_GT(caught, compared / 2) << caught << " of " << compared << " caught";
}

INSTANTIATE_TEST_SUITE_P(AggregatingLosses, LocalNormaliser, ::testing::ValuesIn(testing::AggregatingLosses()),
                         [](const auto& info) { return testing::TestName(*info.param); });

}  // namespace
}  // namespace verlconf
