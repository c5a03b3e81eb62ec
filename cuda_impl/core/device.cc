#include "cuda_impl/core/device.h"

#include <cuda_runtime.h>

namespace verlconf::cuda {

std::string DeviceUnavailableReason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return "";
}

std::vector<float> ToFloat(const Array& a) { return std::vector<float>(a.data.begin(), a.data.end()); }

Array FromFloat(const std::vector<float>& v, const std::vector<int64_t>& shape, DType d) {
  Array a(shape, d);
  for (size_t k = 0; k < v.size(); ++k) a.data[k] = static_cast<double>(v[k]);
  return a;
}

}  // namespace verlconf::cuda
