#include "tools/bench/bench_kernels.h"

namespace verlconf::bench {
namespace {

constexpr int kThreads = 256;

__global__ void CopyKernel(const float* __restrict__ src, float* __restrict__ dst, int64_t n, bool vec) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vec) {
    const int64_t nv = n / 4;
    for (int64_t k = tid; k < nv; k += stride)
      reinterpret_cast<float4*>(dst)[k] = reinterpret_cast<const float4*>(src)[k];
    done = nv * 4;
  }
  for (int64_t k = done + tid; k < n; k += stride) dst[k] = src[k];
}

// splitmix64: cheap, well mixed, and stateless per element.
__device__ __forceinline__ uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ float Unit(uint64_t bits) { return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f); }

__global__ void FillKernel(float* lp, float* ref, int64_t n, uint64_t seed, float spread) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += stride) {
    const uint64_t h = Mix(seed ^ Mix(static_cast<uint64_t>(k)));
    const float a = -12.0f * Unit(h);
    const float b = spread * (2.0f * Unit(Mix(h)) - 1.0f);
    lp[k] = a;
    ref[k] = a + b;
  }
}

int Blocks(int64_t items) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
    sms = 132;
  const int64_t needed = (items + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sms) * 8;
  return static_cast<int>(needed < 1 ? 1 : (needed < cap ? needed : cap));
}

}  // namespace

void CopyFloats(const float* src, float* dst, int64_t n, int blocks, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec = reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const int grid = blocks > 0 ? blocks : Blocks(vec ? (n + 3) / 4 : n);
  CopyKernel<<<grid, kThreads, 0, stream>>>(src, dst, n, vec);
}

void FillLogProbs(float* logprob, float* ref_logprob, int64_t n, uint64_t seed, float spread, cudaStream_t stream) {
  if (n <= 0) return;
  FillKernel<<<Blocks(n), kThreads, 0, stream>>>(logprob, ref_logprob, n, seed, spread);
}

}  // namespace verlconf::bench
