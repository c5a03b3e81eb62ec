// The aggregation family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddAggregationSpecs(std::vector<FunctionSpec>& out);

}  // namespace verlconf
