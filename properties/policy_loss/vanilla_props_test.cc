// Invariants of the vanilla PPO loss, each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/errors.h"
#include "oracle/policy_loss/vanilla.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::Generate;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

oracle::GlobalBatchInfo Local() { return {}; }

// NaN is a legitimate loss here: verl divides 0 by 0 on an all-masked micro-batch, so
// both sides of an identity may be NaN (NanPolicy::kNanEqualsNan).

// On-policy (log_prob == old_log_prob) every ratio is 1: nothing is clipped and the
// loss is minus the aggregated advantage (times the IS weights).
RC_GTEST_PROP(Vanilla, OnPolicyIsMinusAggregatedAdvantage, ()) {
  Case c = Generate("vanilla", *ArbitraryParams());
  c.inputs["log_prob"] = c.Input("old_log_prob");
  const Result r = RunOracle(c);
  Array neg = c.Input("advantages");
  for (int64_t k = 0; k < neg.size(); ++k)
    neg[k] = -neg[k] * (c.OptionalInput("rollout_is_weights") ? (*c.OptionalInput("rollout_is_weights"))[k] : 1.0);
  const double want = oracle::agg_loss(neg, c.Input("response_mask"), c.config.String("loss_agg_mode", ""), Local());
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], want, Tol{1e-12, 1e-12}, NanPolicy::kNanEqualsNan));
  RC_ASSERT(r.metrics.at("actor/pg_clipfrac") == 0.0);
  RC_ASSERT(r.metrics.at("actor/pg_clipfrac_lower") == 0.0);
  RC_ASSERT(r.metrics.at("actor/ppo_kl") == 0.0);
}

// Inside the clip range (and below the dual-clip bound) PPO is the plain surrogate
// -A * ratio: clipping must not act where it has no reason to.
RC_GTEST_PROP(Vanilla, InsideClipRangeEqualsUnclippedSurrogate, ()) {
  Case c = Generate("vanilla", *ArbitraryParams());
  c.config.Set("clip_ratio_low", 0.2);
  c.config.Set("clip_ratio_high", 0.2);
  Array& lp = c.inputs["log_prob"];
  for (int64_t k = 0; k < lp.size(); ++k)  // |log ratio| < 0.15 keeps the ratio in (0.86, 1.17)
    lp[k] = c.Input("old_log_prob")[k] + std::fmod(std::fabs(lp[k] - c.Input("old_log_prob")[k]), 0.3) - 0.15;
  const Result r = RunOracle(c);
  Array surrogate = c.Input("advantages");
  for (int64_t k = 0; k < surrogate.size(); ++k) {
    const double w = c.OptionalInput("rollout_is_weights") ? (*c.OptionalInput("rollout_is_weights"))[k] : 1.0;
    surrogate[k] = -c.Input("advantages")[k] * std::exp(lp[k] - c.Input("old_log_prob")[k]) * w;
  }
  const double want =
      oracle::agg_loss(surrogate, c.Input("response_mask"), c.config.String("loss_agg_mode", ""), Local());
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], want, Tol{1e-12, 1e-12}, NanPolicy::kNanEqualsNan));
  RC_ASSERT(r.metrics.at("actor/pg_clipfrac") == 0.0);
}

// Clip fractions are masked means of indicators.
RC_GTEST_PROP(Vanilla, ClipFractionsInUnitInterval, ()) {
  const Result r = RunOracle(Generate("vanilla", *ArbitraryParams()));
  for (const char* m : {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"}) {
    RC_ASSERT(r.metrics.at(m) >= 0.0);
    RC_ASSERT(r.metrics.at(m) <= 1.0);
  }
}

// The dual-clip bound -A * c only exists for negative advantages: with A >= 0 the
// value of clip_ratio_c is irrelevant.
RC_GTEST_PROP(Vanilla, DualClipOnlyActsOnNegativeAdvantages, ()) {
  Case c = Generate("vanilla", *ArbitraryParams());
  for (double& a : c.inputs["advantages"].data) a = std::fabs(a);
  Case other = c;
  other.config.Set("clip_ratio_c", 1.0001);
  const Result x = RunOracle(c), y = RunOracle(other);
  RC_ASSERT(Close(x.outputs.at("pg_loss")[0], y.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(y.metrics.at("actor/pg_clipfrac_lower") == 0.0);
  RC_ASSERT(x.grads.at("log_prob").data == y.grads.at("log_prob").data);
}

// Tokens outside the response get no gradient; padding columns change nothing
// (except seq-mean-token-sum-norm, whose default divisor is T).
RC_GTEST_PROP(Vanilla, MaskedTokensAndPadding, ()) {
  Case c = Generate("vanilla", *ArbitraryParams());
  if (c.config.String("loss_agg_mode", "") == "seq-mean-token-sum-norm") c.config.Set("loss_scale_factor", 7.0);
  const Result r = RunOracle(c);
  const Array& m = c.Input("response_mask");
  for (int64_t k = 0; k < m.size(); ++k)
    if (m[k] == 0.0) RC_ASSERT(r.grads.at("log_prob")[k] == 0.0);
  const Result p = RunOracle(testing::PadTokens(c, *rc::gen::inRange<int64_t>(1, 5)));
  const double a = r.outputs.at("pg_loss")[0], b = p.outputs.at("pg_loss")[0];
  RC_ASSERT(Close(a, b, Tol{1e-12, 1e-12}, NanPolicy::kNanEqualsNan));
}

// Weights of exactly one are the same as no weights.
RC_GTEST_PROP(Vanilla, UnitIsWeightsChangeNothing, ()) {
  Case c = Generate("vanilla", *ArbitraryParams());
  c.inputs.erase("rollout_is_weights");
  Case w = c;
  w.inputs["rollout_is_weights"] = Array(c.Input("advantages").shape, c.dtype);
  for (double& v : w.inputs["rollout_is_weights"].data) v = 1.0;
  const Result x = RunOracle(c), y = RunOracle(w);
  RC_ASSERT(Close(x.outputs.at("pg_loss")[0], y.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(x.grads.at("log_prob").data == y.grads.at("log_prob").data);
}

// verl asserts clip_ratio_c > 1; the oracle raises the same AssertionError.
TEST(Vanilla, ClipRatioCAtMostOneRaises) {
  const FunctionSpec* s = FindSpec("vanilla");
  GenParams p;
  Case c = s->generate(p);
  c.config.Set("clip_ratio_c", 1.0);
  try {
    s->oracle(c);
    FAIL() << "expected AssertionError";
  } catch (const VerlError& e) {
    EXPECT_EQ(e.kind(), "AssertionError");
  }
}

}  // namespace
}  // namespace verlconf
