// Device allocations made inside a measured window. cudaMemGetInfo before and after a
// call cannot see a temporary that the call allocates and frees again, so cuda_bench is
// linked with -Wl,--wrap for the runtime's allocators (BUILD.bazel) and every
// allocation inside the window is recorded here.
#pragma once

#include <cstddef>

namespace verlconf::bench {

struct AllocStats {
  size_t calls = 0;  // allocations made inside the window
  size_t peak = 0;   // the most bytes they held at once
};

void BeginAllocWatch();
AllocStats EndAllocWatch();

}  // namespace verlconf::bench
