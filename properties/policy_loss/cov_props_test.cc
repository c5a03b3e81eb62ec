// Invariants of clip_cov and kl_cov (oracle/policy_loss/cov.h), each with the reason it
// must hold. Generated cases carry no cov_selected, so the oracle makes its own
// deterministic pick; the tests that need a particular pick set the input.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "oracle/core/errors.h"
#include "oracle/policy_loss/cov.h"
#include "oracle/torch_functional/masked.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

Case Gen(const std::string& name) { return FindSpec(name, "policy_loss")->generate(*ArbitraryParams()); }

oracle::PolicyLossInputs In(const Case& c) {
  return {c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"), c.Input("response_mask"),
          c.OptionalInput("rollout_is_weights")};
}

oracle::CovLossConfig Cfg(const Case& c) {
  oracle::CovLossConfig v;
  v.clip_ratio_low = c.config.Double("clip_ratio_low", 0.2);
  v.clip_ratio_high = c.config.Double("clip_ratio_high", 0.2);
  v.clip_cov_ratio = c.config.Double("clip_cov_ratio", 0.0002);
  v.clip_cov_lb = c.config.Double("clip_cov_lb", 1.0);
  v.clip_cov_ub = c.config.Double("clip_cov_ub", 5.0);
  v.kl_cov_ratio = c.config.Double("kl_cov_ratio", 0.0002);
  v.ppo_kl_coef = c.config.Double("ppo_kl_coef", 0.1);
  return v;
}

double Sum(const Array& a) {
  double s = 0;
  for (int64_t k = 0; k < a.size(); ++k) s += a[k];
  return s;
}

// verl zeroes min(clip_num, #candidates) candidates: the default pick is a subset of
// the candidates of exactly that size, and every candidate is a valid token whose clip
// did not bind.
RC_GTEST_PROP(PolicyLossCov, ClipCovPickIsASubsetOfTheCandidatesOfVerlsSize, ()) {
  const Case c = Gen("clip_cov");
  const auto in = In(c);
  const auto cfg = Cfg(c);
  const Array cand = oracle::clip_cov_candidates(in, cfg);
  const Array sel = oracle::clip_cov_default_selection(in, cfg);
  for (int64_t k = 0; k < sel.size(); ++k) {
    RC_ASSERT(sel[k] <= cand[k]);
    RC_ASSERT(cand[k] == 0.0 || in.response_mask[k] > 0);
  }
  RC_ASSERT(Sum(sel) == std::min<double>(oracle::clip_cov_pick_count(in, cfg), Sum(cand)));
}

// kl_cov's pick is a top-k set: exactly k valid tokens, none of them with a smaller
// covariance than an unpicked valid token; among ties the lower index is picked (the
// documented deterministic rule; verl's torch.topk may pick others, which is why the
// goldens record verl's pick).
RC_GTEST_PROP(PolicyLossCov, KlCovPickIsTopKWithTiesToTheLowerIndex, ()) {
  const Case c = Gen("kl_cov");
  const auto in = In(c);
  const Array cov = oracle::kl_cov_covariance(in);
  const Array sel = oracle::kl_cov_default_selection(in, Cfg(c));
  RC_ASSERT(Sum(sel) == static_cast<double>(oracle::kl_cov_pick_count(in, Cfg(c))));
  for (int64_t a = 0; a < sel.size(); ++a) {
    if (sel[a] == 0.0) continue;
    RC_ASSERT(in.response_mask[a] > 0);
    for (int64_t b = 0; b < sel.size(); ++b)
      if (sel[b] == 0.0 && in.response_mask[b] > 0) RC_ASSERT(cov[a] > cov[b] || (cov[a] == cov[b] && a < b));
  }
}

// clip_cov multiplies the picked tokens' loss by a constant 0: they contribute neither
// loss nor gradient, so the loss with a pick equals the loss without one after taking
// out exactly those tokens' terms (agg_loss is linear in the loss matrix; its weights
// come from the mask, which the pick leaves alone).
RC_GTEST_PROP(PolicyLossCov, ClipCovPickedTokensHaveNoLossOrGradient, ()) {
  Case c = Gen("clip_cov");
  const auto in = In(c);
  const Array sel = oracle::clip_cov_default_selection(in, Cfg(c));
  c.inputs["cov_selected"] = sel;
  const Result r = RunOracle(c);
  Case none = c;
  none.inputs["cov_selected"] = Array(sel.shape, sel.dtype);
  const Result r0 = RunOracle(none);
  const Array& g = r.grads.at("log_prob");
  const Array& g0 = r0.grads.at("log_prob");
  for (int64_t k = 0; k < g.size(); ++k) {
    const bool ok = sel[k] == 0.0 ? g[k] == g0[k] : g[k] == 0.0;
    RC_ASSERT(ok);
  }
  RC_ASSERT(r.metrics.at("actor/pg_clipfrac") == oracle::masked_mean(sel, c.Input("response_mask")));
  RC_ASSERT(r0.metrics.at("actor/pg_clipfrac") == 0.0);
}

