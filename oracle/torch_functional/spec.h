// The torch_functional family's registry entries, added in registry order
// (oracle/core/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddTorchFunctionalSpecs(std::vector<FunctionSpec>& out);

}  // namespace verlconf
