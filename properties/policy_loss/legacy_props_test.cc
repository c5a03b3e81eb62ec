// Invariants of the policy losses outside POLICY_LOSS_REGISTRY:
// compute_policy_loss_reinforce and the deprecated compute_policy_loss, each with the
// reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

Case Gen(const std::string& name) { return FindSpec(name, "policy_loss")->generate(*ArbitraryParams()); }

// NaN, from agg_loss on an empty selection, is an expected result: both sides of an
// identity may be NaN (NanPolicy::kNanEqualsNan).

// REINFORCE is linear in log_prob and the IS weights are constants: the gradient is
// -A * w times the aggregation weight whatever log_prob is, and the rollout
// log-probabilities enter only the ppo_kl metric, so moving them leaves the loss and
// the gradient unchanged.
RC_GTEST_PROP(LegacyLosses, ReinforceGradientIsWeightedAdvantage, ()) {
  Case c = Gen("compute_policy_loss_reinforce");
  const Result r = RunOracle(c);
  const Array W = oracle::agg_loss_weights(c.Input("response_mask"), c.config.String("loss_agg_mode", ""),
                                           oracle::ReadGlobalBatchInfo(c.config));
  const Array* w = c.OptionalInput("rollout_is_weights");
  const Array& g = r.grads.at("log_prob");
  for (int64_t k = 0; k < g.size(); ++k)
    RC_ASSERT(Close(g[k], -c.Input("advantages")[k] * (w ? (*w)[k] : 1.0) * W[k], Tol{1e-12, 1e-15},
                    NanPolicy::kNanEqualsNan));
  Array shifted = c.Input("old_log_prob");
  for (double& v : shifted.data) v -= 0.75;
  c.inputs["old_log_prob"] = shifted;
  const Result moved = RunOracle(c);
  RC_ASSERT(Close(moved.outputs.at("pg_loss")[0], r.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(moved.grads.at("log_prob"), g, kExact, NanPolicy::kNanEqualsNan));
}

// The deprecated compute_policy_loss is vanilla's dual-clip PPO with cliprange* for
// clip_ratio*, no IS weights and no global_batch_info: on the same inputs both give the
// same loss, gradient and metrics (verl returns the latter as a tuple, vanilla as a
// dict under "actor/").
RC_GTEST_PROP(LegacyLosses, DeprecatedEqualsVanilla, ()) {
  const Case c = Gen("compute_policy_loss");
  Case v = c;
  v.function = "vanilla";
  const double clip = c.config.Double("cliprange", 0.2);
  v.config = Config();
  v.config.Set("clip_ratio", clip);
  v.config.Set("clip_ratio_low", c.config.Double("cliprange_low", clip));
  v.config.Set("clip_ratio_high", c.config.Double("cliprange_high", clip));
  v.config.Set("clip_ratio_c", c.config.Double("clip_ratio_c", 3.0));
  v.config.Set("loss_agg_mode", c.config.String("loss_agg_mode", "token-mean"));
  v.config.Set("dp_size", int64_t{1});
  const Result a = RunOracle(c);
  const Result b = FindSpec("vanilla", "policy_loss")->oracle(v);
  RC_ASSERT(Close(a.outputs.at("pg_loss")[0], b.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(a.grads.at("log_prob"), b.grads.at("log_prob"), kExact, NanPolicy::kNanEqualsNan));
  for (const char* m : {"pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"})
    RC_ASSERT(Close(a.metrics.at(m), b.metrics.at(std::string("actor/") + m), kExact, NanPolicy::kNanEqualsNan));
}

}  // namespace
}  // namespace verlconf
