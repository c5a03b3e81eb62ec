// The torch_functional family's registry entries, added in registry order
// (oracle/registry.cc calls these).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

void AddTorchFunctionalSpecs(std::vector<FunctionSpec>& out);

namespace oracle {
// masked_mean's cfg.axis: nullopt for the whole-array mean (absent), else -1 or 1 (per
// row); any other axis is BadInput (not a case the catalogue writes).
std::optional<int64_t> ReadMaskedMeanAxis(const Case& c);
}  // namespace oracle

}  // namespace verlconf