// kl_cov's penalty is additive: the loss with a pick minus the loss without is
// ppo_kl_coef * agg(|log-ratio| * w on the picked tokens), and the gradients differ
// by ppo_kl_coef * sign(log-ratio) * w * agg weight there only (torch's abs has
// derivative 0 at 0).
RC_GTEST_PROP(PolicyLossCov, KlCovPenaltyIsAdditive, ()) {
  Case c = Gen("kl_cov");
  const auto in = In(c);
  const Array sel = oracle::kl_cov_default_selection(in, Cfg(c));
  c.inputs["cov_selected"] = sel;
  Case none = c;
  none.inputs["cov_selected"] = Array(sel.shape, sel.dtype);
  const Result r = RunOracle(c), r0 = RunOracle(none);
  const double coef = c.config.Double("ppo_kl_coef", 0.1);
  const Array& mask = c.Input("response_mask");
  const Array W = oracle::agg_loss_weights(mask, c.config.String("loss_agg_mode", "token-mean"),
                                           oracle::ReadGlobalBatchInfo(c.config));
  Array pen(mask.shape, mask.dtype);
  for (int64_t k = 0; k < pen.size(); ++k) {
    const double d = in.log_prob[k] - in.old_log_prob[k];
    const double w = in.rollout_is_weights ? (*in.rollout_is_weights)[k] : 1.0;
    pen[k] = sel[k] * coef * std::fabs(d) * w;
    const double dg = sel[k] * coef * (d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0)) * w * W[k];
    RC_ASSERT(
        Close(r.grads.at("log_prob")[k] - r0.grads.at("log_prob")[k], dg, Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
  }
  const double want = oracle::agg_loss(pen, mask, c.config.String("loss_agg_mode", "token-mean"),
                                       oracle::ReadGlobalBatchInfo(c.config));
  // The difference of two sums carries their rounding: scale atol by the loss.
  const double l0 = r0.outputs.at("pg_loss")[0];
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0] - l0, want, Tol{1e-10, 1e-13 * (1.0 + std::fabs(l0))},
                  NanPolicy::kNanEqualsNan));
}

// On-policy every ratio is 1 (inside the clip range, |log-ratio| 0): both losses are the
// plain policy gradient -A * w times the aggregation weight on every unzeroed token,
// whatever the pick (kl_cov's penalty has slope 0 at 0), and ppo_kl is 0.
RC_GTEST_PROP(PolicyLossCov, OnPolicyGradientIsPlainPolicyGradient, ()) {
  for (const char* name : {"clip_cov", "kl_cov"}) {
    Case c = Gen(name);
    c.inputs["log_prob"] = c.Input("old_log_prob");
    const Result r = RunOracle(c);
    const Array& mask = c.Input("response_mask");
    const Array W = oracle::agg_loss_weights(mask, c.config.String("loss_agg_mode", "token-mean"),
                                             oracle::ReadGlobalBatchInfo(c.config));
    const Array sel = std::string(name) == "clip_cov" ? oracle::clip_cov_default_selection(In(c), Cfg(c))
                                                      : Array(mask.shape, mask.dtype);
    const Array* w = c.OptionalInput("rollout_is_weights");
    for (int64_t k = 0; k < mask.size(); ++k)
      RC_ASSERT(Close(r.grads.at("log_prob")[k],
                      -c.Input("advantages")[k] * (w ? (*w)[k] : 1.0) * W[k] * (1.0 - sel[k]), Tol{1e-12, 1e-15},
                      NanPolicy::kNanEqualsNan));
    RC_ASSERT(r.metrics.at("actor/ppo_kl") == 0.0);
  }
}

// A pick is only ever of valid tokens (verl picks among response_mask > 0); a
// cov_selected that marks padding, or holds values other than 0/1, is bad input.
TEST(PolicyLossCov, PickMustBeAValidTokenMask) {
  for (const char* name : {"clip_cov", "kl_cov"}) {
    GenParams p;
    p.seed = 7;
    Case c = FindSpec(name, "policy_loss")->generate(p);
    Array mask = c.Input("response_mask");
    Array bad(mask.shape, mask.dtype);
    for (int64_t k = 0; k < mask.size(); ++k)
      if (mask[k] == 0.0) {
        bad[k] = 1.0;
        break;
      }
    c.inputs["cov_selected"] = bad;
    EXPECT_THROW(RunOracle(c), BadInput) << name;
    bad = Array(mask.shape, mask.dtype);
    bad[0] = 0.5;
    c.inputs["cov_selected"] = bad;
    EXPECT_THROW(RunOracle(c), BadInput) << name;
  }
}

// verl asserts clip_cov_ratio > 0 and kl_cov_ratio > 0 (AssertionError).
TEST(PolicyLossCov, RatiosMustBePositive) {
  GenParams p;
  p.seed = 3;
  Case c = FindSpec("clip_cov", "policy_loss")->generate(p);
  c.config.Set("clip_cov_ratio", 0.0);
  EXPECT_THROW(RunOracle(c), VerlError);
  Case k = FindSpec("kl_cov", "policy_loss")->generate(p);
  k.config.Set("kl_cov_ratio", 0.0);
  EXPECT_THROW(RunOracle(k), VerlError);
}

}  // namespace
}  // namespace verlconf
