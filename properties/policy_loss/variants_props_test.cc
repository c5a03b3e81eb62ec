// Invariants of the policy losses beyond vanilla (gspo, sapo, gpg, cispo, dro,
// geo_mean, dppo_tv, dppo_kl), each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "oracle/core/errors.h"
#include "oracle/core/spec_util.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

const char* const kLosses[] = {"gspo", "sapo", "gpg", "cispo", "dro", "geo_mean", "dppo_tv", "dppo_kl"};

Case Gen(const std::string& name, const GenParams& p) { return FindSpec(name, "policy_loss")->generate(p); }
Case Gen(const std::string& name) { return Gen(name, *ArbitraryParams()); }

double IsWeight(const Case& c, int64_t k) {
  const Array* w = c.OptionalInput("rollout_is_weights");
  return w ? (*w)[k] : 1.0;
}

// The aggregation weights d loss / d L_{i,t} of the case's mode, or of the mode verl
// fixes for the loss (the spec's fixed_config: sapo's seq-mean-token-mean).
Array AggWeights(const Case& c, const std::string& name) {
  const ConfigValue* fixed = FindSpec(name, "policy_loss")->FixedConfig("loss_agg_mode");
  const std::string mode = fixed ? std::get<std::string>(*fixed) : c.config.String("loss_agg_mode", "token-mean");
  return oracle::agg_loss_weights(c.Input("response_mask"), mode, oracle::ReadGlobalBatchInfo(c.config));
}

