// Whether this process can run CUDA code, and the host<->device copies every family's
// registry entry makes: cases hold float64 host arrays, kernels take float32 device
// buffers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oracle/core/tensor.h"

namespace verlconf::cuda {

// "" when a CUDA device is usable; otherwise why not (shown as SKIPPED reasons).
std::string DeviceUnavailableReason();

std::vector<float> ToFloat(const Array& a);
Array FromFloat(const std::vector<float>& v, const std::vector<int64_t>& shape, DType d);

}  // namespace verlconf::cuda
