// Structural checks of a case against its spec, before any implementation runs:
// missing or unexpected inputs, shapes inconsistent with B x T, wrong dtypes,
// non-finite inputs, masks outside {0, 1}, unknown config keys. Each failure is a
// BadInput naming file, case and field.
#pragma once

#include "oracle/case.h"
#include "oracle/registry.h"

namespace verlconf {

void ValidateCase(const FunctionSpec& spec, const Case& c);

}  // namespace verlconf