// On-policy (log_prob == old_log_prob) every ratio is 1, strictly inside every clip
// range, below every truncation bound, and no probability has moved: every
// token-level loss's gradient is the plain policy gradient -A * w, times the
// aggregation weight. For sapo that is because the gate's slope at r = 1 is
// (4 / tau) * tau / 4 = 1 for any tau; for dro the penalty's slope is 0 there. Every
// clip fraction is 0 and ppo_kl is 0. (geo_mean averages per row first: below.)
RC_GTEST_PROP(PolicyLosses, OnPolicyGradientIsPlainPolicyGradient, ()) {
  for (const char* name : kLosses) {
    if (std::string(name) == "geo_mean") continue;
    Case c = Gen(name);
    c.inputs["log_prob"] = c.Input("old_log_prob");
    const Result r = RunOracle(c);
    const Array W = AggWeights(c, name);
    const Array& g = r.grads.at("log_prob");
    for (int64_t k = 0; k < g.size(); ++k)
      RC_ASSERT(
          Close(g[k], -c.Input("advantages")[k] * IsWeight(c, k) * W[k], Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
    for (const auto& [metric, v] : r.metrics) RC_ASSERT(v == 0.0);
  }
}

// GSPO on-policy is the PPO surrogate at ratio 1: minus the aggregated advantage
// (times the IS weights), as vanilla's is.
RC_GTEST_PROP(PolicyLosses, GspoOnPolicyIsMinusAggregatedAdvantage, ()) {
  Case c = Gen("gspo");
  c.inputs["log_prob"] = c.Input("old_log_prob");
  Array neg = c.Input("advantages");
  for (int64_t k = 0; k < neg.size(); ++k) neg[k] = -neg[k] * IsWeight(c, k);
  const double want = oracle::agg_loss(neg, c.Input("response_mask"), c.config.String("loss_agg_mode", ""),
                                       oracle::ReadGlobalBatchInfo(c.config));
  RC_ASSERT(Close(RunOracle(c).outputs.at("pg_loss")[0], want, Tol{1e-12, 1e-14}, NanPolicy::kNanEqualsNan));
}

// CISPO's clipped ratio is detached: the gradient is exactly -clip(r) * A * w times
// the aggregation weight, whatever the log-probabilities (no clip kink, no half
// gradients at the bounds).
RC_GTEST_PROP(PolicyLosses, CispoGradientIsClippedRatioTimesAdvantage, ()) {
  const Case c = Gen("cispo");
  const Result r = RunOracle(c);
  const Array W = AggWeights(c, "cispo");
  const double lo = 1 - c.config.Double("clip_ratio_low", 0.2), hi = 1 + c.config.Double("clip_ratio_high", 0.2);
  for (int64_t k = 0; k < W.size(); ++k) {
    const double lr = std::clamp(c.Input("log_prob")[k] - c.Input("old_log_prob")[k], -20.0, 20.0);
    const double cr = std::clamp(std::exp(lr), lo, hi);
    RC_ASSERT(Close(r.grads.at("log_prob")[k], -cr * c.Input("advantages")[k] * IsWeight(c, k) * W[k],
                    Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
  }
}

// GSPO's ratio is a property of the sequence: with unit advantages, no IS weights,
// clip bounds out of reach and token-sum aggregation, every valid token of a row
// carries the same gradient -s_i (the row's ratio), although only its own token's
// log_prob enters it (the rest is detached).
RC_GTEST_PROP(PolicyLosses, GspoRatioIsConstantAlongASequence, ()) {
  Case c = Gen("gspo");
  c.inputs.erase("rollout_is_weights");
  for (double& a : c.inputs["advantages"].data) a = 1.0;
  c.config.Set("clip_ratio_low", 0.999);
  c.config.Set("clip_ratio_high", 1e6);
  c.config.Set("loss_agg_mode", std::string("token-sum"));
  const Result r = RunOracle(c);
  const Array& m = c.Input("response_mask");
  const Array& g = r.grads.at("log_prob");
  for (int64_t i = 0; i < m.rows(); ++i) {
    double first = NAN;
    for (int64_t t = 0; t < m.cols(); ++t) {
      if (m.at(i, t) == 0.0) continue;
      if (std::isnan(first)) first = g.at(i, t);
      RC_ASSERT(g.at(i, t) == first);
      RC_ASSERT(first < 0.0);
    }
  }
}

// For one-token rows GMPO's geometric mean is the token's own (sign-clipped) ratio and
// the row mean advantage is the token's, so geo_mean is vanilla PPO without dual clip
// under token-mean, with its clip bounds moved to log space, up to verl's 1e-8 in both
// denominators (relative 1e-8). Dual clip
// is kept out of reach (clip_ratio_c = 1e6), log-ratios stay far inside +-20.
RC_GTEST_PROP(PolicyLosses, GeoMeanEqualsVanillaForOneTokenRows, ()) {
  GenParams p = *ArbitraryParams();
  Case g = Gen("geo_mean", p);
  g.inputs.erase("rollout_is_weights");
  for (int64_t i = 0; i < g.inputs["response_mask"].rows(); ++i)
    for (int64_t t = 0; t < g.inputs["response_mask"].cols(); ++t) g.inputs["response_mask"].at(i, t) = t == 0;
  g.config.Set("loss_agg_mode", std::string("token-mean"));
  Case v = g;
  v.family = "policy_loss";
  v.function = "vanilla";
  v.config.Set("clip_ratio_c", 1e6);
  // geo_mean clips the log-ratio to [-eps_low, eps_high], vanilla the ratio to
  // [1 - eps_low, 1 + eps_high]: the same bounds when vanilla's are exp(+-eps) - 1.
  v.config.Set("clip_ratio_low", 1.0 - std::exp(-g.config.Double("clip_ratio_low", 0.2)));
  v.config.Set("clip_ratio_high", std::exp(g.config.Double("clip_ratio_high", 0.2)) - 1.0);
  const Result a = RunOracle(g), b = RunOracle(v);
  // The 1e-8 bias is relative to each row's term; the mean of terms of both signs can
  // cancel, so the bound is relative to the mean of their magnitudes.
  double scale = 0;
  const Array& A = g.Input("advantages");
  for (int64_t i = 0; i < A.rows(); ++i)
    scale += std::fabs(A.at(i, 0)) *
             std::exp(std::fabs(g.Input("log_prob").at(i, 0) - g.Input("old_log_prob").at(i, 0))) / A.rows();
  RC_ASSERT(Close(a.outputs.at("pg_loss")[0], b.outputs.at("pg_loss")[0], Tol{1e-7, 1e-7 * scale + 1e-15},
                  NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(a.grads.at("log_prob"), b.grads.at("log_prob"), Tol{1e-7, 1e-12}, NanPolicy::kNanEqualsNan));
}

// Padding columns (mask 0) change neither the loss nor the gradient of the real
// tokens, and get no gradient themselves. seq-mean-token-sum-norm divides by T by
// default, so it gets a fixed loss_scale_factor here.
RC_GTEST_PROP(PolicyLosses, InvariantToPaddingColumns, ()) {
  for (const char* name : kLosses) {
    Case c = Gen(name);
    if (c.config.String("loss_agg_mode", "") == "seq-mean-token-sum-norm") c.config.Set("loss_scale_factor", 7.0);
    const Result r = RunOracle(c);
    const int64_t extra = *rc::gen::inRange<int64_t>(1, 5);
    const Result p = RunOracle(testing::PadTokens(c, extra));
    RC_ASSERT(
        Close(r.outputs.at("pg_loss")[0], p.outputs.at("pg_loss")[0], Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
    const Array& g = r.grads.at("log_prob");
    const Array& gp = p.grads.at("log_prob");
    const int64_t T = g.cols();
    for (int64_t i = 0; i < g.rows(); ++i) {
      for (int64_t t = 0; t < T; ++t)
        RC_ASSERT(Close(g.at(i, t), gp.at(i, t), Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
      for (int64_t t = T; t < T + extra; ++t) RC_ASSERT(gp.at(i, t) == 0.0);
    }
    for (const auto& [metric, v] : r.metrics)
      RC_ASSERT(Close(v, p.metrics.at(metric), Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
  }
}

// Tokens outside the response never receive gradient (every loss multiplies by the
// mask or aggregates through it).
RC_GTEST_PROP(PolicyLosses, MaskedTokensGetNoGradient, ()) {
  for (const char* name : kLosses) {
    const Case c = Gen(name);
    const Result r = RunOracle(c);
    const Array& m = c.Input("response_mask");
    for (int64_t k = 0; k < m.size(); ++k)
      if (m[k] == 0.0) RC_ASSERT(r.grads.at("log_prob")[k] == 0.0);
  }
}

// sapo hard-codes seq-mean-token-mean and geo_mean never calls agg_loss: neither
// depends on loss_agg_mode; geo_mean not on the global-batch arguments either.
RC_GTEST_PROP(PolicyLosses, SapoAndGeoMeanIgnoreLossAggMode, ()) {
  for (const char* name : {"sapo", "geo_mean"}) {
    Case c = Gen(name);
    Case d = c;
    d.config.Set("loss_agg_mode", std::string(oracle::kAggModes[*rc::gen::inRange<int>(0, 5)]));
    const Result a = RunOracle(c), b = RunOracle(d);
    RC_ASSERT(Close(a.outputs.at("pg_loss")[0], b.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
    RC_ASSERT(a.grads.at("log_prob").data == b.grads.at("log_prob").data);
  }
  Case c = Gen("geo_mean");
  Case d = c;
  d.config.Set("dp_size", int64_t{4});
  RC_ASSERT(RunOracle(c).outputs.at("pg_loss")[0] == RunOracle(d).outputs.at("pg_loss")[0]);
}

// gpg is the REINFORCE surrogate: -log_prob * A * w aggregated, gradient -A * w * W.
RC_GTEST_PROP(PolicyLosses, GpgIsAggregatedReinforce, ()) {
  const Case c = Gen("gpg");
  Array l = c.Input("log_prob");
  for (int64_t k = 0; k < l.size(); ++k) l[k] = -l[k] * c.Input("advantages")[k] * IsWeight(c, k);
  const double want = oracle::agg_loss(l, c.Input("response_mask"), c.config.String("loss_agg_mode", ""),
                                       oracle::ReadGlobalBatchInfo(c.config));
  const Result r = RunOracle(c);
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], want, Tol{1e-12, 1e-14}, NanPolicy::kNanEqualsNan));
  RC_ASSERT(r.metrics.empty());
}

// dro's gradient is the policy gradient pulled back by the quadratic penalty:
// -(A - beta * (log_prob - old_log_prob)) * w * W.
RC_GTEST_PROP(PolicyLosses, DroGradientIsPenalisedPolicyGradient, ()) {
  const Case c = Gen("dro");
  const Result r = RunOracle(c);
  const Array W = AggWeights(c, "dro");
  const double beta = c.config.Double("dro_beta", 0.0);
  for (int64_t k = 0; k < W.size(); ++k) {
    const double lr = c.Input("log_prob")[k] - c.Input("old_log_prob")[k];
    RC_ASSERT(Close(r.grads.at("log_prob")[k], -(c.Input("advantages")[k] - beta * lr) * IsWeight(c, k) * W[k],
                    Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
  }
}

// With divergence thresholds out of reach, DPPO's mask keeps every token: the loss is
// -A * min(r, c) * log_prob (detached ratio) and pg_clipfrac is 0; pg_clipfrac_lower
// is then the share of truncated ratios. Both DPPO variants agree there.
RC_GTEST_PROP(PolicyLosses, DppoWithoutThresholdsIsTruncatedIsReinforce, ()) {
  Case c = Gen("dppo_tv");
  for (const char* k : {"clip_ratio", "clip_ratio_low", "clip_ratio_high"}) c.config.Set(k, 1e6);
  // Probabilities stay below 1, so dppo_kl's binary KL is finite.
  for (int64_t k = 0; k < c.inputs["log_prob"].size(); ++k)
    c.inputs["log_prob"][k] = std::min(c.inputs["log_prob"][k], -1e-3);
  Case kl = c;
  kl.function = "dppo_kl";
  const Result r = RunOracle(c), rk = RunOracle(kl);
  RC_ASSERT(r.metrics.at("actor/pg_clipfrac") == 0.0);
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], rk.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  const Array W = AggWeights(c, "dppo_tv");
  const double cmax = c.config.Double("clip_ratio_c", 3.0);
  for (int64_t k = 0; k < W.size(); ++k) {
    const double ratio = std::exp(std::clamp(c.Input("log_prob")[k] - c.Input("old_log_prob")[k], -20.0, 20.0));
    RC_ASSERT(Close(r.grads.at("log_prob")[k],
                    -c.Input("advantages")[k] * std::min(ratio, cmax) * IsWeight(c, k) * W[k], Tol{1e-12, 1e-15},
                    NanPolicy::kNanEqualsNan));
  }
}

// The stop-gradient surrogate gradcheck differentiates must be the loss itself at the
// point where the detached values were recorded; otherwise the gradient check would
// check the derivative of something else.
RC_GTEST_PROP(PolicyLosses, StopGradientObjectiveIsTheLossAtItsBase, ()) {
  for (const char* name : {"gspo", "cispo", "dppo_tv", "dppo_kl"}) {
    const FunctionSpec* s = FindSpec(name, "policy_loss");
    RC_ASSERT(static_cast<bool>(s->stop_gradient_objective));
    const Case c = Gen(name);
    const double loss = RunOracle(c).outputs.at("pg_loss")[0];
    RC_ASSERT(Close(s->stop_gradient_objective(c, c), loss, kExact, NanPolicy::kNanEqualsNan));
  }
}

// Clip fractions are masked means of indicators; losses that do not clip report 0.
RC_GTEST_PROP(PolicyLosses, ClipFractionsInUnitInterval, ()) {
  for (const char* name : kLosses) {
    const Result r = RunOracle(Gen(name));
    for (const char* m : {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"}) {
      if (!r.metrics.count(m)) continue;
      RC_ASSERT(r.metrics.at(m) >= 0.0);
      RC_ASSERT(r.metrics.at(m) <= 1.0);
    }
  }
}

// dro_beta must be positive: verl raises ValueError for None and for <= 0.
TEST(PolicyLosses, DroBetaMustBePositive) {
  const FunctionSpec* s = FindSpec("dro", "policy_loss");
  GenParams p;
  for (int variant = 0; variant < 2; ++variant) {
    Case c = s->generate(p);
    if (variant == 0)
      c.config.Set("dro_beta", oracle::None());
    else
      c.config.Set("dro_beta", 0.0);
    try {
      s->oracle(c);
      FAIL() << "expected ValueError";
    } catch (const VerlError& e) {
      EXPECT_EQ(e.kind(), "ValueError");
    }
  }
}

// "gpg" is two registry keys: the advantage estimator and this loss.
TEST(PolicyLosses, GpgIsBothAnEstimatorAndALoss) {
  ASSERT_NE(FindSpec("gpg", "advantage"), nullptr);
  ASSERT_NE(FindSpec("gpg", "policy_loss"), nullptr);
  EXPECT_THROW(FindSpec("gpg"), std::logic_error);
}

}  // namespace
}  // namespace verlconf
