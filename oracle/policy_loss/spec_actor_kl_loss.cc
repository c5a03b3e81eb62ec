// Registry entry for the actor-side KL loss (family "policy_loss", name
// "actor_kl_loss"): the term the actor adds to its policy loss when use_kl_loss is set,
// as verl/workers/utils/losses.py's ppo_loss forms it:
//   kl_loss = agg_loss(core_algos.kl_penalty(log_prob, ref_log_prob, kl_loss_type),
//                      response_mask, loss_agg_mode, **global_batch_info)
//   term    = kl_loss * kl_loss_coef
// Output "kl_term" (the term, differentiated by log_prob), metric "kl_loss" (verl's).
#include <algorithm>
#include <iterator>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/kl/kl_penalty.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf {

void AddActorKlLossSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "actor_kl_loss";
  s.family = "policy_loss";
  s.verl_symbol = "verl.workers.utils.losses.ppo_loss (use_kl_loss: core_algos.kl_penalty + core_algos.agg_loss)";
  s.inputs = {{"log_prob", Role::kTokens, false, false, "", /*decides=*/true},
              {"ref_log_prob", Role::kTokens, false, false, "the reference policy's log-probs"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  std::vector<std::string> names = oracle::kKlPenaltyNames;
  names.insert(names.end(), oracle::kKlPenaltyNotImplemented.begin(), oracle::kKlPenaltyNotImplemented.end());
  s.config = {{"kl_loss_type", "str", std::string("low_var_kl"), "ActorConfig.kl_loss_type (a kl_penalty name)", names},
              {"kl_loss_coef", "float", 0.001, "ActorConfig.kl_loss_coef"},
              oracle::ActorLossAggModeKey("ActorConfig.loss_agg_mode")};
  oracle::AddGlobalBatchKeys(s);
  s.outputs = {{"kl_term", OutputKind::kScalar}};
  s.metrics = {"kl_loss"};
  s.grads = {"log_prob"};
  s.oracle = [](const Case& c) {
    const Array& lp = c.Input("log_prob");
    const Array& ref = c.Input("ref_log_prob");
    const std::string type = c.config.String("kl_loss_type");
    const double coef = c.config.Double("kl_loss_coef");
    const Array kld = oracle::kl_penalty(lp, ref, type);  // throws where verl does ("full")
    oracle::PolicyLossResult agg;
    oracle::Aggregate(kld, oracle::kl_penalty_grad(lp, ref, type), c.Input("response_mask"),
                      c.config.String("loss_agg_mode"), oracle::ReadGlobalBatchInfo(c.config), agg);
    Result r;
    r.outputs["kl_term"] = Array::Scalar(agg.loss * coef, c.dtype);
    for (double& g : agg.grad_log_prob.data) g *= coef;
    r.grads["log_prob"] = std::move(agg.grad_log_prob);
    r.metrics["kl_loss"] = agg.loss;
    r.magnitude = agg.magnitude.Scaled(coef);
    return r;
  };
  // The '+' types are straight-through (value of the base estimator, gradient of k2):
  // the gradient is that of k2's term, shifted to the '+' value at base.
  s.stop_gradient_objective = [oracle_fn = s.oracle](const Case& base, const Case& at) {
    auto term = [&oracle_fn](const Case& c) { return oracle_fn(c).outputs.at("kl_term")[0]; };
    const std::string type = at.config.String("kl_loss_type");
    if (type.empty() || type.back() != '+') return term(at);
    Case at2 = at, base2 = base;
    at2.config.Set("kl_loss_type", std::string("k2"));
    base2.config.Set("kl_loss_type", std::string("k2"));
    return term(at2) - term(base2) + term(base);
  };
  s.generate = [](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewGeneratedCase(p);
    Array ref = g.LogProbs(p.batch, p.tokens, p.dtype);
    c.inputs["ref_log_prob"] = ref;
    c.inputs["log_prob"] = g.Perturb(ref, g.Coin(0.8) ? 0.1 : 3.0);
    c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
    const auto& names = oracle::kKlPenaltyNames;
    c.config.Set("kl_loss_type", names[static_cast<size_t>(g.Int(0, static_cast<int64_t>(names.size()) - 1))]);
    c.config.Set("kl_loss_coef", g.Coin(0.5) ? 0.001 : 0.5);
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
  s.notes =
      "kl_loss_coef * agg_loss(kl_penalty(log_prob, ref_log_prob, kl_loss_type)); not a verl registry name "
      "(verl forms it inline in workers/utils/losses.ppo_loss); 'full' raises NotImplementedError.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
