// What every family's registry entries share: verl's None as a config default, and the
// empty case each generator starts from.
#pragma once

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf::oracle {

inline ConfigValue None() { return std::monostate{}; }

// The start of every registry generator: an empty case named "generated" with p's
// dtype and seed (the registry fills in family and function).
Case NewGeneratedCase(const GenParams& p);

}  // namespace verlconf::oracle
