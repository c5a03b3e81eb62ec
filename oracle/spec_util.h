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

}  // namespace verlconf::oracle
