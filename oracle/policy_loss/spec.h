// The policy_loss family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddPolicyLossSpecs(std::vector<FunctionSpec>& out);         // vanilla
void AddPolicyLossVariantSpecs(std::vector<FunctionSpec>& out);  // gspo, sapo, gpg, cispo, dro, geo_mean, dppo_*
void AddPolicyLossCovSpecs(std::vector<FunctionSpec>& out);      // clip_cov, kl_cov
void AddValueLossSpecs(std::vector<FunctionSpec>& out);          // compute_value_loss (the critic's)
void AddPolicyLossLegacySpecs(std::vector<FunctionSpec>& out);   // compute_policy_loss_reinforce, compute_policy_loss
void AddActorKlLossSpecs(std::vector<FunctionSpec>& out);        // actor_kl_loss
void AddEntropyLossSpecs(std::vector<FunctionSpec>& out);        // compute_entropy_loss

}  // namespace verlconf
