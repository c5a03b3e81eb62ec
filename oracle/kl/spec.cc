// Registry entries for kl_penalty, one per name verl accepts (family "kl").
#include "oracle/kl/spec.h"

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/kl/kl_penalty.h"

namespace verlconf {
namespace {

Result RunKl(const Case& c) {
  const Array& lp = c.Input("logprob");
  const Array& ref = c.Input("ref_logprob");
  Result r;
  r.outputs["kl"] = oracle::kl_penalty(lp, ref, c.function);
  r.grads["logprob"] = oracle::kl_penalty_grad(lp, ref, c.function);
  return r;
}

// kl_penalty is element-wise, so its VJP is the projection times the element-wise
// derivative, which for the straight-through names ("k3+") is k2's (verl's backward
// surrogate), exactly as in kl_penalty_grad.
std::map<std::string, Array> KlVjp(const Case& c, const Result&) {
  Array v = oracle::kl_penalty_grad(c.Input("logprob"), c.Input("ref_logprob"), c.function);
  const Array& p = c.projections.at("kl");
  for (int64_t k = 0; k < v.size(); ++k) v[k] *= p[k];
  return {{"kl/logprob", std::move(v)}};
}

Case GenerateKl(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  Array ref = g.LogProbs(p.batch, p.tokens, p.dtype);
  c.inputs["ref_logprob"] = ref;
  c.inputs["logprob"] = g.Perturb(ref, g.Coin(0.8) ? 0.1 : 8.0);
  return c;
}

FunctionSpec KlSpec(const std::string& name) {
  FunctionSpec s;
  s.name = name;
  s.family = "kl";
  s.verl_symbol = "verl.trainer.ppo.core_algos.kl_penalty";
  s.inputs = {{"logprob", Role::kTokens, false, false, "", /*decides=*/true}, {"ref_logprob", Role::kTokens}};
  s.outputs = {{"kl"}};
  s.grads = {"logprob"};
  s.vjp_inputs = {"logprob"};
  s.vjp = KlVjp;
  // verl's "<base>+" names are straight-through: the value of <base> with the gradient
  // of k2 (kl_penalty_forward(base) + k2 - k2.detach()).
  if (name.size() > 1 && name.back() == '+')
    s.straight_through = FunctionSpec::StraightThrough{name.substr(0, name.size() - 1), "k2"};
  return s;
}

}  // namespace

void AddKlSpecs(std::vector<FunctionSpec>& out) {
  // Every spelling verl's kl_penalty accepts, aliases included: each is a separate verl
  // string a user can put in a config, so each is checked on its own.
  for (const std::string& name : oracle::kKlPenaltyNames) {
    FunctionSpec s = KlSpec(name);
    s.oracle = RunKl;
    s.generate = GenerateKl;
    s.notes =
        s.straight_through ? "straight-through: forward value, gradient of " + s.straight_through->gradient_of : "";
    out.push_back(std::move(s));
  }
  // verl accepts the name "full" only to raise NotImplementedError (it would need
  // full-vocabulary logits). The oracle mirrors exactly that, so the golden case that
  // records verl's error is checked like any other; no value is ever produced.
  for (const std::string& name : oracle::kKlPenaltyNotImplemented) {
    FunctionSpec full = KlSpec(name);
    full.oracle = RunKl;
    full.notes = "verl raises NotImplementedError; so does the oracle";
    out.push_back(std::move(full));
  }
}

}  // namespace verlconf
