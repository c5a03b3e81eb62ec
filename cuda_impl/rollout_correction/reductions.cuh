// The reductions rollout correction's statistics are made of, on CCCL in float32
// (oracle/rollout_correction/reductions.cc states them in float64): torch's NaN rules for
// max / min / clamp, verl's sqrt(E[x^2] - E[x]^2) evaluated without float32's
// cancellation, and the row pass every function gathers its statistics in.
//
// The row pass: one RowReduce over the tokens (core/rows.cuh) whose term is a token's
// contribution to each stage that runs (IS weights, rejection sampling, the off-policy
// diagnostics), each stage writing its token outputs as it goes, and whose per-row
// partials come back to the host, where the batch scalars are combined in row order in
// double. A stage reads the token inputs once, through the pass; only what truly needs
// a batch statistic first (batch normalisation) or a row's total first (sequence-level
// weights and rejections) takes a second, lighter pass.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// rollout_corr_helper.SAFETY_BOUND: log-ratios and their row sums are clamped to it
// before exp.
constexpr float kRolloutSafetyBoundF = 20.0f;

__host__ __device__ inline float PosInf() { return std::numeric_limits<float>::infinity(); }

// torch.max / torch.min of a tensor: a NaN anywhere wins.
__host__ __device__ inline float NanMax(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}
__host__ __device__ inline float NanMin(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return b < a ? b : a;
}

// torch.clamp(x, lo, hi) / torch.clamp(x, max=hi) with scalar bounds: NaN stays NaN, and
// lo > hi gives hi.
__host__ __device__ inline float TorchClamp(float x, float lo, float hi) {
  if (x != x) return x;
  const float y = x < lo ? lo : x;
  return hi < y ? hi : y;
}
__host__ __device__ inline float TorchClampMax(float x, float hi) {
  if (x != x) return x;
  return hi < x ? hi : x;
}

// exp(clamp(x, +-20)): the ratio of a log-ratio (or of a row's log-ratio sum).
__host__ __device__ inline float SafeExp(float x) {
  return expf(TorchClamp(x, -kRolloutSafetyBoundF, kRolloutSafetyBoundF));
}

// masked_mean from its two sums, in float32 (the 1e-8 vanishes once the mask sum is >= 1).
__host__ __device__ inline float MeanOf(float masked_sum, float mask_sum) {
  return masked_sum / (mask_sum + kMaskedMeanEps);
}
// The same from sums combined on the host in double: rounded to float32 first, as verl's
// float32 sums are, so a row of values exactly on a threshold stays on it.
inline float MeanOfSums(double masked_sum, double mask_sum) {
  return MeanOf(static_cast<float>(masked_sum), static_cast<float>(mask_sum));
}

// masked_mean's offset where a statistic is evaluated in double (the oracle's value).
constexpr double kMaskedMeanEpsD = 1e-8;

// `bool_tensor.float().mean()`: a count over n, rounded to float32 as torch reduces it.
inline double Float32Fraction(double count, double n) { return static_cast<double>(static_cast<float>(count / n)); }

// ---- a masked spread in one pass

// The mask sums of two partials being combined, and b / (a + b) (0 for an empty total).
struct MaskWeights {
  float a, b, r;
};
__host__ __device__ inline MaskWeights WeightsOf(float a, float b) {
  const float s = a + b;
  return {a, b, s != 0.0f ? b / s : 0.0f};
}

// The values of a partial about their own weighted mean: the mean and the weighted sum
// of squares about it (Chan et al.'s pairwise update; a token is a partial of one value
// and q = 0), the weights being the partial's mask sum. One pass gives the sum of
// squares about the batch mean as accurately as a second pass over the tokens would:
// no E[x^2] - E[x]^2 cancellation when the values hardly spread.
struct Spread {
  float mean, q;
};
__host__ __device__ inline Spread MergeSpread(const Spread& x, const Spread& y, const MaskWeights& w) {
  if (w.b == 0.0f) return x;  // y holds no valid token (a masked one's value may be NaN)
  if (w.a == 0.0f) return y;
  const float d = y.mean - x.mean;
  return {x.mean + d * w.r, x.q + y.q + d * (d * w.r) * w.a};
}

// The rows' Spreads combined on the host in double, in row order.
struct SpreadTotal {
  double w = 0.0, mean = 0.0, q = 0.0;
  void Add(float row_mask, const Spread& s) {
    if (row_mask == 0.0f) return;
    const double wb = row_mask;
    if (w == 0.0) {
      w = wb;
      mean = s.mean;
      q = s.q;
      return;
    }
    const double total = w + wb, r = total != 0.0 ? wb / total : 0.0, d = static_cast<double>(s.mean) - mean;
    mean += d * r;
    q += static_cast<double>(s.q) + d * d * r * w;
    w = total;
  }
  // sum m (x - mu)^2 and sum m x^2.
  double Centered(double mu) const { return q + w * (mean - mu) * (mean - mu); }
  double Squares() const { return Centered(0.0); }
};

// verl's sqrt(clamp(E[x^2] - E[x]^2, min=0)) with both means masked_mean's (denominator
// M + 1e-8), from the sum of squares about mu = E[x]: the two forms are equal,
// E[x^2] - mu^2 = sum m (x - mu)^2 / (M + e) + mu^2 e / (M + e), but the first cancels
// when the values hardly spread and the second does not. `sum` is the masked sum of x.
inline double MaskedStdOf(double sum, double mask_sum, const SpreadTotal& s) {
  const double denom = mask_sum + kMaskedMeanEpsD;
  const double mean = sum / denom;
  const double var = s.Centered(mean) / denom + mean * mean * (kMaskedMeanEpsD / denom);
  if (var != var) return var;
  return std::sqrt(var < 0.0 ? 0.0 : var);
}

// ---- the row pass

// What a token's stages read besides the mask: the log-ratio and, in the pipeline, the
// two log-probs it is the difference of.
struct TokenIn {
  float lr, old_lp, rollout_lp;
};

// Sources of TokenIn, with the token matrices each reads.
struct NoSource {  // the stages read their own inputs (the metrics of given tensors)
  __host__ __device__ TokenIn operator()(int64_t) const { return {0.0f, 0.0f, 0.0f}; }
  int Matrices() const { return 0; }
};
struct LogRatioMatrix {
  const float* lr;
  __host__ __device__ TokenIn operator()(int64_t k) const { return {lr[k], 0.0f, 0.0f}; }
  int Matrices() const { return 1; }
};
// old - rollout, never stored; without rollout log-probs only the training one.
struct LogProbs {
  const float* old_lp;
  const float* rollout_lp;  // may be null
  __host__ __device__ TokenIn operator()(int64_t k) const {
    const float o = old_lp[k];
    if (!rollout_lp) return {0.0f, o, 0.0f};
    const float r = rollout_lp[k];
    return {o - r, o, r};
  }
  int Matrices() const { return rollout_lp ? 2 : 1; }
};

// A stage that does not run: no terms, nothing read or written.
struct None {
  __host__ __device__ static None Identity() { return {}; }
  __host__ __device__ static None Merge(const None&, const None&, const MaskWeights&) { return {}; }
};
struct NoStage {
  using Terms = None;
  __host__ __device__ None operator()(int64_t, int64_t, const TokenIn&, float) const { return {}; }
  void Declare(Footprint&, int64_t, int64_t) const {}
};

// One row's partials: its mask sum and each stage's terms.
template <class Is, class Rs, class Off>
struct FusedRow {
  float m;
  Is is;
  Rs rs;
  Off off;
};

struct FusedRowOp {
  template <class Is, class Rs, class Off>
  __host__ __device__ FusedRow<Is, Rs, Off> operator()(const FusedRow<Is, Rs, Off>& a,
                                                       const FusedRow<Is, Rs, Off>& b) const {
    const MaskWeights w = WeightsOf(a.m, b.m);
    return {a.m + b.m, Is::Merge(a.is, b.is, w), Rs::Merge(a.rs, b.rs, w), Off::Merge(a.off, b.off, w)};
  }
};

// Tokens one term of the fused pass takes: thread j of a row's CTA reads tokens
// j + kRowThreads u (u < kFusedTokens) of each tile of kRowThreads * kFusedTokens, every
// input of all of them before any is used. The row template's loop takes one term per
// iteration, so a warp keeps one iteration's loads in flight: with the wide partials of
// a fused pass (few CTAs per SM) that alone leaves the device waiting on memory.
// A thread still takes the tokens t = j (mod kRowThreads) in order, on both systems.
constexpr int kFusedTokens = 4;

// The terms a row pass takes for `cols` tokens.
inline int64_t FusedTerms(int64_t cols) {
  const int64_t tile = int64_t{kRowThreads} * kFusedTokens;
  return (cols + tile - 1) / tile * kRowThreads;
}

// Term j of row i: each stage's terms of its tokens (a stage may write a token's
// outputs), merged.
template <class Source, class IsStage, class RsStage, class OffStage>
struct FusedToken {
  using Row = FusedRow<typename IsStage::Terms, typename RsStage::Terms, typename OffStage::Terms>;
  Source src;
  const float* mask;
  int64_t cols;
  IsStage is;
  RsStage rs;
  OffStage off;
  __host__ __device__ Row operator()(int64_t i, int64_t j) const {
    const int64_t t0 = j / kRowThreads * (int64_t{kRowThreads} * kFusedTokens) + j % kRowThreads;
    TokenIn x[kFusedTokens] = {};
    float m[kFusedTokens] = {};
    for (int u = 0; u < kFusedTokens; ++u) {
      const int64_t t = t0 + int64_t{kRowThreads} * u;
      if (t < cols) {
        x[u] = src(i * cols + t);
        m[u] = mask[i * cols + t];
      }
    }
    Row r{0.0f, IsStage::Terms::Identity(), RsStage::Terms::Identity(), OffStage::Terms::Identity()};
    for (int u = 0; u < kFusedTokens; ++u) {
      const int64_t t = t0 + int64_t{kRowThreads} * u;
      if (t >= cols) break;
      const int64_t k = i * cols + t;
      r = FusedRowOp()(r, Row{m[u], is(i, k, x[u], m[u]), rs(i, k, x[u], m[u]), off(i, k, x[u], m[u])});
    }
    return r;
  }
};

// What the pass does with a finished row on the device besides storing its partials
// (a value the next pass reads per row).
struct NoRowOut {
  template <class Row>
  __host__ __device__ void operator()(int64_t, const Row&) const {}
  void Declare(Footprint&, int64_t) const {}
};
template <class A, class B>
struct BothRowOuts {
  A a;
  B b;
  template <class Row>
  __host__ __device__ void operator()(int64_t i, const Row& r) const {
    a(i, r);
    b(i, r);
  }
  void Declare(Footprint& f, int64_t rows) const {
    a.Declare(f, rows);
    b.Declare(f, rows);
  }
};

template <class T, class RowOut>
struct StoreRowAnd {
  T* partials;
  RowOut row_out;
  __host__ __device__ void operator()(int64_t i, const T& v) const {
    partials[i] = v;
    row_out(i, v);
  }
};

// One row pass over the rows x cols tokens with the given stages: the rows' partials, in
// row order on the host. Declares the mask, the source's matrices and what each stage
// and `row_out` touch.
template <class Policy, class Source, class IsStage, class RsStage, class OffStage, class RowOut = NoRowOut>
auto FusedRowPass(Policy&& policy, int64_t rows, int64_t cols, const Source& src, const float* mask, const IsStage& is,
                  const RsStage& rs, const OffStage& off, const RowOut& row_out = {}) {
  using Row = FusedRow<typename IsStage::Terms, typename RsStage::Terms, typename OffStage::Terms>;
  const int64_t n = rows * cols;
  Footprint f;
  f.Reads<float>(n, 1 + src.Matrices());
  f.Writes<Row>(rows);
  is.Declare(f, rows, n);
  rs.Declare(f, rows, n);
  off.Declare(f, rows, n);
  row_out.Declare(f, rows);
  PolicyScratch<Row, std::remove_reference_t<Policy>> partials(policy, rows);
  const Row identity{0.0f, IsStage::Terms::Identity(), RsStage::Terms::Identity(), OffStage::Terms::Identity()};
  RowReduce(policy, rows, FusedTerms(cols), identity, FusedRowOp(),
            FusedToken<Source, IsStage, RsStage, OffStage>{src, mask, cols, is, rs, off},
            StoreRowAnd<Row, RowOut>{partials.get(), row_out}, f);
  return ToHostVector(policy, static_cast<const Row*>(partials.get()), rows);
}

}  // namespace verlconf::cuda
