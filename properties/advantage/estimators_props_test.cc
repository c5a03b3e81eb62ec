// Invariants of the advantage estimators beyond GRPO (verl's ADV_ESTIMATOR_REGISTRY),
// each with the reason it must hold, and the cross-checks that tie the estimators to
// each other where their definitions coincide.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "oracle/advantage/groups.h"
#include "oracle/advantage/grpo_variants.h"
#include "oracle/advantage/returns.h"
#include "oracle/core/errors.h"
#include "oracle/torch_functional/masked.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

Case Gen(const std::string& name, const GenParams& p) { return FindSpec(name, "advantage")->generate(p); }
Array Adv(const Case& c) { return RunOracle(c).outputs.at("advantages"); }

// Ones everywhere: the per-sequence scalar of an outcome estimator, before masking.
Case Unmasked(Case c) {
  for (double& m : c.inputs["response_mask"].data) m = 1.0;
  return c;
}

// Rows permuted: every input whose first axis is the batch moves with it.
Case PermuteRows(const Case& c, const std::vector<int64_t>& perm) {
  Case p = c;
  const FunctionSpec* spec = SpecFor(c);
  for (auto& [key, a] : p.inputs) {
    const Role role = spec->FindInput(key)->role;
    if (role == Role::kScalar || role == Role::kComponentWeights) continue;
    const Array& src = c.Input(key);
    const int64_t cols = a.rank() == 2 ? a.cols() : 1;
    for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i)
      for (int64_t t = 0; t < cols; ++t) a[i * cols + t] = src[perm[static_cast<size_t>(i)] * cols + t];
  }
  return p;
}

// Appends `extra` padding tokens (zeros; mask 0) to the token-shaped inputs only.
Case PadTokenInputs(const Case& c, int64_t extra) {
  Case out = c;
  const FunctionSpec* spec = SpecFor(c);
  for (auto& [key, a] : out.inputs) {
    if (spec->FindInput(key)->role != Role::kTokens) continue;
    Array p = Array::Matrix(a.rows(), a.cols() + extra, a.dtype);
    for (int64_t i = 0; i < a.rows(); ++i)
      for (int64_t t = 0; t < a.cols(); ++t) p.at(i, t) = a.at(i, t);
    a = std::move(p);
  }
  return out;
}

const char* kGrouped[] = {"rloo",
                          "rloo_vectorized",
                          "opo",
                          "gpg",
                          "grpo_passk",
                          "reinforce_plus_plus_baseline",
                          "gdpo",
                          "optimal_token_baseline",
                          "tir_optimal_token_baseline"};
const char* kAll[] = {"gae",
                      "reinforce_plus_plus",
                      "reinforce_plus_plus_baseline",
                      "remax",
                      "rloo",
                      "rloo_vectorized",
                      "opo",
                      "gpg",
                      "grpo_passk",
                      "gdpo",
                      "optimal_token_baseline",
                      "tir_optimal_token_baseline"};

// The leave-one-out baseline of member i is the mean of the others, so the advantages
// of a group of n >= 2 sum to s_1 + ... + s_n - (n - 1) / (n - 1) (s_1 + ... + s_n) = 0.
RC_GTEST_PROP(Rloo, LeaveOneOutAdvantagesSumToZeroPerGroup, ()) {
  for (const char* name : {"rloo", "rloo_vectorized"}) {
    const Case c = Unmasked(Gen(name, *ArbitraryParams()));
    const Array a = Adv(c);
    for (const auto& members : oracle::GroupBy(c.Input("index")).members) {
      if (members.size() < 2) continue;
      double sum = 0, scale = 0;
      for (int64_t i : members) sum += a.at(i, 0), scale += std::fabs(a.at(i, 0));
      RC_ASSERT(std::fabs(sum) <= 1e-12 * (1 + scale));
    }
  }
}

