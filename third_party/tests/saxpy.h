// Host entry point of the tiny kernel that proves cuda_library works.
#pragma once

#include <string>

namespace smoke {

// y[i] = a * x[i] + y[i] on the device; returns "" or a CUDA error message.
std::string saxpy(float a, const float* x, float* y, int n);

}  // namespace smoke
