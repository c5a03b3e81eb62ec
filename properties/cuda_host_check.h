// What the cuda-host tests share: cases from a spec's generator at a shape, and the
// judgement of the cuda-host slot against the oracle on one case.
#pragma once

#include <cstdint>
#include <string>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf::testing {

// A float32 batch of `rows` x `cols` from the spec's generator; with `mask_rows`, every
// third row of each token mask fully masked.
Case RandomCase(const FunctionSpec& spec, uint64_t seed, int64_t rows, int64_t cols, bool mask_rows);

// The oracle's result as the golden; an exception where the oracle raises must be
// raised by the cuda-host slot too, with verl's type. "" when it conforms, else why not.
std::string CheckCudaHostAgainstOracle(const FunctionSpec& spec, Case golden);

}  // namespace verlconf::testing