// The two RLOO keys compute the same leave-one-out baseline; they differ only on a
// singleton, which the loop leaves at its raw score and the vectorized one zeroes
// (docs/verl-quirks.md).
RC_GTEST_PROP(Rloo, LoopAndVectorizedDifferOnlyOnSingletons, ()) {
  Case c = Unmasked(Gen("rloo", *ArbitraryParams()));
  Case v = c;
  v.function = "rloo_vectorized";
  const Array a = Adv(c), b = Adv(v);
  const std::vector<double> s = oracle::RowSums(c.Input("token_level_rewards"));
  const oracle::Groups groups = oracle::GroupBy(c.Input("index"));
  for (int64_t i = 0; i < a.rows(); ++i) {
    if (groups.members[static_cast<size_t>(groups.group_of[static_cast<size_t>(i)])].size() == 1) {
      RC_ASSERT(a.at(i, 0) == s[static_cast<size_t>(i)]);
      RC_ASSERT(b.at(i, 0) == 0.0);
    } else {
      RC_ASSERT(Close(a.at(i, 0), b.at(i, 0), Tol{1e-12, 1e-12}, NanPolicy::kNanFails));
    }
  }
}

// A baseline that is a (weighted) mean of the group's own scores moves with them:
// adding c to every score of a group of >= 2 changes nothing. (gpg is excluded: its
// alpha counts non-zero scores, which a shift changes.)
RC_GTEST_PROP(Baselines, ShiftingAGroupChangesNothing, ()) {
  const double shift = *rc::gen::inRange(-40, 40) / 4.0;
  for (const char* name : {"rloo", "rloo_vectorized", "opo", "grpo_passk", "reinforce_plus_plus_baseline"}) {
    Case c = Gen(name, *ArbitraryParams());
    for (double& m : c.inputs["response_mask"].data) m = 1.0;  // opo: every length > 0
    Case shifted = c;
    Array& r = shifted.inputs["token_level_rewards"];
    for (int64_t i = 0; i < r.rows(); ++i) r.at(i, 0) += shift;
    Array a, b;
    try {
      a = Adv(c), b = Adv(shifted);
    } catch (const VerlError&) {
      continue;  // a whitening over a single token raises in verl too
    }
    const oracle::Groups groups = oracle::GroupBy(c.Input("index"));
    // Whitening runs over the whole batch: a singleton's shifted score moves the batch
    // mean, so for the whitened estimator only batches without singletons qualify.
    bool singleton = false;
    for (const auto& m : groups.members) singleton |= m.size() == 1;
    if (singleton && std::string(name) == "reinforce_plus_plus_baseline") continue;
    for (const auto& members : groups.members) {
      if (members.size() < 2) continue;
      for (int64_t i : members)
        for (int64_t t = 0; t < a.cols(); ++t)
          RC_ASSERT(Close(b.at(i, t), a.at(i, t), Tol{1e-8, 1e-8 * (1 + std::fabs(shift))}, NanPolicy::kNanFails));
    }
  }
}

// rloo, opo and remax subtract baselines linear in the rewards, and Pass@k without std
// normalisation is a difference of two scores: scaling every reward (and remax's
// baseline) by k scales the advantages by k.
RC_GTEST_PROP(Baselines, ScalingRewardsScalesLinearBaselines, ()) {
  const double k = *rc::gen::inRange(1, 40) / 8.0;
  for (const char* name : {"rloo", "rloo_vectorized", "opo", "remax", "grpo_passk"}) {
    RC_LOG() << name << " k=" << k << "\n";
    Case c = Gen(name, *ArbitraryParams());
    if (std::string(name) == "grpo_passk") c.config.Set("norm_adv_by_std_in_grpo", int64_t{0});
    Case scaled = c;
    for (double& v : scaled.inputs["token_level_rewards"].data) v *= k;
    if (scaled.inputs.count("reward_baselines"))
      for (double& v : scaled.inputs["reward_baselines"].data) v *= k;
    const Array a = Adv(c), b = Adv(scaled);
    for (int64_t e = 0; e < a.size(); ++e)  // NaN: opo's 0/0 baseline for a group of empty rows
      RC_ASSERT(Close(b[e], k * a[e], Tol{1e-10, 1e-10}, NanPolicy::kNanEqualsNan));
  }
}

