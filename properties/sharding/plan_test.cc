// The sharding itself: random plans are valid plans, invalid ones are refused, and each
// call holds its rows, its width and the counts verl's trainer gives it.
#include "oracle/sharding/plan.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "oracle/registry.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/shard.h"

namespace verlconf {
namespace {

using sharding::ShardPlan;

RC_GTEST_PROP(ShardPlans, RandomPlansAreValidAndUneven, ()) {
  const int64_t k = *rc::gen::element<int64_t>(2, 4, 8);
  const int64_t batch = *rc::gen::inRange<int64_t>(k, 40);
  oracle::InputGen g(*rc::gen::arbitrary<uint64_t>());
  const ShardPlan plan = sharding::RandomPlan(g, batch, k, 3);
  RC_ASSERT(plan.dp_size() == k);
  sharding::ValidatePlan(plan, batch);  // throws on a bad plan
  for (const sharding::Rank& r : plan.ranks) RC_ASSERT(r.micro_batches.size() <= 3u);
}

TEST(ShardPlans, InvalidPlansAreRefused) {
  ShardPlan p;
  EXPECT_THROW(sharding::ValidatePlan(p, 2), std::invalid_argument);  // no ranks
  p.ranks = {sharding::Rank{{{{0}}}}, sharding::Rank{{{{1}}}}};
  EXPECT_NO_THROW(sharding::ValidatePlan(p, 2));
  EXPECT_THROW(sharding::ValidatePlan(p, 3), std::invalid_argument);  // row 2 nowhere
  p.ranks[1].micro_batches[0].rows = {0};
  EXPECT_THROW(sharding::ValidatePlan(p, 2), std::invalid_argument);  // row 0 twice
  p.ranks[1].micro_batches[0].rows = {};
  EXPECT_THROW(sharding::ValidatePlan(p, 1), std::invalid_argument);  // empty micro-batch
  p.ranks[1].micro_batches[0].rows = {5};
  EXPECT_THROW(sharding::ValidatePlan(p, 2), std::invalid_argument);  // out of range
}

// Rows 0..3 with valid lengths 2, 0, 5, 1 of T = 6; rank 0 holds rows {3, 0} and {1},
// rank 1 holds {2}.
TEST(ShardCase, CallsHoldTheirRowsWidthsAndTheTrainersCounts) {
  const FunctionSpec& spec = *FindSpec("vanilla", "policy_loss");
  GenParams p;
  p.batch = 4;
  p.tokens = 6;
  Case full = spec.generate(p);
  const int64_t lengths[] = {2, 0, 5, 1};
  Array& mask = full.inputs.at("response_mask");
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t t = 0; t < 6; ++t) mask.at(i, t) = t < lengths[i] ? 1.0 : 0.0;
  ShardPlan plan;
  plan.ranks = {sharding::Rank{{{{3, 0}}, {{1}}}}, sharding::Rank{{{{2}}}}};
  const sharding::ShardedCase s = sharding::ShardCase(spec, full, plan);
  ASSERT_EQ(s.calls.size(), 3u);
  EXPECT_EQ(s.counts.dp_size, 2);
  EXPECT_EQ(s.counts.batch_num_tokens, 8);
  EXPECT_EQ(s.counts.global_batch_size, 4);  // the fully masked row counts
  const int64_t widths[] = {2, 1, 5};        // longest valid response; at least 1
  for (size_t c = 0; c < 3; ++c) {
    const sharding::ShardCall& call = s.calls[c];
    EXPECT_EQ(call.horizon, widths[c]);
    EXPECT_EQ(call.input.Input("log_prob").cols(), widths[c]);
    EXPECT_EQ(call.input.Input("log_prob").rows(), static_cast<int64_t>(call.rows.size()));
    for (size_t i = 0; i < call.rows.size(); ++i)
      for (int64_t t = 0; t < widths[c]; ++t)
        EXPECT_EQ(call.input.Input("log_prob").at(static_cast<int64_t>(i), t),
                  full.Input("log_prob").at(call.rows[i], t));
    EXPECT_EQ(call.input.config.Int("dp_size"), 2);
    EXPECT_EQ(call.input.config.Int("batch_num_tokens"), 8);
    EXPECT_EQ(call.input.config.Int("global_batch_size"), 4);
  }
  plan.trainer.sequences = sharding::SequenceCount::kLive;
  plan.trainer.horizon = sharding::Horizon::kFull;
  const sharding::ShardedCase live = sharding::ShardCase(spec, full, plan);
  EXPECT_EQ(live.counts.global_batch_size, 3);
  for (const sharding::ShardCall& call : live.calls) EXPECT_EQ(call.horizon, 6);
}

// B x T x V logits are cut by rows and tokens; the vocabulary stays whole, and the
// combined gradient lands back on the full batch's rows and tokens.
TEST(ShardCase, VocabularyLogitsAreCutByRowsAndTokens) {
  const FunctionSpec& spec = *FindSpec("compute_entropy_loss", "policy_loss");
  GenParams p;
  p.batch = 3;
  p.tokens = 4;
  const Case full = spec.generate(p);
  const Array& logits = full.Input("logits");
  ASSERT_EQ(logits.rank(), 3);
  ShardPlan plan;
  plan.ranks = {sharding::Rank{{{{2}}}}, sharding::Rank{{{{0, 1}}}}};
  plan.trainer.horizon = sharding::Horizon::kFull;
  const sharding::ShardedCase s = sharding::ShardCase(spec, full, plan);
  EXPECT_EQ(s.calls[0].input.Input("logits").shape, (std::vector<int64_t>{1, 4, logits.shape[2]}));
  EXPECT_EQ(s.calls[1].input.Input("logits").shape, (std::vector<int64_t>{2, 4, logits.shape[2]}));
  const Result r = sharding::RunSharded(spec, spec.oracle, full, plan);
  EXPECT_EQ(r.grads.at("logits").shape, logits.shape);
}

}  // namespace
}  // namespace verlconf
