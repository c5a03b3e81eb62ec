#include "third_party/tests/saxpy.h"  // workspace-relative, as real code does

#include <cuda_runtime.h>

#include "third_party/tests/smoke_math.h"

namespace smoke {
namespace {

__global__ void saxpy_kernel(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = saxpy_ref(a, x[i], y[i]);
}

}  // namespace

std::string saxpy(float a, const float* x, float* y, int n) {
  float *dx = nullptr, *dy = nullptr;
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  cudaError_t e = cudaMalloc(&dx, bytes);
  if (e == cudaSuccess) e = cudaMalloc(&dy, bytes);
  if (e == cudaSuccess) e = cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(a, dx, dy, n);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace smoke
