// Invariants of verl's rollout correction (rollout_corr_helper.py, the
// RolloutCorrectionConfig presets, the bypass_mode loss), each with the reason it must
// hold; and the threshold parsers' errors.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "oracle/rollout_correction/presets.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/torch_functional/masked.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using oracle::RawConfig;
using testing::ArbitraryParams;
using testing::Close;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

const ConfigValue kNone = std::monostate{};

Case Gen(const std::string& name, const std::string& family = "rollout_correction") {
  return FindSpec(name, family)->generate(*ArbitraryParams());
}

// compute_rollout_correction_weights on c; when IcePop zeroed every weight verl's ESS
// divides by zero, which ends the property there (no other exception may occur).
Result RunWeights(const Case& c) {
  try {
    return RunOracle(c);
  } catch (const VerlError& e) {
    RC_ASSERT(e.kind() == std::string("ZeroDivisionError"));
    RC_SUCCEED("every weight zeroed: verl's ESS divides by zero");
  }
  return {};
}

// verl raises on a mask without a valid token; the invariants are about the others.
void EnsureValidToken(Case& c) {
  Array& m = c.inputs["response_mask"];
  for (double v : m.data)
    if (v != 0.0) return;
  m.at(0, 0) = 1.0;
}

// A weights case with a chosen level, threshold and normalisation.
Case WeightsCase(const std::string& level, const ConfigValue& threshold, bool normalize) {
  Case c = Gen("compute_rollout_correction_weights");
  EnsureValidToken(c);
  c.config.Set("rollout_is", level);
  c.config.Set("rollout_is_threshold", threshold);
  c.config.Set("rollout_is_batch_normalize", int64_t{normalize ? 1 : 0});
  return c;
}

// The raw (pre-TIS / IcePop) weight of every token, as verl forms it.
Array RawWeights(const Case& c) {
  const Array& lr = c.Input("log_ratio");
  const Array& m = c.Input("response_mask");
  Array raw(m.shape, m.dtype);
  const bool sequence = c.config.String("rollout_is", "") == "sequence";
  for (int64_t i = 0; i < m.rows(); ++i) {
    double sum = 0;
    for (int64_t t = 0; t < m.cols(); ++t) sum += m.at(i, t) != 0.0 ? lr.at(i, t) : 0.0;
    for (int64_t t = 0; t < m.cols(); ++t) {
      const double l = sequence ? sum : lr.at(i, t);
      raw.at(i, t) = std::exp(std::min(std::max(l, -20.0), 20.0)) * m.at(i, t);
    }
  }
  return raw;
}

// ------------------------------------------------------------------ IS weights

// TIS clamps every weight at the upper bound (before any batch normalisation), so no
// weight may exceed it.
RC_GTEST_PROP(RolloutIs, TruncatedWeightsNeverExceedTheUpperBound, ()) {
  const double upper = *rc::gen::element(1.0, 1.5, 2.0, 5.0);
  const Case c = WeightsCase(*rc::gen::element<std::string>("token", "sequence"), upper, false);
  const Result r = RunOracle(c);
  for (double v : r.outputs.at("rollout_is_weights").data) RC_ASSERT(v <= upper);
}

// IcePop keeps a weight exactly when its raw value lies in [lower, upper] and zeroes it
// otherwise (padding included): the band is a hard mask on the raw weights.
RC_GTEST_PROP(RolloutIs, IcepopZeroesExactlyOutsideTheBand, ()) {
  const std::string band = *rc::gen::element<std::string>("0.5_2.0", "0.8_1.25", "1.0_2.0", "0.5_1.0");
  const Case c = WeightsCase(*rc::gen::element<std::string>("token", "sequence"), band, false);
  const oracle::IsThreshold th = oracle::ParseRolloutIsThreshold(band);
  const Result r = RunWeights(c);
  const Array& w = r.outputs.at("rollout_is_weights");
  const Array raw = RawWeights(c);
  for (int64_t k = 0; k < w.size(); ++k) {
    const bool inside = raw[k] >= *th.lower && raw[k] <= th.upper;
    const bool ok = inside ? Close(w[k], raw[k], Tol{1e-12, 1e-14}, NanPolicy::kNanEqualsNan) : w[k] == 0.0;
    RC_ASSERT(ok);
  }
}

// Batch normalisation divides by the mean it then reports, so the normalised weights
// average to 1: over valid tokens (token level) or over the per-row means of rows with
// a valid token (sequence level) -- up to masked_mean's 1e-8 offset.
RC_GTEST_PROP(RolloutIs, BatchNormalizedWeightsAverageToOne, ()) {
  const std::string level = *rc::gen::element<std::string>("token", "sequence");
  Case c = WeightsCase(level, *rc::gen::element<ConfigValue>(2.0, std::string("0.5_5.0"), 10.0), true);
  const Result r = RunWeights(c);
  RC_PRE(r.metrics.at("rollout_is_batch_norm_factor") != 1.0);  // normalisation skipped (mean <= 1e-8)
  const Array& w = r.outputs.at("rollout_is_weights");
  const Array& m = c.Input("response_mask");
  if (level == "token") {
    RC_ASSERT(Close(oracle::masked_mean(w, m), 1.0, Tol{1e-7, 1e-14}, NanPolicy::kNanEqualsNan));
  } else {
    const Array rows = oracle::masked_mean_rows(w, m);
    double sum = 0, n = 0;
    for (int64_t i = 0; i < m.rows(); ++i) {
      double valid = 0;
      for (int64_t t = 0; t < m.cols(); ++t) valid += m.at(i, t);
      if (valid > 0) sum += rows[i], n += 1;
    }
    RC_ASSERT(Close(sum / n, 1.0, Tol{1e-7, 1e-14}, NanPolicy::kNanEqualsNan));
  }
}