// GRPO divides the centred scores by the group std, so scaling every reward by k > 0
// changes nothing but the epsilon's weight: (k d) / (k sd + eps) vs d / (sd + eps). With
// the group spreads the generator makes (sd >= 1e-2 when not 0) that is within
// eps |1 - 1/k| / sd relative.
RC_GTEST_PROP(Grpo, ScalingRewardsLeavesNormalisedGrpoUnchanged, ()) {
  const double k = *rc::gen::inRange(1, 40) / 8.0;
  Case c = Gen("grpo", *ArbitraryParams());
  c.config.Set("norm_adv_by_std_in_grpo", int64_t{1});
  Case scaled = c;
  for (double& v : scaled.inputs["token_level_rewards"].data) v *= k;
  const Array a = Adv(c), b = Adv(scaled);
  const std::vector<double> s = oracle::RowSums(c.Input("token_level_rewards"));
  for (const auto& members : oracle::GroupBy(c.Input("index")).members) {
    if (members.size() < 2) continue;  // a singleton keeps k s / (1 + eps): linear, not invariant
    const double sd = oracle::GroupStd(s, members);
    if (sd < 1e-2) continue;  // near-constant groups: the epsilon dominates
    const double rtol = 2e-6 * std::fabs(1 - 1 / k) / sd + 1e-12;
    for (int64_t i : members)
      for (int64_t t = 0; t < a.cols(); ++t)
        RC_ASSERT(Close(b.at(i, t), a.at(i, t), Tol{rtol, 1e-12}, NanPolicy::kNanFails));
  }
}

// With gamma = lam = 1 the TD errors telescope: A_t + V_t = sum of the rewards on valid
// tokens from t on, the bootstrap past the last valid token being 0. GAE's returns are
// A + V before whitening, so on valid tokens they equal the masked reward-to-go.
RC_GTEST_PROP(Gae, ReturnsWithUnitGammaLambdaAreRewardToGo, ()) {
  Case c = Gen("gae", *ArbitraryParams());
  c.config.Set("gamma", 1.0);
  c.config.Set("lam", 1.0);
  const Array ret = RunOracle(c).outputs.at("returns");
  const Array& m = c.Input("response_mask");
  const Array g = oracle::MaskedRewardToGo(c.Input("token_level_rewards"), m);
  double scale = 1;
  for (double v : c.Input("values").data) scale = std::max(scale, std::fabs(v));
  for (int64_t e = 0; e < ret.size(); ++e)
    if (m[e] != 0.0)
      RC_ASSERT(Close(ret[e], g[e], Tol{1e-12, 1e-12 * scale * c.Input("values").cols()}, NanPolicy::kNanFails));
}

// REINFORCE++ with gamma = 1 carries the running return across observation tokens and
// drops rewards sitting on them: its returns are the masked reward-to-go, exactly what
// remax (and the OTB estimators) compute.
RC_GTEST_PROP(ReinforcePlusPlus, UnitGammaReturnsAreMaskedRewardToGo, ()) {
  Case c = Gen("reinforce_plus_plus", *ArbitraryParams());
  c.config.Set("gamma", 1.0);
  const Array ret = RunOracle(c).outputs.at("returns");
  const Array& m = c.Input("response_mask");
  const Array g = oracle::MaskedRewardToGo(c.Input("token_level_rewards"), m);
  for (int64_t e = 0; e < ret.size(); ++e)
    RC_ASSERT(Close(ret[e], g[e] * m[e], Tol{1e-12, 1e-12}, NanPolicy::kNanFails));
}

// Whitening is what gae and reinforce_plus_plus end with: over the valid tokens the
// advantages have unbiased variance var / (var + 1e-8) <= 1 and mean 0, up to
// masked_mean's 1e-8 in the denominator, which leaves 1e-8 mu / std of the raw mean mu.
RC_GTEST_PROP(Whitened, GaeAndReinforcePlusPlusAreWhitenedOverValidTokens, ()) {
  for (const char* name : {"gae", "reinforce_plus_plus"}) {
    RC_LOG() << name << "\n";
    const Case c = Gen(name, *ArbitraryParams());
    const Array& m = c.Input("response_mask");
    const Result r = RunOracle(c);
    Array raw = r.outputs.at("returns");  // reinforce_plus_plus: the returns are what is whitened
    if (std::string(name) == "gae")
      for (int64_t e = 0; e < raw.size(); ++e) raw[e] -= c.Input("values")[e];  // A = returns - V
    const double mu = oracle::masked_mean(raw, m), var = oracle::masked_var(raw, m, true);
    const double inv_std = 1.0 / std::sqrt(var + 1e-8);
    const Array& a = r.outputs.at("advantages");
    RC_ASSERT(std::fabs(oracle::masked_mean(a, m)) <= 1e-8 * (1 + std::fabs(mu)) * inv_std);
    // masked_var centres on the biased mean sum / (n + 1e-8): a nearly constant raw set
    // shows a variance of (1e-8 mu)^2 that whitening removes, so compare only beyond it.
    const double whitened_var = oracle::masked_var(a, m, true);
    RC_ASSERT(whitened_var <= 1.0 + 1e-12);
    if (var > 1e-6 * (1 + mu * mu))
      RC_ASSERT(Close(whitened_var, var / (var + 1e-8), Tol{1e-6, 1e-12}, NanPolicy::kNanFails));
  }
}

// Advantages live on response tokens only: most estimators multiply by the mask at the
// end. Two do not (docs/verl-quirks.md): gae returns its whitened advantages unmasked
// (padding gets -mean/std, pinned below), and remax's reward-to-go is non-zero on an
// observation token inside a response, where its baseline term is masked to 0.
RC_GTEST_PROP(Advantages, ZeroOnMaskedTokens, ()) {
  for (const char* name : kAll) {
    if (std::string(name) == "gae") continue;
    RC_LOG() << name << "\n";
    const Case c = Gen(name, *ArbitraryParams());
    const Array a = Adv(c);
    const Array& m = c.Input("response_mask");
    for (int64_t i = 0; i < m.rows(); ++i) {
      int64_t last = -1;
      for (int64_t t = 0; t < m.cols(); ++t)
        if (m.at(i, t) != 0.0) last = t;
      for (int64_t t = 0; t < m.cols(); ++t) {
        if (m.at(i, t) != 0.0 || std::isnan(a.at(i, t))) continue;  // opo: NaN for a group of empty rows
        if (std::string(name) == "remax" && t < last) continue;     // observation token: reward-to-go
        RC_ASSERT(a.at(i, t) == 0.0);
      }
    }
  }
}

TEST(Remax, ObservationTokenCarriesTheRewardToGo) {
  Case c;
  c.family = "advantage";
  c.function = "remax";
  c.inputs["token_level_rewards"] = Array::Matrix(1, 3);
  c.inputs["response_mask"] = Array::Matrix(1, 3);
  c.inputs["reward_baselines"] = Array({1}, DType::kFloat64);
  c.inputs["token_level_rewards"].at(0, 2) = 1.0;
  c.inputs["response_mask"].at(0, 0) = c.inputs["response_mask"].at(0, 2) = 1.0;
  c.inputs["reward_baselines"][0] = 0.25;
  const Array a = RunOracle(c).outputs.at("advantages");
  EXPECT_EQ(a.at(0, 0), 0.75);
  EXPECT_EQ(a.at(0, 1), 1.0);  // mask 0, yet the return 1 minus 0.25 * 0
  EXPECT_EQ(a.at(0, 2), 0.75);
}

TEST(Gae, PaddingCarriesMinusMeanOverStdNotZero) {
  Case c;
  c.family = "advantage";
  c.function = "gae";
  c.inputs["token_level_rewards"] = Array::Matrix(2, 3);
  c.inputs["values"] = Array::Matrix(2, 3);
  c.inputs["response_mask"] = Array::Matrix(2, 3);
  c.inputs["token_level_rewards"].at(0, 1) = 1.0;
  c.inputs["token_level_rewards"].at(1, 1) = 3.0;
  for (int64_t i = 0; i < 2; ++i) c.inputs["response_mask"].at(i, 0) = c.inputs["response_mask"].at(i, 1) = 1.0;
  const Array a = RunOracle(c).outputs.at("advantages");
  // valid advantages 1, 1, 3, 3 (mean 2, std 2/sqrt(3)); the padding's raw 0 is whitened.
  EXPECT_NEAR(a.at(0, 2), -2.0 / std::sqrt(4.0 / 3.0 + 1e-8), 1e-6);
  EXPECT_NE(a.at(0, 2), 0.0);
}

// Group membership, not position, defines every baseline: permuting the sequences
// (with all their inputs) permutes the advantages. Sums reorder, so agreement is to
// rounding, amplified by 1/eps on near-constant groups.
RC_GTEST_PROP(Advantages, PermutationEquivariant, ()) {
  for (const char* name : kGrouped) {
    const Case c = Gen(name, *ArbitraryParams());
    const int64_t b = c.Input("index").size();
    std::vector<int64_t> perm(static_cast<size_t>(b));
    for (int64_t i = 0; i < b; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(*rc::gen::arbitrary<uint64_t>()));
    const Array x = Adv(c), y = Adv(PermuteRows(c, perm));
    for (int64_t i = 0; i < b; ++i)
      for (int64_t t = 0; t < x.cols(); ++t) {
        const double want = x.at(perm[static_cast<size_t>(i)], t), got = y.at(i, t);
        RC_ASSERT(Close(got, want, Tol{1e-9, 1e-9}, NanPolicy::kNanEqualsNan));
      }
  }
}

// Padding columns carry no reward and no mask: they change nothing on the existing
// tokens (gae's padding value aside, which is -mean/std by the quirk above).
RC_GTEST_PROP(Advantages, PaddingColumnsChangeNothing, ()) {
  const int64_t extra = *rc::gen::inRange<int64_t>(1, 6);
  for (const char* name : kAll) {
    const Case c = Gen(name, *ArbitraryParams());
    const Array x = Adv(c), y = Adv(PadTokenInputs(c, extra));
    for (int64_t i = 0; i < x.rows(); ++i) {
      for (int64_t t = 0; t < x.cols(); ++t)
        RC_ASSERT(Close(y.at(i, t), x.at(i, t), Tol{1e-12, 1e-12}, NanPolicy::kNanEqualsNan));
      if (std::string(name) == "gae") continue;
      for (int64_t t = x.cols(); t < y.cols(); ++t) RC_ASSERT(y.at(i, t) == 0.0 || std::isnan(y.at(i, t)));
    }
  }
}

// GPG is Dr.GRPO (mean-centred, singleton mean 0) scaled by alpha / f_norm with
// alpha = B / #non-zero scores in float32; the `alpha` argument plays no part.
RC_GTEST_PROP(Gpg, IsDrGrpoTimesAlphaOverFNorm, ()) {
  Case c = Gen("gpg", *ArbitraryParams());
  const double f_norm = *rc::gen::inRange(1, 9) / 2.0;
  c.config.Set("f_norm", f_norm);
  c.config.Set("alpha", 123.0);
  Case dr = c;
  dr.function = "grpo";
  dr.config = Config();
  dr.config.Set("epsilon", 1e-6);
  dr.config.Set("norm_adv_by_std_in_grpo", int64_t{0});
  int64_t nonzero = 0;
  for (double s : oracle::RowSums(c.Input("token_level_rewards"))) nonzero += s != 0.0;
  const double b = static_cast<double>(c.Input("index").size());
  const double alpha =
      static_cast<double>((1.0f / static_cast<float>(std::max<int64_t>(nonzero, 1))) * static_cast<float>(b));
  const Array g = Adv(c), d = Adv(dr);
  for (int64_t e = 0; e < g.size(); ++e)
    RC_ASSERT(Close(g[e], alpha * d[e] / f_norm, Tol{1e-12, 1e-12}, NanPolicy::kNanFails));
}

