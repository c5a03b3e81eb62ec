// A hand-written float4 kernel for kl_penalty, kept beside the CCCL transform of
// kl_penalty.cuh (its reference, the same per-token formula) only while a GPU
// benchmark shows it faster; tools/bench times both.
#include "cuda_impl/kl/kl_penalty_kernel.h"

#include <cstdint>

#include "cuda_impl/kl/kl_penalty.cuh"

namespace verlconf::cuda {
namespace {

// The shared formula with the kind fixed at compile time, so each kernel instantiation
// is branch-free per token.
template <int Kind, bool StraightThrough>
__device__ __forceinline__ void KlTokenFixed(float lp, float ref, float& value, float& grad) {
  KlToken(static_cast<KlKind>(Kind), StraightThrough, lp, ref, value, grad);
}

// Memory bound: 8 bytes read and 4 or 8 written per token, almost no math. 16-byte
// accesses cut the number of memory instructions 4x, which is what it takes to get
// near copy bandwidth on H100/H200-class parts; the scalar path is kept for pointers
// that are not 16-byte aligned (e.g. views at an odd offset) and for the tail.
// Kind and StraightThrough are template parameters so each instantiation is
// branch-free per token; `grad == nullptr` is uniform across the grid.
template <int Kind, bool StraightThrough, bool Vectorized>
__global__ void __launch_bounds__(256) KlKernel(const float* __restrict__ lp, const float* __restrict__ ref,
                                                float* __restrict__ kl, float* __restrict__ grad, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if constexpr (Vectorized) {
    const int64_t nv = n / 4;
    const float4* lp4 = reinterpret_cast<const float4*>(lp);
    const float4* ref4 = reinterpret_cast<const float4*>(ref);
    float4* kl4 = reinterpret_cast<float4*>(kl);
    float4* grad4 = reinterpret_cast<float4*>(grad);
    for (int64_t k = tid; k < nv; k += stride) {
      const float4 a = lp4[k], b = ref4[k];
      float4 v, g;
      KlTokenFixed<Kind, StraightThrough>(a.x, b.x, v.x, g.x);
      KlTokenFixed<Kind, StraightThrough>(a.y, b.y, v.y, g.y);
      KlTokenFixed<Kind, StraightThrough>(a.z, b.z, v.z, g.z);
      KlTokenFixed<Kind, StraightThrough>(a.w, b.w, v.w, g.w);
      kl4[k] = v;
      if (grad) grad4[k] = g;
    }
    done = nv * 4;
  }
  for (int64_t k = done + tid; k < n; k += stride) {
    float v, g;
    KlTokenFixed<Kind, StraightThrough>(lp[k], ref[k], v, g);
    kl[k] = v;
    if (grad) grad[k] = g;
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Enough resident threads to cover memory latency on every SM, and no more: a
// grid-stride loop over a larger grid only adds block scheduling overhead. Asked of
// the current device at each launch because the caller may switch devices; the
// attribute query is a host-side table lookup, far cheaper than the launch itself.
int GridSize(int64_t work_items, int threads) {
  constexpr int kBlocksPerSm = 8;  // 8 x 256 = 2048 threads, the per-SM maximum on sm_80/sm_90
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) {
    sms = 132;  // H200's count; a device this broken fails the launch itself anyway
  }
  const int64_t needed = (work_items + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(sms) * kBlocksPerSm;
  return static_cast<int>(needed < cap ? (needed > 0 ? needed : 1) : cap);
}

template <int Kind, bool StraightThrough>
void Launch(const float* lp, const float* ref, float* kl, float* grad, int64_t n, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const bool vec = Aligned16(lp) && Aligned16(ref) && Aligned16(kl) && (grad == nullptr || Aligned16(grad));
  if (vec) {
    KlKernel<Kind, StraightThrough, true>
        <<<GridSize(n / 4 > 0 ? n / 4 : n, kThreads), kThreads, 0, stream>>>(lp, ref, kl, grad, n);
  } else {
    KlKernel<Kind, StraightThrough, false><<<GridSize(n, kThreads), kThreads, 0, stream>>>(lp, ref, kl, grad, n);
  }
}

template <int Kind>
void LaunchKind(const float* lp, const float* ref, float* kl, float* grad, int64_t n, bool st, cudaStream_t s) {
  if (st)
    Launch<Kind, true>(lp, ref, kl, grad, n, s);
  else
    Launch<Kind, false>(lp, ref, kl, grad, n, s);
}

}  // namespace

void kl_penalty_float4(const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t n, int kind,
                       bool straight_through, cudaStream_t stream) {
  if (n <= 0) return;
  switch (kind) {
    case 0: LaunchKind<0>(logprob, ref_logprob, kl, grad, n, straight_through, stream); break;
    case 1: LaunchKind<1>(logprob, ref_logprob, kl, grad, n, straight_through, stream); break;
    case 2: LaunchKind<2>(logprob, ref_logprob, kl, grad, n, straight_through, stream); break;
    // As before: any other kind is k3 (oracle::KlEstimator::Kind has exactly these four).
    default: LaunchKind<3>(logprob, ref_logprob, kl, grad, n, straight_through, stream); break;
  }
}

}  // namespace verlconf::cuda
