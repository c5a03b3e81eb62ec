// Where a CUDA entry runs, and how a family registers one entry for both places: the
// same function fills the registry's `cuda` slot (on the device) and its `cuda-host`
// slot (the identical code through Thrust's host system; see system.cuh).
#pragma once

#include <functional>
#include <string>

#include "oracle/core/case.h"

namespace verlconf::cuda {

enum class System { kDevice, kHost };

using SystemRunFn = std::function<Result(System, const Case&)>;

// Registers run for (family, name) in the cuda and cuda-host slots; call from a static
// initialiser of an alwayslink library. Returns true.
bool RegisterCudaEntry(const std::string& family, const std::string& name, SystemRunFn run);

}  // namespace verlconf::cuda