// A sequence-level weight is exp of the row's summed log-ratio: one value for every
// valid token of the row (TIS, IcePop and normalisation act on the value, not the token).
RC_GTEST_PROP(RolloutIs, SequenceWeightsAreConstantAlongARow, ()) {
  Case c = Gen("compute_rollout_correction_weights");
  EnsureValidToken(c);
  c.config.Set("rollout_is", std::string("sequence"));
  const Result r = RunWeights(c);
  const Array& w = r.outputs.at("rollout_is_weights");
  const Array& m = c.Input("response_mask");
  for (int64_t i = 0; i < m.rows(); ++i) {
    double first = NAN;
    for (int64_t t = 0; t < m.cols(); ++t) {
      if (m.at(i, t) == 0.0) {
        RC_ASSERT(w.at(i, t) == 0.0);
        continue;
      }
      if (std::isnan(first)) first = w.at(i, t);
      RC_ASSERT(w.at(i, t) == first);
    }
  }
}

// ESS = 1 / E[(w / E[w])^2] and E[n^2] >= E[n]^2 (Cauchy-Schwarz): at most 1 (up to the
// 1e-8 offsets of the means), and positive while some weight is.
RC_GTEST_PROP(RolloutIs, EffectiveSampleSizeInUnitInterval, ()) {
  Case c = Gen("compute_rollout_correction_weights");
  EnsureValidToken(c);
  const Result r = RunWeights(c);
  const double ess = r.metrics.at("rollout_is_eff_sample_size");
  const double mu = r.metrics.at("rollout_is_mean");
  RC_ASSERT(ess > 0.0);
  RC_ASSERT(ess <= std::pow((mu + 1e-8) / mu, 2) * (1 + 1e-12));
}

// ------------------------------------------------------------------ rejection sampling

// The modified mask is response_mask times 0/1 keep masks: rejection can only remove
// tokens, never add one.
RC_GTEST_PROP(RolloutRs, RejectionOnlyRemovesTokens, ()) {
  Case c = Gen("compute_rollout_rejection_mask");
  EnsureValidToken(c);
  const Result r = RunOracle(c);
  const Array& out = r.outputs.at("modified_response_mask");
  const Array& m = c.Input("response_mask");
  for (int64_t k = 0; k < m.size(); ++k) {
    RC_ASSERT(out[k] == 0.0 || out[k] == m[k]);
    RC_ASSERT(out[k] <= m[k]);
  }
}

// Chained options must all pass (combined_mask is the product of the keep masks), so a
// chain's mask is the intersection of the masks its options give on their own.
RC_GTEST_PROP(RolloutRs, ChainMaskIsTheIntersectionOfItsParts, ()) {
  Case c = Gen("compute_rollout_rejection_mask");
  EnsureValidToken(c);
  const auto options = oracle::ParseRolloutRsOptions(c.config.String("rollout_rs", ""));
  const auto thresholds = oracle::ParseRolloutRsThresholds(options, RawConfig(c.config, "rollout_rs_threshold", kNone));
  const Array chain = RunOracle(c).outputs.at("modified_response_mask");
  Array product = c.Input("response_mask");
  for (const auto& [option, th] : thresholds) {
    Case part = c;
    part.function = option;
    part.config = Config();
    part.config.Set("rollout_rs_threshold", th.lower
                                                ? oracle::PyFloatRepr(*th.lower) + "_" + oracle::PyFloatRepr(th.upper)
                                                : oracle::PyFloatRepr(th.upper));
    const Array one = RunOracle(part).outputs.at("modified_response_mask");
    for (int64_t k = 0; k < product.size(); ++k) product[k] *= one[k];
  }
  RC_ASSERT(Close(chain, product, kExact, NanPolicy::kNanEqualsNan));
}

// exp(x) - x - 1 >= 0 for every x (convexity): the K3 divergence of the off-policy
// metrics and the token_k3 statistics are never negative (beyond an ulp of rounding).
RC_GTEST_PROP(RolloutRs, K3IsNonNegative, ()) {
  Case c = Gen("compute_rollout_correction_and_rejection_mask");
  EnsureValidToken(c);
  c.config.Set("rollout_rs", std::string("token_k3"));
  c.config.Set("rollout_rs_threshold", 0.5);
  Result r;
  try {
    r = RunOracle(c);
  } catch (const VerlError&) {
    RC_SUCCEED("every IS weight zeroed: verl's ESS divides by zero");
  }
  RC_ASSERT(r.metrics.at("rollout_corr/k3_kl") >= -4 * kEps64);
  RC_ASSERT(r.metrics.at("rollout_corr/rollout_rs_token_k3_min") >= -4 * kEps64);
  RC_ASSERT(r.metrics.at("rollout_corr/rollout_rs_token_k3_mean") >= -4 * kEps64);
  RC_ASSERT(r.metrics.at("rollout_corr/rollout_rs_token_k3_seq_min") >= -4 * kEps64);
}

// Padding columns carry mask 0: they add nothing to a row's masked sum or count, so
// seq_mean statistics, decisions and every metric are unchanged (the std's torch-order
// sum may move in the last bits).
RC_GTEST_PROP(RolloutRs, SeqMeanStatisticsIgnorePaddingColumns, ()) {
  const std::string option = *rc::gen::element<std::string>("seq_mean_k1", "seq_mean_k2", "seq_mean_k3");
  Case c = Gen(option);
  EnsureValidToken(c);
  const Case padded = testing::PadTokens(c, *rc::gen::inRange<int64_t>(1, 9));
  const Result a = RunOracle(c), b = RunOracle(padded);
  const Array& ma = a.outputs.at("modified_response_mask");
  const Array& mb = b.outputs.at("modified_response_mask");
  for (int64_t i = 0; i < ma.rows(); ++i)
    for (int64_t t = 0; t < ma.cols(); ++t) RC_ASSERT(ma.at(i, t) == mb.at(i, t));
  for (const auto& [k, v] : a.metrics) {
    // The std metrics cancel (sqrt(E[x^2] - E[x]^2)): their sums' last bits, which the
    // padding reorders, may reach ~sqrt(eps64) of the values.
    const bool is_std = k.size() > 4 && k.compare(k.size() - 4, 4, "_std") == 0;
    if (!Close(b.metrics.at(k), v, Tol{1e-9, is_std ? 1e-7 : 1e-15}, NanPolicy::kNanEqualsNan))
      RC_FAIL(k + " moved with the padding");
  }
}

// ------------------------------------------------------------------ pipeline

