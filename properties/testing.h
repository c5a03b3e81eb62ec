// Shared helpers for the property tests: RapidCheck generators over the registry's
// input generators, and running the oracle by registry name.
#pragma once

#include <rapidcheck.h>

#include <string>

#include "oracle/core/case.h"
#include "oracle/core/registry.h"

namespace verlconf::testing {

// Batch and length ranges small enough for thousands of runs, large enough to hold
// several groups, padding and interior mask spans.
rc::Gen<GenParams> ArbitraryParams(DType dtype = DType::kFloat64, int64_t max_batch = 24, int64_t max_tokens = 40);

// A case for `name` from its registry generator.
Case Generate(const std::string& name, const GenParams& p);

// Runs the oracle of `c.function`.
Result RunOracle(const Case& c);

// |a - b| <= atol + rtol * |b| for every element; the first offending index otherwise.
bool AllClose(const Array& a, const Array& b, double rtol, double atol, std::string* why = nullptr);

// Appends `extra` all-zero columns (padding tokens) to every token-shaped input.
Case PadTokens(const Case& c, int64_t extra);

}  // namespace verlconf::testing
