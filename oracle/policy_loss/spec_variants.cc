// Registry entries for the policy losses beyond vanilla (family "policy_loss"): gspo,
// sapo, gpg, cispo, dro, geo_mean, dppo_tv, dppo_kl. The math is in
// oracle/policy_loss/variants.cc.
#include <iterator>
#include <tuple>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/variants.h"

namespace verlconf {
namespace {

using oracle::PolicyLossDetached;
using oracle::PolicyLossFamilyConfig;
using oracle::PolicyLossResult;

enum Keys : unsigned { kClip = 1, kClipC = 2, kTau = 4, kDroBeta = 8 };

struct LossDef {
  const char* name;
  const char* symbol;
  oracle::FamilyLossFn fn;
  unsigned keys;
  bool stop_gradient;  // verl's gradient is not the derivative of the value
  std::vector<std::string> metrics;
  std::vector<std::string> discrete;
  const char* notes;
  // Config keys verl accepts and ignores, with the value it uses instead (FunctionSpec::fixed_config).
  std::vector<std::pair<std::string, ConfigValue>> fixed = {};
};

// The keys the loss takes (LossDef::keys); the others stay unset (the loss does not read them).
PolicyLossFamilyConfig ReadConfig(const Config& c, unsigned keys) {
  PolicyLossFamilyConfig v;
  if (keys & kClip) std::tie(v.clip_ratio_low, v.clip_ratio_high) = oracle::ReadClipRatios(c);
  if (keys & kClipC) v.clip_ratio_c = c.Double("clip_ratio_c");
  if (keys & kTau) {
    v.tau_pos = c.Double("tau_pos");
    v.tau_neg = c.Double("tau_neg");
  }
  if (keys & kDroBeta) v.dro_beta = c.OptionalDouble("dro_beta");
  v.loss_agg_mode = c.String("loss_agg_mode");
  v.global = oracle::ReadGlobalBatchInfo(c);
  return v;
}

PolicyLossResult Run(oracle::FamilyLossFn fn, unsigned keys, const Case& c, const PolicyLossDetached* frozen,
                     PolicyLossDetached* detached) {
  return fn(oracle::ReadPolicyLossInputs(c), ReadConfig(c.config, keys), frozen, detached);
}

GenFn Generator(unsigned keys) {
  return [keys](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewPolicyLossCase(p, g);
    if (keys & kClip) {
      c.config.Set("clip_ratio", 0.2);
      c.config.Set("clip_ratio_low", 0.2);
      c.config.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
    }
    if (keys & kClipC) c.config.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 1.5);
    if (keys & kTau) {
      c.config.Set("tau_pos", g.Coin(0.5) ? 1.0 : 2.0);
      c.config.Set("tau_neg", g.Coin(0.5) ? 1.05 : 0.5);
    }
    if (keys & kDroBeta) c.config.Set("dro_beta", g.Coin(0.5) ? 0.1 : 1.0);
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
}

const std::vector<LossDef>& Defs() {
  static const std::vector<LossDef> defs = {
      {"gspo",
       "verl.trainer.ppo.core_algos.compute_policy_loss_gspo",
       oracle::policy_loss_gspo,
       kClip,
       true,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {"actor/pg_clipfrac"},
       "sequence ratio exp(sg[masked mean log-ratio]) with gradient through log_prob - sg[log_prob] only; "
       "log-ratio clamped above at 10 (no +-20 clamp); pg_clipfrac_lower is always 0."},
      {"sapo",
       "verl.trainer.ppo.core_algos.compute_policy_loss_sapo",
       oracle::policy_loss_sapo,
       kTau,
       false,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {},
       "gate sigmoid(tau (r - 1)) * 4 / tau; always aggregated with seq-mean-token-mean (loss_agg_mode "
       "ignored); both clip fractions are 0.",
       {{"loss_agg_mode", std::string("seq-mean-token-mean")}}},
      {"gpg",
       "verl.trainer.ppo.core_algos.compute_policy_loss_gpg",
       oracle::policy_loss_gpg,
       0,
       false,
       {},
       {},
       "-log_prob * A, aggregated; verl returns no metrics. (The advantage estimator 'gpg' is a different "
       "function: family advantage.)"},
      {"cispo",
       "verl.trainer.ppo.core_algos.compute_policy_loss_cispo",
       oracle::policy_loss_cispo,
       kClip,
       true,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {"actor/pg_clipfrac"},
       "-sg[clip(r)] * A * log_prob: the gradient is -clip(r) * A (times the aggregation weight); "
       "pg_clipfrac counts r != clip(r); pg_clipfrac_lower is always 0."},
      {"dro",
       "verl.trainer.ppo.core_algos.compute_policy_loss_dro",
       oracle::policy_loss_dro,
       kDroBeta,
       false,
       {"actor/ppo_kl"},
       {},
       "-(log_prob * A - beta/2 (log_prob - old_log_prob)^2); ValueError unless policy_loss.dro_beta > 0; "
       "only metric ppo_kl (absent from verl 0.8.0)."},
      {"geo_mean",
       "verl.trainer.ppo.core_algos.compute_policy_loss_geo_mean",
       oracle::policy_loss_geo_mean,
       kClip,
       false,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"},
       "GMPO: per-row geometric mean of sign-clipped ratios times the row's mean advantage; torch.mean over "
       "all B rows (loss_agg_mode and global_batch_info ignored); IS weights enter as their per-row "
       "geometric mean."},
      {"dppo_tv",
       "verl.trainer.ppo.core_algos.compute_policy_loss_dppo_tv",
       oracle::policy_loss_dppo_tv,
       kClip | kClipC,
       true,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"},
       "-A * sg[min(r, clip_ratio_c)] * log_prob * sg[TV mask on p - p_old]; clip_ratio_c is ActorConfig's "
       "(default 3.0: the function's own fallback 20.0 never applies)."},
      {"dppo_kl",
       "verl.trainer.ppo.core_algos.compute_policy_loss_dppo_kl",
       oracle::policy_loss_dppo_kl,
       kClip | kClipC,
       true,
       {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"},
       {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"},
       "-A * sg[min(r, clip_ratio_c)] * log_prob * sg[binary-KL mask]; a log_prob > 0 makes the binary KL "
       "NaN, which fails every comparison."},
  };
  return defs;
}

}  // namespace

void AddPolicyLossVariantSpecs(std::vector<FunctionSpec>& out) {
  for (const LossDef& d : Defs()) {
    FunctionSpec s;
    s.name = d.name;
    s.family = "policy_loss";
    s.verl_symbol = d.symbol;
    s.inputs = oracle::PolicyLossInputSpecs();
    if (d.keys & kClip) oracle::AddClipRatioKeys(s, "symmetric clip epsilon (dppo: divergence threshold)");
    if (d.keys & kClipC)
      s.config.push_back(oracle::ActorClipRatioCKey("truncation bound of the detached ratio (ActorConfig's)"));
    if (d.keys & kTau) {
      s.config.push_back({"tau_pos", "float", 1.0, "gate temperature where A > 0 (ActorConfig.tau_pos)"});
      s.config.push_back({"tau_neg", "float", 1.05, "gate temperature where A <= 0 (ActorConfig.tau_neg)"});
    }
    if (d.keys & kDroBeta) {
      s.config.push_back({"dro_beta", "float", oracle::None(), "ActorConfig.policy_loss.dro_beta; must be > 0"});
      s.config.back().refused = {0.0};  // verl's DRO loss refuses a beta that is not positive
    }
    s.config.push_back(oracle::ActorLossAggModeKey());
    oracle::AddGlobalBatchKeys(s);
    s.outputs = {{"pg_loss", OutputKind::kScalar}};
    s.metrics = d.metrics;
    s.grads = {"log_prob"};
    s.discrete_metrics = d.discrete;
    const oracle::FamilyLossFn fn = d.fn;
    const unsigned keys = d.keys;
    s.oracle = [fn, keys](const Case& c) {
      return oracle::PackPolicyLoss(Run(fn, keys, c, nullptr, nullptr), c.dtype);
    };
    if (d.stop_gradient)
      s.stop_gradient_objective = [fn, keys](const Case& base, const Case& at) {
        PolicyLossDetached frozen;
        Run(fn, keys, base, nullptr, &frozen);
        return Run(fn, keys, at, &frozen, nullptr).loss;
      };
    s.generate = Generator(d.keys);
    s.notes = d.notes;
    s.fixed_config = d.fixed;
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf
