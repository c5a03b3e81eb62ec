// Registry entries for clip_cov and kl_cov (family "policy_loss"). The math is in
// oracle/policy_loss/cov.cc. verl's pick of tokens (clip_cov: torch.randperm; kl_cov:
// torch.topk) is the optional input `cov_selected`; the goldens carry verl's own.
#include <iterator>
#include <tuple>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/cov.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf {
namespace {

using oracle::CovLossConfig;
using oracle::PolicyLossInputs;
using oracle::PolicyLossResult;

using CovFn = PolicyLossResult (*)(const PolicyLossInputs&, const CovLossConfig&, const Array&);
using PickFn = Array (*)(const PolicyLossInputs&, const CovLossConfig&);

// clip_cov's keys, or kl_cov's (each loss reads only its own).
CovLossConfig ReadConfig(const Config& c, bool clip) {
  CovLossConfig v;
  if (clip) {
    std::tie(v.clip_ratio_low, v.clip_ratio_high) = oracle::ReadClipRatios(c);
    v.clip_cov_ratio = c.Double("clip_cov_ratio");
    v.clip_cov_lb = c.Double("clip_cov_lb");
    v.clip_cov_ub = c.Double("clip_cov_ub");
  } else {
    v.kl_cov_ratio = c.Double("kl_cov_ratio");
    v.ppo_kl_coef = c.Double("ppo_kl_coef");
  }
  v.loss_agg_mode = c.String("loss_agg_mode");
  v.global = oracle::ReadGlobalBatchInfo(c);
  return v;
}

// The pick: the case's cov_selected when it has one (verl's, in the goldens), else
// `pick_from`'s default pick (`pick_from` = the case itself, or the base case whose pick
// a stop-gradient evaluation holds fixed).
PolicyLossResult Run(CovFn fn, PickFn pick, bool clip, const Case& c, const Case& pick_from) {
  const PolicyLossInputs in = oracle::ReadPolicyLossInputs(c);
  const CovLossConfig cfg = ReadConfig(c.config, clip);
  if (const Array* sel = pick_from.OptionalInput("cov_selected")) return fn(in, cfg, *sel);
  const PolicyLossInputs base = oracle::ReadPolicyLossInputs(pick_from);
  return fn(in, cfg, pick(base, ReadConfig(pick_from.config, clip)));
}

// kl_cov's result with, as alternatives, those of the other picks torch.topk may make
// among covariances tied within rounding at the pick's edge.
Result WithTiedPicks(CovFn fn, const Case& c, Result r) {
  constexpr size_t kMaxPicks = 256;
  const PolicyLossInputs in = oracle::ReadPolicyLossInputs(c);
  const CovLossConfig cfg = ReadConfig(c.config, /*clip=*/false);
  const Array sel = oracle::kl_cov_default_selection(in, cfg);
  for (const Array& alt : oracle::kl_cov_tied_selections(in, cfg, sel, kMaxPicks, &r.more_alternatives))
    r.alternatives.push_back(oracle::PackPolicyLoss(fn(in, cfg, alt), c.dtype));
  return r;
}

struct CovDef {
  const char* name;
  const char* symbol;
  CovFn fn;
  PickFn pick;
  bool clip;
  std::vector<std::string> metrics;
  std::vector<std::string> discrete;
  const char* notes;
};

GenFn Generator(bool clip) {
  return [clip](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewPolicyLossCase(p, g);
    if (clip) {
      c.config.Set("clip_ratio", 0.2);
      c.config.Set("clip_ratio_low", 0.2);
      c.config.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
      c.config.Set("clip_cov_ratio", g.Coin(0.5) ? 0.0002 : 0.2);
      c.config.Set("clip_cov_lb", g.Coin(0.5) ? 1.0 : 0.2);
      c.config.Set("clip_cov_ub", 5.0);
    } else {
      c.config.Set("kl_cov_ratio", g.Coin(0.5) ? 0.0002 : 0.2);
      c.config.Set("ppo_kl_coef", g.Coin(0.5) ? 0.1 : 1.0);
    }
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
}

}  // namespace

void AddPolicyLossCovSpecs(std::vector<FunctionSpec>& out) {
  static const std::vector<CovDef> defs = {
      {"clip_cov",
       "verl.trainer.ppo.core_algos.compute_policy_loss_clip_cov",
       oracle::policy_loss_clip_cov,
       oracle::clip_cov_default_selection,
       true,
       {"actor/pg_clipfrac", "actor/ppo_kl"},
       {"actor/pg_clipfrac"},
       "PPO clip (no dual clip, no +-20 clamp) with the loss of a random subset of covariance-band tokens "
       "zeroed; the subset is the input cov_selected (goldens: verl's torch.randperm draw under "
       "torch.manual_seed(0)); pg_clipfrac is the zeroed share, not the clipped one."},
      {"kl_cov",
       "verl.trainer.ppo.core_algos.compute_policy_loss_kl_cov",
       oracle::policy_loss_kl_cov,
       oracle::kl_cov_default_selection,
       false,
       {"actor/ppo_kl"},
       {},
       "-A r, plus ppo_kl_coef |log-ratio| on the top-k covariance tokens (the input cov_selected; goldens: "
       "verl's torch.topk pick; default pick breaks ties towards the lower index); ppo_kl is the mean "
       "|log-ratio|; ppo_kl_coef defaults to PolicyLossConfig's 0.1."},
  };
  for (const CovDef& d : defs) {
    FunctionSpec s;
    s.name = d.name;
    s.family = "policy_loss";
    s.verl_symbol = d.symbol;
    s.inputs = oracle::PolicyLossInputSpecs();
    s.inputs.push_back({"cov_selected", Role::kTokens, /*is_mask=*/true, /*optional=*/true,
                        "the tokens verl picked (recorded by the capture adapter; absent: the oracle's "
                        "deterministic pick)"});
    if (d.clip) {
      oracle::AddClipRatioKeys(s);
      s.config.push_back({"clip_cov_ratio", "float", 0.0002, "policy_loss.clip_cov_ratio; share of tokens zeroed"});
      s.config.push_back({"clip_cov_lb", "float", 1.0, "policy_loss.clip_cov_lb; covariance band, exclusive"});
      s.config.push_back({"clip_cov_ub", "float", 5.0, "policy_loss.clip_cov_ub; covariance band, exclusive"});
    } else {
      s.config.push_back({"kl_cov_ratio", "float", 0.0002, "policy_loss.kl_cov_ratio; share of tokens penalised"});
      s.config.push_back({"ppo_kl_coef", "float", 0.1, "policy_loss.ppo_kl_coef; |log-ratio| penalty weight"});
    }
    s.config.push_back(oracle::ActorLossAggModeKey());
    oracle::AddGlobalBatchKeys(s);
    s.outputs = {{"pg_loss", OutputKind::kScalar}};
    s.metrics = d.metrics;
    s.grads = {"log_prob"};
    s.discrete_metrics = d.discrete;
    const CovFn fn = d.fn;
    const PickFn pick = d.pick;
    const bool clip = d.clip;
    s.oracle = [fn, pick, clip](const Case& c) {
      Result r = oracle::PackPolicyLoss(Run(fn, pick, clip, c, c), c.dtype);
      if (!clip && !c.OptionalInput("cov_selected")) r = WithTiedPicks(fn, c, std::move(r));
      return r;
    };
    // The pick depends on log_prob (through the covariance) but carries no gradient:
    // hold the base point's pick fixed.
    s.stop_gradient_objective = [fn, pick, clip](const Case& base, const Case& at) {
      return Run(fn, pick, clip, at, base).loss;
    };
    s.generate = Generator(d.clip);
    s.notes = d.notes;
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf
