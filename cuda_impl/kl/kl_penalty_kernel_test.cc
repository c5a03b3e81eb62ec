// The KL kernel's launch paths against each other: the float4 body, the scalar tail
// and the scalar fallback for unaligned pointers must give bitwise the same token
// values (they share one per-token formula), for every kind and length. Values
// against the oracle are the job of tools/gpu:cuda_test. Skips without a device.
#include "cuda_impl/kl/kl_penalty_kernel.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/device.h"

namespace verlconf::cuda {
namespace {

class KlKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = DeviceUnavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

struct Out {
  std::vector<float> kl, grad;
};

// Runs on n tokens placed `offset` floats into fresh buffers (offset % 4 != 0 makes
// every pointer unaligned and forces the scalar path).
Out RunAt(const std::vector<float>& lp, const std::vector<float>& ref, int offset, int kind, bool st, bool with_grad) {
  const size_t n = lp.size();
  std::vector<float> hl(n + offset, 0.0f), hr(n + offset, 0.0f);
  std::copy(lp.begin(), lp.end(), hl.begin() + offset);
  std::copy(ref.begin(), ref.end(), hr.begin() + offset);
  const DeviceBuffer<float> dl(hl), dr(hr);
  // Sentinels around the outputs catch writes past n.
  DeviceBuffer<float> dk(std::vector<float>(n + offset + 8, -7.0f)), dg(std::vector<float>(n + offset + 8, -7.0f));
  kl_penalty_float4(dl.get() + offset, dr.get() + offset, dk.get() + offset, with_grad ? dg.get() + offset : nullptr,
                    static_cast<int64_t>(n), kind, st, nullptr);
  Check(cudaGetLastError(), "kl_penalty launch");
  Check(cudaDeviceSynchronize(), "kl_penalty");
  const std::vector<float> k = dk.ToHost(), g = dg.ToHost();
  for (size_t i = 0; i < k.size(); ++i) {
    if (i >= static_cast<size_t>(offset) && i < n + offset) continue;
    EXPECT_EQ(k[i], -7.0f) << "kl written outside [0, n) at " << i;
    EXPECT_EQ(g[i], -7.0f) << "grad written outside [0, n) at " << i;
  }
  Out o;
  o.kl.assign(k.begin() + offset, k.begin() + offset + n);
  o.grad.assign(g.begin() + offset, g.begin() + offset + n);
  return o;
}

TEST_F(KlKernel, VectorAndScalarPathsAgreeBitwise) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> lp_dist(-12.0f, 0.0f), diff(-25.0f, 25.0f);  // beyond the +-20 clamp too
  for (const size_t n : {1, 2, 3, 4, 5, 7, 8, 13, 64, 255, 1023, 4099, 70001}) {
    std::vector<float> lp(n), ref(n);
    for (size_t i = 0; i < n; ++i) {
      lp[i] = lp_dist(gen);
      ref[i] = i % 5 == 0 ? lp[i] : lp[i] + diff(gen) * (i % 3 ? 0.05f : 1.0f);  // some d == 0 exactly
    }
    for (int kind = 0; kind < 4; ++kind) {
      for (const bool st : {false, true}) {
        const Out vec = RunAt(lp, ref, 0, kind, st, true);
        const Out scalar = RunAt(lp, ref, 1, kind, st, true);
        const Out fwd_only = RunAt(lp, ref, 0, kind, st, false);
        const std::string where =
            "kind " + std::to_string(kind) + " st " + std::to_string(st) + " n " + std::to_string(n);
        ASSERT_EQ(0, std::memcmp(vec.kl.data(), scalar.kl.data(), n * 4)) << where;
        ASSERT_EQ(0, std::memcmp(vec.grad.data(), scalar.grad.data(), n * 4)) << where;
        ASSERT_EQ(0, std::memcmp(vec.kl.data(), fwd_only.kl.data(), n * 4)) << where;
      }
    }
  }
}

// Exact formulas where no transcendental is involved: k1, abs, k2 and the "+" gradient.
TEST_F(KlKernel, ExactEstimatorsMatchHostFloatMath) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-12.0f, 0.0f);
  const size_t n = 1001;
  std::vector<float> lp(n), ref(n);
  for (size_t i = 0; i < n; ++i) lp[i] = dist(gen), ref[i] = dist(gen);
  ref[3] = lp[3];
  for (int kind = 0; kind < 3; ++kind) {
    for (const bool st : {false, true}) {
      const Out o = RunAt(lp, ref, 0, kind, st, true);
      for (size_t i = 0; i < n; ++i) {
        const float d = lp[i] - ref[i];
        const float want = kind == 0 ? d : kind == 1 ? std::fabs(d) : 0.5f * d * d;
        const float sign = d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f);
        const float want_grad = st ? d : kind == 0 ? 1.0f : kind == 1 ? sign : d;
        ASSERT_EQ(o.kl[i], want) << "kind " << kind << " at " << i;
        ASSERT_EQ(o.grad[i], want_grad) << "kind " << kind << " st " << st << " at " << i;
      }
    }
  }
}

TEST_F(KlKernel, EmptyInputIsANoOp) {
  kl_penalty_float4(nullptr, nullptr, nullptr, nullptr, 0, 3, false, nullptr);
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

}  // namespace
}  // namespace verlconf::cuda
