// The advantage family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddAdvantageSpecs(std::vector<FunctionSpec>& out);           // grpo, grpo_vectorized (spec_grpo.cc)
void AddAdvantageEstimatorSpecs(std::vector<FunctionSpec>& out);  // the rest of ADV_ESTIMATOR_REGISTRY

}  // namespace verlconf
