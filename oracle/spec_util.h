// Small helpers the per-family spec files share.
#pragma once

#include <string>

#include "oracle/aggregation.h"
#include "oracle/case.h"
#include "oracle/registry.h"

namespace verlconf::oracle {

// verl's global_batch_info keys as config entries, and reading them back.
void AddGlobalBatchKeys(FunctionSpec& s);
GlobalBatchInfo ReadGlobalBatchInfo(const Config& c);

inline ConfigValue None() { return std::monostate{}; }

// The start of every registry generator: an empty case named "generated" with p's
// dtype and seed (the registry fills in family and function).
Case NewGeneratedCase(const GenParams& p);

}  // namespace verlconf::oracle
