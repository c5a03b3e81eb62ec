// The kl family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddKlSpecs(std::vector<FunctionSpec>& out);

}  // namespace verlconf
