// Registry entries for the policy losses (family "policy_loss").
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf {
namespace {

Result RunVanilla(const Case& c) {
  return oracle::PackPolicyLoss(
      oracle::policy_loss_vanilla(oracle::ReadPolicyLossInputs(c), oracle::ReadVanillaConfig(c.config)), c.dtype);
}

Case GenerateVanilla(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewPolicyLossCase(p, g);
  oracle::SetRandomVanillaConfig(g, c.config);
  return c;
}

}  // namespace

void AddPolicyLossSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "vanilla";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss_vanilla";
  s.inputs = oracle::PolicyLossInputSpecs();
  oracle::AddVanillaKeys(s);
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.metrics = {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"};
  s.grads = {"log_prob"};
  s.discrete_metrics = {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"};
  s.oracle = RunVanilla;
  s.generate = GenerateVanilla;
  s.notes = "log-ratio clamped to [-20, 20] before exp; metrics are masked means over response_mask.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
