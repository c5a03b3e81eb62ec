// Mirrors verl 0.9.1 core_algos.kl_penalty (see oracle/kl.cc for the formulas).
#include "cuda_impl/kl.h"

namespace verlconf::cuda {
namespace {

constexpr float kLogRatioClamp = 20.0f;
constexpr float kK3ValueClamp = 10.0f;

__device__ __forceinline__ float Clamp(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }

// Grid-stride, one element per iteration: purely memory bound (two reads, two writes).
__global__ void KlKernel(const float* __restrict__ lp, const float* __restrict__ ref, float* __restrict__ kl,
                         float* __restrict__ grad, int64_t n, int kind, bool straight_through) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float d = lp[k] - ref[k];
    float value, g;
    switch (kind) {
      case 0: value = d; g = 1.0f; break;
      case 1: value = fabsf(d); g = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f); break;
      case 2: value = 0.5f * d * d; g = d; break;
      default: {
        const float raw = ref[k] - lp[k];
        const float x = Clamp(raw, -kLogRatioClamp, kLogRatioClamp);
        const float ratio = expf(x);
        const float unclamped = ratio - x - 1.0f;
        value = Clamp(unclamped, -kK3ValueClamp, kK3ValueClamp);
        // torch.clamp passes the gradient strictly inside its bounds only.
        const bool passes = raw > -kLogRatioClamp && raw < kLogRatioClamp && unclamped > -kK3ValueClamp &&
                            unclamped < kK3ValueClamp;
        g = passes ? 1.0f - ratio : 0.0f;
      }
    }
    kl[k] = value;
    if (grad) grad[k] = straight_through ? d : g;
  }
}

}  // namespace

void kl_penalty(const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t n, int kind,
                bool straight_through, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks64 = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(blocks64 < 65535 * 8 ? blocks64 : 65535 * 8);
  KlKernel<<<blocks, kThreads, 0, stream>>>(logprob, ref_logprob, kl, grad, n, kind, straight_through);
}

}  // namespace verlconf::cuda
