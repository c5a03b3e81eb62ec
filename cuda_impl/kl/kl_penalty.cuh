// kl_penalty on CCCL: the estimators of oracle/kl/kl_penalty.h in float32, one row map
// producing the value and d/d logprob of every token, as a template over the Thrust
// execution policy (cuda_impl/core/system.cuh).
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// oracle::KlEstimator::Kind order.
enum class KlKind : int { kK1 = 0, kAbs = 1, kK2 = 2, kK3 = 3 };

constexpr float kKlLogRatioClamp = 20.0f;
constexpr float kKlK3ValueClamp = 10.0f;

// The per-token formula, shared by every path (this row map and the float4 kernel of
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

struct KlAt {
  const float* logprob;
  const float* ref_logprob;
  float* kl;
  float* grad;
  int64_t cols;
  KlKind kind;
  bool straight_through;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    float v, g;
    KlToken(kind, straight_through, logprob[k], ref_logprob[k], v, g);
    kl[k] = v;
    grad[k] = g;
  }
};

// kl[k], grad[k] over rows x cols tokens: 8 bytes read and 8 written per token, one pass.
template <class Policy>
void kl_penalty(Policy&& policy, const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t rows,
                int64_t cols, KlKind kind, bool straight_through) {
  RowMap(policy, rows, cols, KlAt{logprob, ref_logprob, kl, grad, cols, kind, straight_through},
         Footprint().Reads<float>(rows * cols, 2).Writes<float>(rows * cols, 2));
}

}  // namespace verlconf::cuda
