// Structural checks of a case against its spec, before any implementation runs:
// missing or unexpected inputs, shapes inconsistent with B x T, wrong dtypes,
// non-finite inputs, masks outside {0, 1}, unknown config keys. Each failure is a
// BadInput naming file, case and field.
#pragma once

#include "oracle/core/case.h"
#include "oracle/core/registry.h"

namespace verlconf {

void ValidateCase(const FunctionSpec& spec, const Case& c);

// Everything ValidateCase checks except spec.check_config: the config values this verl
// would refuse. `conform drift` and `conform list` read golden sets of other verl
// versions, whose accepted values may differ; the structure (names, shapes, dtypes,
// finite values) is what the oracle needs before it may touch a case.
void ValidateStructure(const FunctionSpec& spec, const Case& c);

}  // namespace verlconf
