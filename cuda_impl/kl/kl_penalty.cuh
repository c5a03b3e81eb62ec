// kl_penalty on CCCL: the estimators of oracle/kl/kl_penalty.h in float32, one fused
// transform producing the value and d/d logprob of every token, as a template over the
// Thrust execution policy (cuda_impl/core/system.cuh).
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>

namespace verlconf::cuda {

// oracle::KlEstimator::Kind order.
enum class KlKind : int { kK1 = 0, kAbs = 1, kK2 = 2, kK3 = 3 };

constexpr float kKlLogRatioClamp = 20.0f;
constexpr float kKlK3ValueClamp = 10.0f;

// The per-token formula, shared by every path (this transform and the float4 kernel of
// kl_penalty_kernel.cu), so they agree bitwise on one system.
__host__ __device__ inline void KlToken(KlKind kind, bool straight_through, float lp, float ref, float& value,
                                        float& grad) {
  const float d = lp - ref;
  float g;
  if (kind == KlKind::kK1) {
    value = d;
    g = 1.0f;
  } else if (kind == KlKind::kAbs) {
    value = fabsf(d);
    g = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
  } else if (kind == KlKind::kK2) {
    value = 0.5f * d * d;
    g = d;
  } else {
    const float raw = ref - lp;
    const float x = fminf(fmaxf(raw, -kKlLogRatioClamp), kKlLogRatioClamp);
    const float ratio = expf(x);
    const float unclamped = ratio - x - 1.0f;
    value = fminf(fmaxf(unclamped, -kKlK3ValueClamp), kKlK3ValueClamp);
    // torch.clamp passes the gradient strictly inside its bounds only.
    const bool passes = raw > -kKlLogRatioClamp && raw < kKlLogRatioClamp && unclamped > -kKlK3ValueClamp &&
                        unclamped < kKlK3ValueClamp;
    g = passes ? 1.0f - ratio : 0.0f;
  }
  // The "+" names: the estimator's value, k2's gradient (straight-through).
  grad = straight_through ? d : g;
}

struct KlTokenFn {
  KlKind kind;
  bool straight_through;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& in) const {
    float v, g;
    KlToken(kind, straight_through, thrust::get<0>(in), thrust::get<1>(in), v, g);
    return thrust::make_tuple(v, g);
  }
};

// kl[k], grad[k] for k < n: 8 bytes read and 8 written per token, one pass.
template <class Policy>
void kl_penalty(Policy&& policy, const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t n,
                KlKind kind, bool straight_through) {
  auto in = thrust::make_zip_iterator(thrust::make_tuple(logprob, ref_logprob));
  auto out = thrust::make_zip_iterator(thrust::make_tuple(kl, grad));
  thrust::transform(policy, in, in + n, out, KlTokenFn{kind, straight_through});
}

}  // namespace verlconf::cuda
