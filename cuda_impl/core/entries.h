// The CUDA implementation as the registry sees it: entries keyed by the same verl
// names as the oracle, taking and returning the same Case / Result types.
#pragma once

#include <string>
#include <vector>

#include "oracle/core/registry.h"

namespace verlconf::cuda {

// "" when a CUDA device is usable; otherwise why not (shown as SKIPPED reasons).
std::string DeviceUnavailableReason();

// The entry for a registry name, or null when cuda_impl does not provide it.
const RunFn* FindEntry(const std::string& name);
std::vector<std::string> EntryNames();

}  // namespace verlconf::cuda
