// Registry entry for the critic's clipped value loss (family "policy_loss"; verl has no
// registry string for it, so it is named after verl's function). Math:
// oracle/policy_loss/value_loss.cc.
#include <iterator>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/value_loss.h"

namespace verlconf {

void AddValueLossSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "compute_value_loss";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_value_loss";
  s.inputs = {{"vpreds", Role::kTokens, false, false, "the critic's current value predictions", /*decides=*/true},
              {"returns", Role::kTokens, false, false, "value targets (GAE returns)"},
              {"values", Role::kTokens, false, false, "old values (rollout-time critic)"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  s.config.push_back({"cliprange_value", "float", oracle::None(),
                      "clip range around the old values (CriticConfig.cliprange_value, 0.5 there); required"});
  s.config.push_back({"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode", oracle::AggModeChoices()});
  oracle::AddGlobalBatchKeys(s);
  s.outputs = {{"vf_loss", OutputKind::kScalar}};
  s.metrics = {"vf_clipfrac"};
  s.discrete_metrics = {"vf_clipfrac"};
  s.grads = {"vpreds"};
  s.oracle = [](const Case& c) {
    oracle::ValueLossConfig cfg;
    cfg.cliprange_value = c.config.Double("cliprange_value");
    cfg.loss_agg_mode = c.config.String("loss_agg_mode");
    cfg.global = oracle::ReadGlobalBatchInfo(c.config);
    oracle::ValueLossResult v = oracle::compute_value_loss(c.Input("vpreds"), c.Input("returns"), c.Input("values"),
                                                           c.Input("response_mask"), cfg);
    Result r;
    r.outputs["vf_loss"] = Array::Scalar(v.loss, c.dtype);
    r.grads["vpreds"] = std::move(v.grad_vpreds);
    r.metrics = std::move(v.metrics);
    r.boundary = std::move(v.boundary);
    r.magnitude = v.magnitude;
    return r;
  };
  s.generate = [](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewGeneratedCase(p);
    Array values = g.Normal(p.batch, p.tokens, 0.0, 1.0, p.dtype);
    c.inputs["values"] = values;
    c.inputs["vpreds"] = g.Perturb(values, g.Coin(0.5) ? 0.2 : 1.0);
    c.inputs["returns"] = g.Normal(p.batch, p.tokens, 0.0, 1.0, p.dtype);
    c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
    c.config.Set("cliprange_value", g.Coin(0.5) ? 0.5 : 0.2);
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
  s.notes =
      "0.5 * agg_loss(max((v - R)^2, (clip(v, V - c, V + c) - R)^2)); the clip is max(min(v, V + c), V - c) "
      "(verl_F.clip_by_value), so torch's tie rules apply at V +- c; vf_clipfrac counts l2 > l1 strictly. "
      "Not a POLICY_LOSS_REGISTRY entry: named after verl's function.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