// Pass@k credits only the best response of each group, with r_max - r_2nd >= 0.
RC_GTEST_PROP(GrpoPassk, OnlyTheBestOfEachGroupIsCredited, ()) {
  const Case c = Unmasked(Gen("grpo_passk", *ArbitraryParams()));
  const Array a = Adv(c);
  const std::vector<double> s = oracle::RowSums(c.Input("token_level_rewards"));
  for (const auto& members : oracle::GroupBy(c.Input("index")).members) {
    int64_t credited = 0;
    double best = -INFINITY;
    for (int64_t i : members) best = std::max(best, s[static_cast<size_t>(i)]);
    for (int64_t i : members) {
      const double v = a.at(i, 0);
      RC_ASSERT(v >= 0.0);
      if (v != 0.0) ++credited, RC_ASSERT(s[static_cast<size_t>(i)] == best);
    }
    RC_ASSERT(credited <= 1);
  }
}

TEST(GrpoPassk, GroupOfOneRaisesValueError) {
  Case c;
  c.family = "advantage";
  c.function = "grpo_passk";
  c.inputs["token_level_rewards"] = Array::Matrix(3, 2);
  c.inputs["response_mask"] = Array::Matrix(3, 2);
  c.inputs["index"] = Array({3}, DType::kInt64);
  c.inputs["index"][2] = 1.0;
  try {
    RunOracle(c);
    FAIL() << "verl raises ValueError for a group of one";
  } catch (const VerlError& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
}

// Without observation tokens or empty rows, packing valid tokens to the left changes
// no position, so the multi-turn OTB equals the plain one.
RC_GTEST_PROP(Otb, TirEqualsOtbWithoutObservationTokens, ()) {
  Case c = Gen("optimal_token_baseline", *ArbitraryParams());
  Array& m = c.inputs["response_mask"];
  for (int64_t i = 0; i < m.rows(); ++i) {  // right-padded, at least one token
    int64_t len = 0;
    for (int64_t t = 0; t < m.cols(); ++t) len += m.at(i, t) != 0.0;
    len = std::max<int64_t>(len, 1);
    for (int64_t t = 0; t < m.cols(); ++t) m.at(i, t) = t < len ? 1.0 : 0.0;
  }
  Case tir = c;
  tir.function = "tir_optimal_token_baseline";
  const Result a = RunOracle(c), b = RunOracle(tir);
  RC_ASSERT(Close(b.outputs.at("advantages"), a.outputs.at("advantages"), Tol{1e-12, 1e-12}, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(b.outputs.at("returns"), a.outputs.at("returns"), kExact, NanPolicy::kNanEqualsNan));
}

// A trajectory alone in its group has no baseline: its advantage is its return.
RC_GTEST_PROP(Otb, SingletonAdvantageIsReturn, ()) {
  for (const char* name : {"optimal_token_baseline", "tir_optimal_token_baseline"}) {
    Case c = Gen(name, *ArbitraryParams());
    Array& idx = c.inputs["index"];
    for (int64_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>(i);
    const Result r = RunOracle(c);
    const Array& m = c.Input("response_mask");
    for (int64_t e = 0; e < m.size(); ++e)
      RC_ASSERT(r.outputs.at("advantages")[e] == r.outputs.at("returns")[e] * m[e]);
  }
}

// ReMax subtracts the greedy rollout's reward on every valid token.
RC_GTEST_PROP(Remax, AdvantageIsReturnMinusBaselineOnValidTokens, ()) {
  const Case c = Gen("remax", *ArbitraryParams());
  const Result r = RunOracle(c);
  const Array& m = c.Input("response_mask");
  for (int64_t i = 0; i < m.rows(); ++i)
    for (int64_t t = 0; t < m.cols(); ++t)
      RC_ASSERT(r.outputs.at("advantages").at(i, t) ==
                r.outputs.at("returns").at(i, t) - c.Input("reward_baselines")[i] * m.at(i, t));
}

// GDPO without reward components is whitened GRPO of the row sums.
RC_GTEST_PROP(Gdpo, WithoutComponentsIsWhitenedGrpo, ()) {
  Case c = Gen("gdpo", *ArbitraryParams());
  c.inputs.erase("reward_components");
  c.inputs.erase("reward_weights");
  Case g = c;
  g.function = "grpo";
  Array grpo;
  Array gdpo;
  try {
    gdpo = Adv(c);
  } catch (const VerlError&) {
    RC_SUCCEED("mask sum below 2: verl's whitening raises");
  }
  grpo = Adv(g);
  Array want = oracle::masked_whiten(grpo, c.Input("response_mask"), true);
  for (int64_t e = 0; e < want.size(); ++e) want[e] *= c.Input("response_mask")[e];
  RC_ASSERT(Close(gdpo, want, kExact, NanPolicy::kNanEqualsNan));
}

// A component's float32 GRPO takes its std about the group's float32 mean, as torch's
// CPU std does: verl 0.9.1 (torch 2.15) gives -0.052594803 for the first row of the
// group [-0.50000015, -0.5] (std 1.3328e-07); about the exact mean it would be
// -0.0555 (std 1.2644e-07).
TEST(Gdpo, AComponentsStdIsTakenAboutItsFloat32Mean) {
  Array comp = Array::Matrix(3, 1, DType::kFloat64), mask = comp, rewards = comp, index({3}, DType::kInt64);
  const double scores[3] = {-0.50000015, 1.0, -0.5};
  for (int64_t i = 0; i < 3; ++i) comp[i] = scores[i], mask[i] = 1.0, rewards[i] = 0.0;
  index[0] = 0, index[1] = 1, index[2] = 0;
  oracle::GrpoConfig cfg;
  cfg.epsilon = 1e-6;
  cfg.norm_adv_by_std_in_grpo = true;
  const Array sum = oracle::gdpo_weighted_sum(rewards, mask, index, &comp, nullptr, cfg);
  EXPECT_EQ(sum[0], -0.052594803273677826);
  EXPECT_EQ(sum[2], 0.10518960654735565);
}

// With one output per session the wrapper has nothing to select or broadcast: it is
// GRPO of the rows (epsilon at verl's default).
RC_GTEST_PROP(MultiTrajectory, SingleOutputSessionsArePlainGrpo, ()) {
  Case c = Gen("compute_advantage_for_multi_trajectories", *ArbitraryParams());
  Array& session = c.inputs["session"];
  for (int64_t i = 0; i < session.size(); ++i) session[i] = static_cast<double>(i);
  Case g;
  g.family = "advantage";
  g.function = "grpo";
  g.dtype = c.dtype;
  for (const char* k : {"token_level_rewards", "response_mask", "index"}) g.inputs[k] = c.Input(k);
  g.config.Set("epsilon", 1e-6);
  g.config.Set("norm_adv_by_std_in_grpo", int64_t{c.config.Bool("norm_adv_by_std_in_grpo", true) ? 1 : 0});
  RC_ASSERT(Close(Adv(c), Adv(g), kExact, NanPolicy::kNanEqualsNan));
}

// Every output of a session carries the session's one advantage on its valid tokens.
RC_GTEST_PROP(MultiTrajectory, OneAdvantagePerSession, ()) {
  const Case c = Gen("compute_advantage_for_multi_trajectories", *ArbitraryParams());
  const Array a = Adv(c);
  const Array& m = c.Input("response_mask");
  std::map<std::pair<double, double>, double> seen;
  for (int64_t i = 0; i < m.rows(); ++i)
    for (int64_t t = 0; t < m.cols(); ++t) {
      if (m.at(i, t) == 0.0) {
        RC_ASSERT(a.at(i, t) == 0.0);
        continue;
      }
      auto [it, fresh] = seen.emplace(std::make_pair(c.Input("index")[i], c.Input("session")[i]), a.at(i, t));
      if (!fresh) RC_ASSERT(a.at(i, t) == it->second);
    }
}

}  // namespace
}  // namespace verlconf
