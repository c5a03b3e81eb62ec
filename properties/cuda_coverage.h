// Which registry entries have a CUDA entry: all of them but a listed few, each with its
// reason. The one list of those exceptions; the cuda-host test (properties) and the
// device build's test (tools/gpu) both hold their slots to it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf::testing {

// "family/name" -> why cuda_impl has no entry for it.
const std::map<std::string, std::string>& CudaExceptions();

// What is wrong with slot `impl` (kCuda or kCudaHost) against the registry: an entry
// outside the exceptions with the slot empty, an exception with the slot filled (stale:
// drop it from the list), an exception that names no entry. Empty when the slot's
// functions are exactly the registry's less the exceptions.
std::vector<std::string> CudaCoverageProblems(Impl impl);

}  // namespace verlconf::testing
