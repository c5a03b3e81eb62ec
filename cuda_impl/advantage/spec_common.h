// Shared by the advantage family's CUDA entries (spec_*.cu): the group index as codes,
// the family's table of entries (compute_advantage_for_multi_trajectories delegates to
// them), and one registration for both CUDA slots and that table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_impl/core/system.h"
#include "oracle/core/tensor.h"

namespace verlconf::cuda {

// verl's uids as the case stores them: one int64 code per sequence.
std::vector<int64_t> IndexCodes(const Array& index);

// Registers run for ("advantage", name) in the cuda and cuda-host slots and in the
// family's table. Returns true (for a static initialiser).
bool RegisterAdvantageEntry(const std::string& name, SystemRunFn run);

// The family's entry for `name`; null when it has none.
const SystemRunFn* FindAdvantageEntry(const std::string& name);

}  // namespace verlconf::cuda
