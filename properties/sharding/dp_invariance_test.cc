// The oracle's data-parallel invariance, for every registry entry that aggregates a loss:
// a batch sharded as verl's trainer shards it (oracle/sharding/shard.h), each micro-batch
// through the oracle, combined as DDP/FSDP combine it, gives the full batch's loss and
// gradient exactly where verl's semantics are invariant, and verl's sharded semantics
// (ShardedReference) where they are not (docs/verl-quirks.md, "Data-parallel sharding").
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "oracle/core/errors.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "properties/sharding/sharding_testing.h"

namespace verlconf {
namespace {

using sharding::Classify;
using sharding::DpKind;
using sharding::DpVerdict;
using testing::CloseResults;
using testing::Tol;

// float64 throughout: the sharded run and the reference add the same terms in another
// order and scale them by k and 1/k, so they agree to rounding of the sums behind the
// loss (scaled by their magnitude) and to a few ulps per gradient element.
constexpr Tol kLossTol{1e-10, 1e-12};
constexpr Tol kGradTol{1e-10, 1e-15};

class DpInvariance : public ::testing::TestWithParam<const FunctionSpec*> {};

TEST_P(DpInvariance, ShardedEqualsVerlSemantics) {
  const FunctionSpec& spec = *GetParam();
  const bool ok = rc::check(spec.family + "/" + spec.name, [&spec] {
    const testing::ShardedDraw d = *testing::ArbitrarySharding(spec, DType::kFloat64);
    Result full;
    try {
      full = sharding::FullBatchReference(spec, spec.oracle, d.full);
    } catch (const VerlError& e) {
      // A configuration verl refuses on the full batch is refused on every shard too.
      RC_ASSERT_THROWS_AS(sharding::RunSharded(spec, spec.oracle, d.full, d.plan), VerlError);
      RC_SUCCEED("verl raises");
    }
    const DpVerdict v = Classify(spec, d.full, d.plan);
    Result sharded;
    try {
      sharded = sharding::RunSharded(spec, spec.oracle, d.full, d.plan);
    } catch (const VerlError& e) {
      // verl's rollout-correction pipeline, run inside the loss, refuses some
      // micro-batches the full batch passes (docs/verl-quirks.md); no other loss does.
      RC_ASSERT(sharding::MicroBatchMayRaise(spec));
      // The two refusals verl's helpers have: no valid token, or no IS weight left.
      RC_ASSERT(testing::HasEmptyCall(spec, d.full, d.plan) || e.kind() == "ZeroDivisionError");
      RC_TAG(std::string("a micro-batch raises ") + e.kind());
      RC_SUCCEED("verl raises on a micro-batch");
    }
    RC_TAG(sharding::DpKindName(v.kind));
    if (v.kind == DpKind::kLocal) RC_SUCCEED("local statistic: the sharded run is verl's semantics");
    const double scale = full.magnitude.abs_sum;
    const Result want = sharding::ShardedReference(spec, spec.oracle, d.full, d.plan);
    RC_ASSERT(CloseResults(spec, sharded, want, kLossTol, kGradTol, scale));
    if (v.kind == DpKind::kInvariant) RC_ASSERT(CloseResults(spec, sharded, full, kLossTol, kGradTol, scale));
  });
  EXPECT_TRUE(ok);
}

// One rank, one micro-batch, full width, live sequences counted: the one call is the
// full batch, and the reference formula agrees with it; where the loss rejects tokens
// the trainer counted, the formula (not the batch's own counts) is what verl gives.
TEST_P(DpInvariance, OneRankOneMicroBatchIsTheFullBatch) {
  const FunctionSpec& spec = *GetParam();
  const bool ok = rc::check(spec.family + "/" + spec.name, [&spec] {
    GenParams p;
    p.seed = *rc::gen::arbitrary<uint64_t>();
    p.batch = *rc::gen::inRange<int64_t>(1, 17);
    p.tokens = *rc::gen::inRange<int64_t>(1, 25);
    const Case full = spec.generate(p);
    sharding::ShardPlan plan;
    plan.ranks.resize(1);
    plan.ranks[0].micro_batches.resize(1);
    for (int64_t i = 0; i < p.batch; ++i) plan.ranks[0].micro_batches[0].rows.push_back(i);
    plan.trainer.horizon = sharding::Horizon::kFull;
    plan.trainer.sequences = sharding::SequenceCount::kLive;
    Result full_result;
    try {
      full_result = sharding::FullBatchReference(spec, spec.oracle, full);
    } catch (const VerlError&) {
      RC_SUCCEED("verl raises");
    }
    const Result sharded = sharding::RunSharded(spec, spec.oracle, full, plan);
    const double scale = full_result.magnitude.abs_sum;
    const DpVerdict v = Classify(spec, full, plan);
    // Local statistics and counts that are the batch's own: the one call is the batch
    // (unless the loss rejects tokens the trainer counted).
    if (v.kind == DpKind::kInvariant || (v.kind == DpKind::kLocal && !sharding::RejectsInsideLoss(spec, full)))
      RC_ASSERT(CloseResults(spec, sharded, full_result, kLossTol, kGradTol, scale));
    if (v.kind != DpKind::kLocal)
      RC_ASSERT(CloseResults(spec, sharded, sharding::ShardedReference(spec, spec.oracle, full, plan), kLossTol,
                             kGradTol, scale));
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(AggregatingLosses, DpInvariance, ::testing::ValuesIn(testing::AggregatingLosses()),
                         [](const auto& info) { return testing::TestName(*info.param); });

}  // namespace
}  // namespace verlconf
