// Structural checks of a case against its spec, before any implementation runs:
// missing or unexpected inputs, shapes inconsistent with B x T, wrong dtypes,
// non-finite inputs, masks outside {0, 1}, unknown config keys. Each failure is a
// BadInput naming file, case and field.
#pragma once

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf {

// The verl release whose semantics the oracle (and so the CUDA implementation) mirrors.
inline constexpr const char* kOracleVerlVersion = "0.9.1";

void ValidateCase(const FunctionSpec& spec, const Case& c);

// Everything ValidateCase checks except spec.check_config: the config values this verl
// would refuse. `conform drift` and `conform list` read golden sets of other verl
// versions, whose accepted values may differ; the structure (names, shapes, dtypes,
// finite values) is what the oracle needs before it may touch a case.
void ValidateStructure(const FunctionSpec& spec, const Case& c);

// The case check of a golden of `verl_version`: ValidateCase for the release the oracle
// mirrors, ValidateStructure for any other. A config another release accepts and this
// one refuses is a result to judge there (the oracle raises, verl returned a value:
// FAILED, a version difference), never bad input.
void ValidateGolden(const FunctionSpec& spec, const Case& c, const std::string& verl_version);

}  // namespace verlconf