// Identical policies give a log-ratio of exactly 0: every IS weight is exp(0) = 1 (TIS
// bounds >= 1, IcePop bands holding 1; batch normalisation divides by the mean N/(N+1e-8)),
// every divergence statistic is 0 and so kept, and kl = k3_kl = 0.
RC_GTEST_PROP(RolloutPipeline, IdenticalPoliciesChangeNothing, ()) {
  Case c = Gen("compute_rollout_correction_and_rejection_mask");
  EnsureValidToken(c);
  c.inputs["rollout_log_prob"] = c.Input("old_log_prob");
  const Result r = RunOracle(c);
  const Array& m = c.Input("response_mask");
  const Array& w = r.outputs.at("rollout_is_weights");
  for (int64_t k = 0; k < m.size(); ++k) {
    const bool one = m[k] == 0.0 ? w[k] == 0.0 : Close(w[k], 1.0, Tol{1e-7, 1e-14}, NanPolicy::kNanEqualsNan);
    RC_ASSERT(one);
  }
  RC_ASSERT(Close(r.outputs.at("modified_response_mask"), m, kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(r.metrics.at("rollout_corr/kl") == 0.0);
  RC_ASSERT(r.metrics.at("rollout_corr/k3_kl") == 0.0);
}

// IS runs only when rollout_is and its threshold are both set, RS only when rollout_rs is:
// without rollout_is there are no weights, without rollout_rs the mask is unchanged, and
// the off-policy metrics are there either way.
RC_GTEST_PROP(RolloutPipeline, DisabledStagesLeaveNoTrace, ()) {
  Case c = Gen("compute_rollout_correction_and_rejection_mask");
  EnsureValidToken(c);
  Case rs_only = c, neither = c;
  rs_only.config.Set("rollout_is", kNone);
  rs_only.config.Set("rollout_rs", std::string("token_k2"));
  rs_only.config.Set("rollout_rs_threshold", 0.01);
  neither.config = Config();
  const Result a = RunOracle(rs_only), b = RunOracle(neither);
  RC_ASSERT(a.outputs.count("rollout_is_weights") == 0);
  RC_ASSERT(b.outputs.count("rollout_is_weights") == 0);
  RC_ASSERT(Close(b.outputs.at("modified_response_mask"), c.Input("response_mask"), kExact, NanPolicy::kNanEqualsNan));
  for (const auto& k : oracle::OffpolicyMetricNames()) RC_ASSERT(b.metrics.count("rollout_corr/" + k) == 1);
  for (const auto& [k, v] : b.metrics) {
    RC_ASSERT(k.rfind("rollout_corr/rollout_is_", 0) != 0);
    RC_ASSERT(k.rfind("rollout_corr/rollout_rs_", 0) != 0);
  }
  // rollout_is set but rollout_rs without a threshold: verl refuses.
  Case no_threshold = c;
  no_threshold.config.Set("rollout_rs", std::string("token_k1"));
  no_threshold.config.Set("rollout_rs_threshold", kNone);
  RC_ASSERT_THROWS_AS(RunOracle(no_threshold), VerlError);
}

// ------------------------------------------------------------------ presets

// Every factory's registry expansion is what the factory table builds with default
// arguments, has RolloutCorrectionConfig's 7 fields, and running the preset is running
// the pipeline (decoupled) or the bypass_mode loss (bypass) with that expansion.
RC_GTEST_PROP(RolloutPresets, ExpansionRoundTrips, ()) {
  std::set<std::string> seen;
  for (const auto& preset : oracle::RolloutPresets()) {
    seen.insert(preset.name);
    const FunctionSpec* s = FindSpec(preset.name, "rollout_correction");
    RC_ASSERT(s != nullptr);
    const oracle::RolloutCorrectionFields f = oracle::ExpandPresetDefaults(preset);
    RC_ASSERT(s->preset_expansion == f.AsConfig());
    RC_ASSERT(s->preset_expansion.size() == 7u);
    RC_ASSERT(f.bypass_mode == preset.bypass);

    Case c = s->generate(*ArbitraryParams());
    EnsureValidToken(c);
    for (const auto& k : preset.kwargs) c.config.Set(k.name, kNone);  // factory defaults
    Result direct;
    try {
      direct = RunOracle(c);
    } catch (const VerlError&) {
      continue;  // e.g. every weight zeroed by IcePop: verl raises the same either way
    }
    Case via = c;
    for (const auto& k : preset.kwargs) via.config.Set(k.name, kNone);
    for (const auto& [k, v] : f.AsConfig())
      if (k != "bypass_mode") via.config.Set(k, v);
    if (!preset.bypass) {
      via.function = "compute_rollout_correction_and_rejection_mask";
      via.config.Set("loss_type", kNone);
      const Result r = RunOracle(via);
      RC_ASSERT(Close(r.outputs.at("modified_response_mask"), direct.outputs.at("response_mask"), kExact,
                      NanPolicy::kNanEqualsNan));
      RC_ASSERT(r.outputs.count("rollout_is_weights") == direct.outputs.count("rollout_is_weights"));
      if (r.outputs.count("rollout_is_weights"))
        RC_ASSERT(Close(r.outputs.at("rollout_is_weights"), direct.outputs.at("rollout_is_weights"), kExact,
                        NanPolicy::kNanEqualsNan));
      RC_ASSERT(r.metrics == direct.metrics);
    } else {
      via.family = "policy_loss";
      via.function = "bypass_mode";
      via.inputs["old_log_prob"] = via.Input("rollout_log_prob");
      via.inputs.erase("rollout_log_prob");
      const Result r = RunOracle(via);
      RC_ASSERT(Close(r.outputs.at("pg_loss")[0], direct.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
      RC_ASSERT(Close(r.grads.at("log_prob"), direct.grads.at("log_prob"), kExact, NanPolicy::kNanEqualsNan));
    }
  }
  // One factory per preset entry of the registry, and no other.
  std::set<std::string> entries;
  for (const FunctionSpec& spec : Registry())
    if (!spec.preset_expansion.empty()) entries.insert(spec.name);
  RC_ASSERT(seen == entries);
}

// The IcePop factories format their band with Python's float repr.
TEST(RolloutPresets, IcepopBandUsesPythonFloatRepr) {
  const auto* p = oracle::FindRolloutPreset("decoupled_token_icepop");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(std::get<std::string>(oracle::ExpandPresetDefaults(*p).rollout_is_threshold), "0.5_5.0");
  Config kw;
  kw.Set("threshold", 1e-5);
  kw.Set("threshold_lower", int64_t{0});
  EXPECT_EQ(std::get<std::string>(oracle::ExpandPreset(*p, kw).rollout_is_threshold), "0_1e-05");
  EXPECT_EQ(oracle::PyFloatRepr(0.1), "0.1");
  EXPECT_EQ(oracle::PyFloatRepr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(oracle::PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(oracle::PyFloatRepr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(oracle::PyFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(oracle::PyFloatRepr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(oracle::PyFloatRepr(1e100), "1e+100");
  EXPECT_EQ(*oracle::PyFloatFromString(" 1_000.5 "), 1000.5);
  EXPECT_FALSE(oracle::PyFloatFromString("1__0"));
  EXPECT_TRUE(std::isinf(*oracle::PyFloatFromString("-Infinity")));
}

// ------------------------------------------------------------------ bypass_mode

Case BypassCase(const std::string& loss_type) {
  Case c = Gen("bypass_mode", "policy_loss");
  EnsureValidToken(c);
  c.config.Set("loss_type", loss_type);
  return c;
}

// In bypass mode with neither IS nor RS the pipeline only adds metrics: ppo_clip is
// compute_policy_loss_vanilla on the same inputs (IS weights never apply to it).
RC_GTEST_PROP(BypassMode, PpoClipWithoutCorrectionIsVanilla, ()) {
  Case c = BypassCase("ppo_clip");
  c.config.Set("rollout_is", *rc::gen::element(ConfigValue(kNone), ConfigValue(std::string("token")),
                                               ConfigValue(std::string("sequence"))));
  c.config.Set("rollout_rs", kNone);
  c.config.Set("rollout_rs_threshold", kNone);
  Result r;
  try {
    r = RunOracle(c);
  } catch (const VerlError&) {
    RC_SUCCEED("verl raises (e.g. every IS weight zeroed by IcePop)");
  }
  Case v = c;
  v.function = "vanilla";
  v.inputs.erase("rollout_is_weights");
  for (const char* k : {"loss_type", "rollout_is", "rollout_is_threshold", "rollout_is_batch_normalize", "rollout_rs",
                        "rollout_rs_threshold"})
    v.config.Set(k, kNone);
  const Result want = RunOracle(v);
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], want.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(r.grads.at("log_prob"), want.grads.at("log_prob"), kExact, NanPolicy::kNanEqualsNan));
  for (const auto& [k, val] : want.metrics) RC_ASSERT(Close(r.metrics.at(k), val, kExact, NanPolicy::kNanEqualsNan));
}

// reinforce is compute_policy_loss_reinforce on the pipeline's outputs: its IS weights
// (detached) and its rejected mask, with the rollout log-probs as rollout_log_prob.
RC_GTEST_PROP(BypassMode, ReinforceIsReinforceWithThePipelinesWeights, ()) {
  Case c = BypassCase("reinforce");
  Result r;
  oracle::CorrectionResult pipe;
  try {
    r = RunOracle(c);
    oracle::RolloutCorrectionSettings s;
    s.rollout_is = RawConfig(c.config, "rollout_is", kNone);
    s.rollout_is_threshold = RawConfig(c.config, "rollout_is_threshold", kNone);
    s.rollout_is_batch_normalize = c.config.Bool("rollout_is_batch_normalize", false);
    s.rollout_rs = RawConfig(c.config, "rollout_rs", kNone);
    s.rollout_rs_threshold = RawConfig(c.config, "rollout_rs_threshold", kNone);
    pipe = oracle::compute_rollout_correction_and_rejection_mask(c.Input("log_prob"), c.Input("old_log_prob"),
                                                                 c.Input("response_mask"), s);
  } catch (const VerlError&) {
    RC_SUCCEED("verl raises (e.g. every IS weight zeroed by IcePop)");
  }
  Case w = c;
  w.function = "compute_policy_loss_reinforce";
  w.inputs["response_mask"] = pipe.modified_response_mask;
  w.inputs.erase("rollout_is_weights");
  if (pipe.rollout_is_weights) w.inputs["rollout_is_weights"] = *pipe.rollout_is_weights;
  w.config = Config();
  for (const char* k : {"loss_agg_mode", "dp_size", "batch_num_tokens", "global_batch_size", "loss_scale_factor"}) {
    auto it = c.config.values().find(k);
    if (it != c.config.values().end()) w.config.Set(k, it->second);
  }
  const Result want = RunOracle(w);
  RC_ASSERT(Close(r.outputs.at("pg_loss")[0], want.outputs.at("pg_loss")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(r.grads.at("log_prob"), want.grads.at("log_prob"), kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(r.metrics.at("actor/ppo_kl"), want.metrics.at("actor/ppo_kl"), kExact, NanPolicy::kNanEqualsNan));
}

// Any loss_type but the two is refused (after the pipeline, which may refuse first).
TEST(BypassMode, UnknownLossTypeRaisesValueError) {
  Case c = FindSpec("bypass_mode", "policy_loss")->generate(GenParams{7, 4, 6, DType::kFloat64});
  EnsureValidToken(c);
  c.config.Set("loss_type", std::string("ppo"));
  c.config.Set("rollout_is", kNone);
  c.config.Set("rollout_rs", kNone);
  try {
    RunOracle(c);
    FAIL() << "no error";
  } catch (const VerlError& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
}

// ------------------------------------------------------------------ metric helpers

// A case for one of the metric helpers, built by hand.
Case HelperCase(const std::string& function, DType dtype) {
  Case c;
  c.family = "rollout_correction";
  c.function = function;
  c.name = "property";
  c.dtype = dtype;
  return c;
}

std::string KindOfRun(const Case& c, Result* out) {
  try {
    *out = RunOracle(c);
  } catch (const VerlError& e) {
    return e.kind();
  }
  return "";
}

// compute_rollout_correction_weights hands compute_is_metrics its truncated weights, the
// raw ones and the log-ratio (per token) or its masked row sums (sequence), with the
// parsed bounds; it adds only oob_ratio (IcePop) and batch_norm_factor. Called directly on
// those tensors, the helper reports every other key with the same value (or raises the
// same error: an IcePop band no weight falls in makes the ESS divide by zero).
RC_GTEST_PROP(RolloutMetrics, IsMetricsAreTheWeightsFunctionsMetrics, ()) {
  const std::string level = *rc::gen::element<std::string>("token", "sequence");
  const ConfigValue threshold = *rc::gen::element<ConfigValue>(1.5, 2.0, int64_t{5}, std::string("0.5_2.0"),
                                                               std::string("0.8_1.25"), std::string("1.0_2.0"));
  const Case w = WeightsCase(level, threshold, false);
  const Array& lr = w.Input("log_ratio");
  const Array& mask = w.Input("response_mask");
  const oracle::IsThreshold th = oracle::ParseRolloutIsThreshold(threshold);

  Case m = HelperCase("compute_is_metrics", w.dtype);
  Array sums({mask.rows()}, mask.dtype), raw(mask.shape, mask.dtype);
  for (int64_t i = 0; i < mask.rows(); ++i) {
    oracle::ExactSum s;
    for (int64_t t = 0; t < mask.cols(); ++t) s.Add(oracle::MaskedTerm(lr.at(i, t), mask.at(i, t)));
    sums[i] = s.Value();
    for (int64_t t = 0; t < mask.cols(); ++t) {
      const double l = level == "sequence" ? sums[i] : lr.at(i, t);
      raw.at(i, t) = std::exp(std::min(std::max(l, -20.0), 20.0)) * mask.at(i, t);
    }
  }
  m.inputs["raw_rollout_is_weights"] = raw;
  m.inputs["response_mask"] = mask;
  if (level == "sequence")
    m.inputs["log_ratio_sum"] = sums;
  else
    m.inputs["log_ratio_for_metrics"] = lr;
  m.config.Set("rollout_is", level);
  m.config.Set("rollout_is_threshold", th.upper);
  if (th.lower) m.config.Set("rollout_is_threshold_lower", *th.lower);

  Result whole, direct;
  const std::string whole_error = KindOfRun(w, &whole);
  if (!whole_error.empty()) {
    // The weights are not there; the helper on any weights that are all zero raises too.
    m.inputs["rollout_is_weights"] = Array(mask.shape, mask.dtype);
    ValidateCase(*SpecFor(m), m);
    RC_ASSERT(KindOfRun(m, &direct) == whole_error);
    RC_SUCCEED("both raise " + whole_error);
  }
  m.inputs["rollout_is_weights"] = whole.outputs.at("rollout_is_weights");
  ValidateCase(*SpecFor(m), m);
  RC_ASSERT(KindOfRun(m, &direct).empty());
  std::map<std::string, double> expected = whole.metrics;
  expected.erase("rollout_is_oob_ratio");
  expected.erase("rollout_is_batch_norm_factor");
  RC_ASSERT(direct.metrics.size() == expected.size());
  for (const auto& [k, v] : expected) {
    RC_ASSERT(direct.metrics.count(k) == 1u);
    if (!Close(direct.metrics.at(k), v, kExact, NanPolicy::kNanEqualsNan))
      RC_FAIL(k + " differs from compute_rollout_correction_weights'");
  }
}

// The per-token statistic and thresholds compute_rollout_rejection_mask hands
// compute_rs_metrics for one option (k1 = -lr, k2 = lr^2 / 2, k3 = exp(lr) - 1 - lr of the
// clamped log-ratio; sequence options: the row's masked sum, mean or max, broadcast and as
// per_sequence_values; k1: math.log of the bounds with the lower one applied, else the
// upper bound and 0). Every key the helper reports is the option's metric with the same
// value; the option's two masked fractions and the overall fractions are the caller's.
RC_GTEST_PROP(RolloutMetrics, RsMetricsAreTheRejectionFunctionsMetrics, ()) {
  const std::string option = *rc::gen::elementOf(
      std::vector<std::string>(std::begin(oracle::kRolloutRsOptions), std::end(oracle::kRolloutRsOptions)));
  Case rej = Gen(option);
  EnsureValidToken(rej);
  const Array& lr = rej.Input("log_ratio");
  const Array& mask = rej.Input("response_mask");
  const auto thresholds =
      oracle::ParseRolloutRsThresholds({option}, RawConfig(rej.config, "rollout_rs_threshold", kNone));
  const oracle::RsThreshold th = thresholds.at(0).second;
  const char kind = option.back();
  const bool token = option.rfind("token_", 0) == 0;

  Array stat(mask.shape, mask.dtype), valid({mask.rows()}, mask.dtype), seq({mask.rows()}, mask.dtype);
  for (int64_t k = 0; k < stat.size(); ++k) {
    const double l = std::min(std::max(lr[k], -20.0), 20.0);
    stat[k] = kind == '1' ? -l : kind == '2' ? 0.5 * l * l : std::exp(l) - 1.0 - l;
  }
  for (int64_t i = 0; i < mask.rows(); ++i) {
    oracle::ExactSum sum, n;
    double mx = -INFINITY;
    for (int64_t t = 0; t < mask.cols(); ++t) {
      sum.Add(oracle::MaskedTerm(stat.at(i, t), mask.at(i, t)));
      n.Add(mask.at(i, t));
      if (mask.at(i, t) != 0.0) mx = std::max(mx, stat.at(i, t));
    }
    valid[i] = n.Value() > 0 ? 1.0 : 0.0;
    if (option.rfind("seq_sum", 0) == 0)
      seq[i] = sum.Value();
    else if (option.rfind("seq_mean", 0) == 0)
      seq[i] = sum.Value() / (n.Value() + oracle::kMaskedMeanEps);
    else
      seq[i] = n.Value() > 0 ? mx : 0.0;
  }
  if (!token)
    for (int64_t i = 0; i < mask.rows(); ++i)
      for (int64_t t = 0; t < mask.cols(); ++t) stat.at(i, t) = seq[i];

  Case m = HelperCase("compute_rs_metrics", rej.dtype);
  m.inputs["rs_statistic"] = stat;
  m.inputs["response_mask"] = mask;
  m.inputs["seq_valid_mask"] = valid;
  if (!token) m.inputs["per_sequence_values"] = seq;
  m.config.Set("option_name", option);
  m.config.Set("level", std::string(token ? "token" : "sequence"));
  m.config.Set("rollout_rs_threshold", kind == '1' ? std::log(th.upper) : th.upper);
  m.config.Set("rollout_rs_threshold_lower", kind == '1' ? std::log(*th.lower) : 0.0);
  m.config.Set("apply_lower_threshold", int64_t{kind == '1' ? 1 : 0});
  ValidateCase(*SpecFor(m), m);

  const Result whole = RunOracle(rej), direct = RunOracle(m);
  std::set<std::string> expected;
  for (const auto& [k, v] : whole.metrics)
    if (k.rfind("rollout_rs_" + option + "_", 0) == 0 && k.find("masked_fraction") == std::string::npos)
      expected.insert(k);
  std::set<std::string> got;
  for (const auto& [k, v] : direct.metrics) got.insert(k);
  RC_ASSERT(got == expected);
  for (const auto& [k, v] : direct.metrics)
    if (!Close(v, whole.metrics.at(k), kExact, NanPolicy::kNanEqualsNan))
      RC_FAIL(k + " differs from compute_rollout_rejection_mask's");
}

// option_name is only the keys' prefix (verl's f"rollout_rs_{option_name}"): any string,
// one of verl's options or not, gives the same values under its own keys.
RC_GTEST_PROP(RolloutMetrics, RsOptionNameIsOnlyAPrefix, ()) {
  Case c = Gen("compute_rs_metrics");
  EnsureValidToken(c);
  const std::string from = c.config.String("option_name", "");
  const std::string to = *rc::gen::element<std::string>("custom", "token_k1", "seq_max_k3", "x");
  Case renamed = c;
  renamed.config.Set("option_name", to);
  const Result a = RunOracle(c), b = RunOracle(renamed);
  RC_ASSERT(a.metrics.size() == b.metrics.size());
  const std::string pa = "rollout_rs_" + from + "_", pb = "rollout_rs_" + to + "_";
  for (const auto& [k, v] : a.metrics) {
    RC_ASSERT(k.rfind(pa, 0) == 0);
    const std::string kb = pb + k.substr(pa.size());
    RC_ASSERT(b.metrics.count(kb) == 1u);
    RC_ASSERT(Close(b.metrics.at(kb), v, kExact, NanPolicy::kNanEqualsNan));
  }
}

// ------------------------------------------------------------------ parsers and errors

std::string KindOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const VerlError& e) {
    return e.kind();
  }
  return "";
}

// _parse_rollout_is_threshold refuses every malformed spec with verl's exception type.
TEST(RolloutParsers, IsThresholdRejectsMalformedSpecs) {
  for (const char* bad : {"", "   ", "abc", "0.5_x", "x_2", "-1", "0", "2_1", "0_2", "_2", "1__2"})
    EXPECT_EQ(KindOf([&] { oracle::ParseRolloutIsThreshold(std::string(bad)); }), "ValueError") << "'" << bad << "'";
  EXPECT_EQ(KindOf([] { oracle::ParseRolloutIsThreshold(-1.0); }), "ValueError");
  EXPECT_EQ(KindOf([] { oracle::ParseRolloutIsThreshold(kNone); }), "TypeError");
  const oracle::IsThreshold tis = oracle::ParseRolloutIsThreshold(std::string(" 2.5 "));
  EXPECT_EQ(tis.upper, 2.5);
  EXPECT_FALSE(tis.lower);
  const oracle::IsThreshold ice = oracle::ParseRolloutIsThreshold(std::string("0.5_2.0"));
  EXPECT_EQ(*ice.lower, 0.5);
  EXPECT_EQ(ice.upper, 2.0);
  // Python's float() takes underscores between digits: only the first '_' splits.
  EXPECT_EQ(oracle::ParseRolloutIsThreshold(std::string("1_2_0")).upper, 20.0);
}

// _parse_rollout_rs_thresholds: k1 "lower_upper" with lower <= upper, one number u meaning
// [1/u, u]; k2/k3 one positive upper bound without '_'; 1 or len(options) entries.
TEST(RolloutParsers, RsThresholdsRejectMalformedSpecs) {
  const std::vector<std::string> k1 = {"token_k1"}, k2 = {"token_k2"}, both = {"token_k1", "seq_mean_k3"};
  auto kind = [](const std::vector<std::string>& o, const ConfigValue& v) {
    return KindOf([&] { oracle::ParseRolloutRsThresholds(o, v); });
  };
  for (const char* bad : {"", " , ", "abc", "0.5_x", "-1", "2_1", "-1_2"})
    EXPECT_EQ(kind(k1, std::string(bad)), "ValueError") << "'" << bad << "'";
  for (const char* bad : {"0.5_2", "abc", "-1", "0", ""}) EXPECT_EQ(kind(k2, std::string(bad)), "ValueError") << bad;
  EXPECT_EQ(kind(both, std::string("0.5_2.0,0.1,0.2")), "ValueError");  // wrong count
  EXPECT_EQ(kind(k1, kNone), "ValueError");
  EXPECT_EQ(kind(k1, 0.5), "ValueError");                      // 1/0.5 = 2 > 0.5
  EXPECT_EQ(kind(k1, std::string("0")), "ZeroDivisionError");  // 1.0 / 0.0 outside verl's try
  const auto shared = oracle::ParseRolloutRsThresholds(both, 2.0);
  EXPECT_EQ(*shared[0].second.lower, 0.5);
  EXPECT_EQ(shared[0].second.upper, 2.0);
  EXPECT_EQ(shared[1].second.upper, 2.0);
  EXPECT_EQ(oracle::ParseRolloutRsOptions("token_k1, token_k1 ,seq_max_k2,").size(), 2u);
  EXPECT_EQ(KindOf([] { oracle::ParseRolloutRsOptions("seq_max_k1"); }), "ValueError");
  EXPECT_EQ(KindOf([] { oracle::ParseRolloutRsOptions(" , "); }), "ValueError");
}

// compute_is_metrics and compute_rs_metrics raise ValueError on a mask without a valid
// token, compute_offpolicy_metrics AssertionError.
TEST(RolloutParsers, EmptyMaskErrors) {
  Array lr = Array::Matrix(2, 3), mask = Array::Matrix(2, 3);
  EXPECT_EQ(KindOf([&] { oracle::compute_rollout_correction_weights(lr, mask, std::string("token"), 2.0, false); }),
            "ValueError");
  EXPECT_EQ(KindOf([&] { oracle::compute_rollout_rejection_mask(lr, mask, std::string("token_k1"), 2.0); }),
            "ValueError");
  EXPECT_EQ(KindOf([&] { oracle::compute_offpolicy_metrics(lr, &lr, mask); }), "AssertionError");
  EXPECT_EQ(KindOf([&] { oracle::compute_rollout_correction_weights(lr, mask, std::string("tok"), 2.0, false); }),
            "ValueError");
  Array rows({2}, DType::kFloat64);
  EXPECT_EQ(KindOf([&] { oracle::compute_is_metrics(lr, lr, rows, mask, "sequence", 2.0); }), "ValueError");
  EXPECT_EQ(KindOf([&] { oracle::compute_rs_metrics("token_k2", lr, mask, rows, "token", nullptr, 0.1, 0.0, false); }),
            "ValueError");
}

// verl's weights are tensors of the case's dtype, and IcePop decides on them: float32's
// log-ratio float32(log 2) = 0.69314718246 has exp 2.0000000028, which float32 stores as
// 2.0, on the upper bound of "1.0_2.0" and kept (torch gives exactly 2.0 there). The same
// log-ratio in a float64 case is above the bound and dropped.
TEST(RolloutWeights, IcePopDecidesOnTheWeightInTheCasesDtype) {
  const double lr_f32 = static_cast<double>(static_cast<float>(std::log(2.0)));
  ASSERT_GT(std::exp(lr_f32), 2.0);
  for (const DType d : {DType::kFloat32, DType::kFloat64}) {
    Array lr = Array::Matrix(1, 2, d), mask = Array::Matrix(1, 2, d);
    lr[0] = lr_f32;
    lr[1] = 0.25;  // inside the band either way
    mask[0] = mask[1] = 1.0;
    const auto r =
        oracle::compute_rollout_correction_weights(lr, mask, std::string("token"), std::string("1.0_2.0"), false);
    if (d == DType::kFloat32) {
      EXPECT_EQ(r.weights[0], 2.0);
      EXPECT_EQ(r.metrics.at("rollout_is_oob_ratio"), 0.0);
      EXPECT_EQ(r.boundary[0], 1.0) << "torch's float32 exp may round the other way";
    } else {
      EXPECT_EQ(r.weights[0], 0.0);  // 2.8e-9 over the bound is far beyond float64 rounding
      EXPECT_NEAR(r.metrics.at("rollout_is_oob_ratio"), 0.5, 1e-8);  // masked_mean's 1 / (2 + 1e-8)
      EXPECT_EQ(r.boundary[0], 0.0);
    }
    EXPECT_EQ(r.boundary[1], 0.0);
  }
}

// rollout_is_ratio_fraction_* at sequence level compares the float64 row sums with
// torch.log of a float32 threshold, which torch does not round correctly (log(1.5f):
// 0.40546513, libm 0.40546510). A float64 row sum between the two (log(1.5) + 1e-8: far
// from the weight's bound 1.5 in float64 terms) is counted high by one and not by the
// other: the row is a decision the oracle cannot settle, and is marked; a row 1e-6 away
// is not.
TEST(RolloutWeights, ARowSumWithinAFloat32UlpOfTheLogThresholdIsADecision) {
  Array lr = Array::Matrix(2, 1), mask = Array::Matrix(2, 1);
  lr[0] = std::log(1.5) + 1e-8;
  lr[1] = std::log(1.5) + 1e-6;
  mask[0] = mask[1] = 1.0;
  const auto r = oracle::compute_rollout_correction_weights(lr, mask, std::string("sequence"), 1.5, false);
  EXPECT_EQ(r.boundary[0], 1.0);
  EXPECT_EQ(r.boundary[1], 0.0);
}

}  // namespace
}  // namespace verlconf
