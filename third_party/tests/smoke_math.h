// Plain C++ header (no CUDA annotations) used from device code: proves that
// cuda_library passes deps' headers to nvcc and that constexpr functions are
// callable on the device (--expt-relaxed-constexpr), as oracle/ headers will be.
#pragma once

namespace smoke {

constexpr float saxpy_ref(float a, float x, float y) { return a * x + y; }

}  // namespace smoke
