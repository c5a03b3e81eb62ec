// Every case of every bundled golden file goes through the registry and is compared
// with the oracle. Against float64 goldens the oracle must agree to 1e-10 relative:
// same formulas, same precision, so anything more is a semantic difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "oracle/judge/judge.h"
#include "oracle/policy_loss/cov.h"
#include "oracle/registry.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "tools/cli/paths.h"
#include "tools/h5/golden_set.h"

namespace verlconf {
namespace {

const fixtures::GoldenSet& Goldens() {
  static const fixtures::GoldenSet g = fixtures::GoldenSet::Load(tools::BundledGoldenDir(nullptr));
  return g;
}

TEST(Golden, BundledSetIsVerl091) { EXPECT_EQ(Goldens().VerlVersion(), "0.9.1"); }

TEST(Golden, OracleMatchesEveryCase) {
  std::map<std::string, std::map<Outcome, int>> tally;
  int checked = 0;
  for (const auto& [key, c] : Goldens().index) {
    const FunctionSpec* spec = SpecFor(*c);
    ASSERT_NE(spec, nullptr) << c->Where() << ": golden function has no registry entry";
    ASSERT_TRUE(static_cast<bool>(spec->oracle)) << c->function;
    const CaseReport r = CheckImplementation(*spec, *c, spec->oracle);
    ++checked;
    ++tally[c->function][r.outcome];
    EXPECT_TRUE(r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted) << r.Describe();
    // The design's bound; a spec may loosen it only with a stated reason (there is one:
    // grpo_vectorized, where torch's float32 sqrt is not correctly rounded).
    const Tolerance t64 = ToleranceFor(*spec, "*", DType::kFloat64);
    const double bound = t64.reason.empty() ? 1e-10 : t64.rtol;
    // The oracle reproduces verl's float64 decisions exactly: the flip allowance that
    // candidates get (a different exp may land on the other side of a bound) is not
    // the oracle's to use.
    if (c->dtype == DType::kFloat64) {
      EXPECT_EQ(r.flips, 0) << r.Describe();
    }
    // A field whose case states a larger bound (FunctionSpec::case_tolerance: the case's
    // own conditioning, as in masked_whiten of a constant, where verl's float64 result is
    // itself 1e-8 from the exact one) is held to that bound, which PASSED already checks;
    // every other field to the design's.
    if (c->dtype == DType::kFloat64 && r.outcome == Outcome::kPassed) {
      const Tolerance d = DefaultTolerance(DType::kFloat64);
      for (const FieldReport& f : r.fields) {
        const bool case_bound = !f.tol.reason.empty() && (f.tol.rtol > d.rtol || f.tol.atol > d.atol) &&
                                spec->case_tolerance && spec->case_tolerance(*c, f.field);
        if (!std::isfinite(f.worst_rel) || f.worst_rel <= bound || case_bound) continue;
        ADD_FAILURE() << f.field << ": worst rel " << f.worst_rel << " > " << bound << "\n"
                      << r.Describe() << (t64.reason.empty() ? "" : "\n  override: " + t64.reason);
      }
    }
  }
  EXPECT_GT(checked, 0);
  // A function whose every case is vacuous would be "green" without evidence.
  for (const auto& [fn, by] : tally) EXPECT_GT(by.count(Outcome::kPassed) ? by.at(Outcome::kPassed) : 0, 0) << fn;
}

TEST(Golden, EveryOracleFunctionHasThreeCasesPerDtype) {
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> n;
  for (const auto& [key, c] : Goldens().index) {
    auto& count = n[{c->family, c->function}];
    (c->dtype == DType::kFloat64 ? count.first : count.second)++;
  }
  for (const auto& s : Registry()) {
    const auto& count = n[std::make_pair(s.family, s.name)];
    EXPECT_GE(count.first, 3) << s.family << "/" << s.name << ": float64 golden cases";
    EXPECT_GE(count.second, 3) << s.family << "/" << s.name << ": float32 golden cases";
  }
}

// One entry may stand for several of verl's modes (compute_rollout_correction_weights:
// token and sequence, TIS and IcePop, batch normalization); each mode it declares in
// required_variants needs its own 3 float64 and 3 float32 cases that verl computed.
TEST(Golden, EveryRequiredVariantHasThreeCasesPerDtype) {
  int specs = 0;
  for (const auto& s : Registry()) {
    // A variants function with nothing required would hold no mode to any case.
    EXPECT_EQ(static_cast<bool>(s.variants), !s.required_variants.empty())
        << s.family << "/" << s.name << ": variants and required_variants go together";
    if (s.required_variants.empty()) continue;
    ++specs;
    ASSERT_TRUE(static_cast<bool>(s.variants)) << s.name << ": required_variants without a variants function";
    std::map<std::string, std::pair<int, int>> n;
    for (const auto& [key, c] : Goldens().index) {
      if (c->family != s.family || c->function != s.name || c->expect_error) continue;
      for (const auto& v : s.variants(*c)) (c->dtype == DType::kFloat64 ? n[v].first : n[v].second)++;
    }
    for (const auto& v : s.required_variants) {
      EXPECT_GE(n[v].first, 3) << s.family << "/" << s.name << " [" << v << "]: float64 golden cases";
      EXPECT_GE(n[v].second, 3) << s.family << "/" << s.name << " [" << v << "]: float32 golden cases";
    }
  }
  EXPECT_GT(specs, 0);
}

// A case where verl rejected every token agrees with any implementation that rejects
// everything; the check must not call that a pass. Every RS option verl supports can
// reject every token, so each has such a case.
TEST(Golden, EveryTokenRejectedIsMistrusted) {
  std::map<std::string, int> seen;  // function -> all-rejected cases
  for (const auto& [key, c] : Goldens().index) {
    if (c->expect_error || c->name.find("all_rejected") == std::string::npos) continue;
    const FunctionSpec* spec = SpecFor(*c);
    ASSERT_NE(spec, nullptr);
    ++seen[c->function];
    EXPECT_EQ(CheckImplementation(*spec, *c, spec->oracle).outcome, Outcome::kMistrusted) << c->Where();
  }
  for (const auto& s : Registry()) {
    if (s.family == "rollout_correction" && oracle::IsRolloutRsOption(s.name)) {
      EXPECT_GT(seen[s.name], 0) << s.name << ": no golden case where every token is rejected";
    }
  }
}

// Stop-gradient semantics: every golden case of a function with a differentiable input
// and a tensor output carries, for each output verl returned, its projection and the
// VJP with respect to each differentiable input; a recapture that lost them cannot pass.
TEST(Golden, EveryDifferentiableTensorOutputHasVjps) {
  std::map<std::string, int> with_vjps, fields;  // answered cases, VJP fields
  int zero = 0, nonzero = 0;
  for (const auto& [key, c] : Goldens().index) {
    const FunctionSpec* spec = SpecFor(*c);
    ASSERT_NE(spec, nullptr);
    if (spec->vjp_inputs.empty()) {
      EXPECT_TRUE(c->vjps.empty() && c->projections.empty()) << c->Where() << ": VJPs the spec does not list";
      continue;
    }
    if (c->expect_error) continue;
    ++with_vjps[spec->family + "/" + spec->name];
    for (const OutputSpec& o : spec->outputs) {
      if (o.kind != OutputKind::kTensor || !c->outputs.count(o.name)) continue;
      EXPECT_TRUE(c->projections.count(o.name)) << c->Where() << ": no projections/" << o.name;
      for (const std::string& in : spec->vjp_inputs) {
        auto v = c->vjps.find(o.name + "/" + in);
        if (v == c->vjps.end()) {
          ADD_FAILURE() << c->Where() << ": no vjps/" << o.name << "/" << in;
          continue;
        }
        ++fields[spec->family + "/" + spec->name];
        const bool all_zero =
            std::all_of(v->second.data.begin(), v->second.data.end(), [](double x) { return x == 0; });
        // verl's own autograd said it: a detached output's VJP is exactly zero.
        if (spec->VjpIsZero(o.name)) {
          EXPECT_TRUE(all_zero) << c->Where() << ": verl passes gradient through " << o.name;
        }
        (all_zero ? zero : nonzero)++;
      }
    }
  }
  // Every such function verl answers (all but "full", which only raises) has them, at
  // least one per answered case.
  for (const auto& s : Registry()) {
    const std::string key = s.family + "/" + s.name;
    if (!s.vjp_inputs.empty() && with_vjps[key] > 0) {
      EXPECT_GE(fields[key], with_vjps[key]) << key << ": golden VJPs";
    }
  }
  EXPECT_GT(zero, 0);
  EXPECT_GT(nonzero, 0);
}

// The comparison holds implementations to the stop-gradients: the oracle with the IS
// weights (or a rejection mask) not detached, i.e. a non-zero VJP where verl's is zero,
// fails every such case; dropping the VJPs is UNSUPPORTED, never PASSED.
TEST(Golden, LeakingGradientThroughADetachedOutputFails) {
  std::map<std::string, int> leaked;  // family/function -> cases
  for (const auto& [key, c] : Goldens().index) {
    const FunctionSpec* spec = SpecFor(*c);
    if (c->expect_error || spec->vjp_zero_outputs.empty()) continue;
    Result leak = spec->oracle(*c);
    if (leak.vjps.empty()) continue;
    for (auto& [field, v] : leak.vjps) {
      // The gradient an undetached weight would pass: projection * weight on each token.
      const std::string out = field.substr(0, field.find('/'));
      const Array& w = leak.outputs.at(out);
      for (int64_t k = 0; k < v.size(); ++k) v[k] = c->projections.at(out)[k] * w[k];
    }
    const CaseReport r = CompareResult(*spec, *c, &leak, std::nullopt);
    bool any_weight = false;
    for (const auto& [out, w] : leak.outputs)
      for (double x : w.data) any_weight |= x != 0.0;
    if (!any_weight) continue;
    EXPECT_EQ(r.outcome, Outcome::kFailed) << r.Describe();
    Result dropped = spec->oracle(*c);
    dropped.vjps.clear();
    // Judged on the rest, and said to be partial: the VJP fields are UNSUPPORTED, never passed.
    const CaseReport d = CompareResult(*spec, *c, &dropped, std::nullopt);
    EXPECT_TRUE(d.partial) << c->Where();
    for (const auto& f : d.fields)
      if (f.field.rfind("vjps/", 0) == 0) {
        EXPECT_EQ(f.outcome, Outcome::kUnsupported) << c->Where() << " " << f.field;
      }
    ++leaked[spec->family + "/" + spec->name];
  }
  // Every function that detaches an output, as the registry declares it.
  for (const auto& s : Registry()) {
    if (!s.vjp_zero_outputs.empty()) {
      EXPECT_GT(leaked[s.family + "/" + s.name], 0) << s.family << "/" << s.name << ": no case checked";
    }
  }
}

// clip_cov / kl_cov goldens carry verl's own pick (inputs/cov_selected, recorded by the
// capture adapter from verl's torch.randperm / torch.topk calls). The oracle takes it as
// given; this checks that what was recorded is a pick verl's rule can make, so a broken
// recording cannot pass unnoticed: clip_cov zeroes min(clip_num, #candidates) of its
// candidates; kl_cov's pick is a top-k set of the covariance (any order among ties).
// float64 only: in float32 a candidate's covariance or clip decision may sit on the
// other side of a bound than in the oracle's float64 arithmetic.
TEST(Golden, CovPicksFollowVerlsRule) {
  std::map<std::string, int> checked;  // function -> float64 cases
  for (const auto& [key, c] : Goldens().index) {
    if (c->family != "policy_loss" || (c->function != "clip_cov" && c->function != "kl_cov")) continue;
    if (c->expect_error || c->dtype != DType::kFloat64) continue;
    const Array* sel = c->OptionalInput("cov_selected");
    ASSERT_NE(sel, nullptr) << c->Where() << ": no recorded pick";
    const oracle::PolicyLossInputs in{c->Input("old_log_prob"), c->Input("log_prob"), c->Input("advantages"),
                                      c->Input("response_mask"), c->OptionalInput("rollout_is_weights")};
    oracle::CovLossConfig cfg;
    cfg.clip_ratio_low = c->config.Double("clip_ratio_low", c->config.Double("clip_ratio", 0.2));
    cfg.clip_ratio_high = c->config.Double("clip_ratio_high", c->config.Double("clip_ratio", 0.2));
    cfg.clip_cov_ratio = c->config.Double("clip_cov_ratio", 0.0002);
    cfg.clip_cov_lb = c->config.Double("clip_cov_lb", 1.0);
    cfg.clip_cov_ub = c->config.Double("clip_cov_ub", 5.0);
    cfg.kl_cov_ratio = c->config.Double("kl_cov_ratio", 0.0002);
    double n = 0;
    for (int64_t k = 0; k < sel->size(); ++k) n += (*sel)[k];
    if (c->function == "clip_cov") {
      const Array cand = oracle::clip_cov_candidates(in, cfg);
      double nc = 0;
      for (int64_t k = 0; k < cand.size(); ++k) {
        nc += cand[k];
        EXPECT_LE((*sel)[k], cand[k]) << c->Where() << ": picked a non-candidate at " << k;
      }
      EXPECT_EQ(n, std::min<double>(static_cast<double>(oracle::clip_cov_pick_count(in, cfg)), nc)) << c->Where();
    } else {
      const Array cov = oracle::kl_cov_covariance(in);
      EXPECT_EQ(n, static_cast<double>(oracle::kl_cov_pick_count(in, cfg))) << c->Where();
      double min_in = INFINITY, max_out = -INFINITY;
      for (int64_t k = 0; k < cov.size(); ++k) {
        if (!(in.response_mask[k] > 0)) continue;
        if ((*sel)[k] != 0.0)
          min_in = std::min(min_in, cov[k]);
        else
          max_out = std::max(max_out, cov[k]);
      }
      EXPECT_GE(min_in, max_out) << c->Where() << ": recorded pick is not a top-k set";
    }
    ++checked[c->function];
  }
  // Every function that takes verl's pick, as the registry declares its inputs.
  for (const auto& s : Registry()) {
    if (s.FindInput("cov_selected")) {
      EXPECT_GT(checked[s.name], 0) << s.family << "/" << s.name << ": no float64 case checked";
    }
  }
}

// verl names (as recorded by the capture from verl's own registries) that have no
// oracle entry, each as "<registry>/<name>". The test fails both when verl gains a name
// that is neither covered nor listed, and when a listed name has an oracle entry (so the
// list never goes stale). Empty: every name verl 0.9.1 registers is covered.
const std::set<std::string>& KnownGaps() {
  static const std::set<std::string> gaps;
  return gaps;
}

TEST(Golden, VerlRegistryIsCoveredOrListedAsAGap) {
  const auto reg = Goldens().VerlRegistry();
  ASSERT_TRUE(reg.count("adv_estimators")) << "capture did not record ADV_ESTIMATOR_REGISTRY";
  ASSERT_TRUE(reg.count("policy_losses")) << "capture did not record POLICY_LOSS_REGISTRY";
  ASSERT_TRUE(reg.count("kl_penalty_names"));
  ASSERT_TRUE(reg.count("loss_agg_modes"));
  std::set<std::string> verl_names;
  for (const auto& [kind, names] : reg)
    for (const auto& n : names) {
      verl_names.insert(n);
      const FunctionSpec* s = FindSpec(n, fixtures::FamilyOfVerlRegistry(kind));
      const bool covered = s && s->oracle;
      const bool listed = KnownGaps().count(kind + "/" + n) > 0;
      if (!covered)
        EXPECT_TRUE(listed) << kind << " '" << n << "' is in verl but has no oracle entry";
      else
        EXPECT_FALSE(listed) << kind << "/" << n << " has an oracle entry: remove it from KnownGaps";
    }
  // Every advantage estimator verl registers has an oracle entry: the advantage family
  // is held to full coverage whatever KnownGaps lists, so none may be listed as a gap.
  for (const auto& n : reg.at("adv_estimators")) {
    const FunctionSpec* s = FindSpec(n, "advantage");
    EXPECT_TRUE(s && s->oracle) << "verl's ADV_ESTIMATOR_REGISTRY has '" << n << "', the oracle registry does not";
    EXPECT_FALSE(KnownGaps().count("adv_estimators/" + n)) << n;
  }
  // The names the suite is built around (GRPO, vanilla PPO, every agg mode, every KL
  // name) are in verl's recorded registries: a capture that lost them would leave the
  // coverage check above nothing to hold them to.
  for (const char* n :
       {"grpo", "grpo_vectorized", "vanilla", "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
        "seq-mean-token-sum-norm", "kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "k3+", "low_var_kl+"})
    EXPECT_TRUE(verl_names.count(n)) << n << " not in verl's recorded registry";
}

}  // namespace
}  // namespace verlconf
