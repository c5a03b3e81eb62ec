// Picks over a rows x cols token matrix by rank: the n-th token (row-major) that passes
// a test, and the k-th largest of the tokens' 32-bit keys, ties going to the lower flat
// index. A pick is then a cut that one later pass applies token by token (KeyCut), so
// no pick mask of the matrix's size is written and read back.
//
// Why not a sort: a device radix sort of the candidates' (key, index) pairs moves each
// pair through memory twice per digit; a radix select only counts. Its keys are kept in a
// token matrix of its own (the one temporary of the matrix's size: the digits are counted
// three times, and each count would otherwise re-read every input the key is made of).
// Counts are integers, so the device's atomic histograms and the host's loops agree
// exactly and the pick is bitwise reproducible.
#pragma once

#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#ifdef __CUDACC__
#include <thrust/system/cuda/execution_policy.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// A float's place in the order of floats as an unsigned key: a larger float has a larger
// key, -0 one below +0, NaNs by their bits beyond the infinities. Never 0, which marks a
// token that takes no part in a pick (only the two lowest negative NaN patterns share a
// key for it).
__host__ __device__ inline uint32_t OrderedKey(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return u > 0u ? u : 1u;
}

// A pick by rank: the tokens at or before the cut in the order (key descending, flat
// index ascending). Key 0 is never taken.
struct KeyCut {
  uint32_t key;
  int64_t index;
  __host__ __device__ bool Takes(uint32_t k, int64_t flat) const { return k > key || (k == key && flat <= index); }
  static KeyCut None() { return {std::numeric_limits<uint32_t>::max(), -1}; }
  static KeyCut All() { return {1u, std::numeric_limits<int64_t>::max()}; }
};

// `per_token` (the bytes one token's functor reads and writes) over `tokens` tokens.
inline Footprint TokensOf(const Footprint& per_token, int64_t tokens) {
  Footprint f;
  f.read_bytes = per_token.read_bytes * static_cast<double>(tokens);
  f.write_bytes = per_token.write_bytes * static_cast<double>(tokens);
  return f;
}

namespace select_detail {

struct AddCount {
  __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
};

template <class Pred>
struct MatchCount {
  Pred pred;
  __host__ __device__ int64_t operator()(int64_t i, int64_t t) const { return pred(i, t) ? 1 : 0; }
};

// The one row a scan walks (row `row` of the matrix as row 0 of the pass).
template <class Pred>
struct RowMatchCount {
  Pred pred;
  int64_t row;
  __host__ __device__ int64_t operator()(int64_t, int64_t t) const { return pred(row, t) ? 1 : 0; }
};

// Writes the flat index of the match whose running count reaches `nth`.
template <class Pred>
struct MarkNth {
  Pred pred;
  int64_t row, cols, nth;
  int64_t* out;
  __host__ __device__ void operator()(int64_t, int64_t t, int64_t count) const {
    if (count == nth && pred(row, t)) *out = row * cols + t;
  }
};

// The radix select's digits, most significant first: bits [21, 32), [10, 21), [0, 10).
constexpr int kDigits = 3;
constexpr int kBins = 2048;
constexpr int kShift[kDigits] = {21, 10, 0};
constexpr uint32_t kDigitMask[kDigits] = {0x7FFu, 0x7FFu, 0x3FFu};

// Whether `key` has the digits chosen so far (`prefix`, the bits from `match_shift` up;
// a shift of 32 matches every key).
__host__ __device__ inline bool HasPrefix(uint32_t key, int match_shift, uint32_t prefix) {
  return match_shift >= 32 || (key >> match_shift) == prefix;
}

struct StoredKey {
  const uint32_t* keys;
  int64_t cols;
  __host__ __device__ uint32_t operator()(int64_t i, int64_t t) const { return keys[i * cols + t]; }
};

struct KeyIs {
  StoredKey at;
  uint32_t key;
  __host__ __device__ bool operator()(int64_t i, int64_t t) const { return at(i, t) == key; }
};

#ifdef __CUDACC__
// One CTA per row: the row's keys (stored when `store` is set) counted by digit in a
// shared histogram, whose non-zero bins are then added to the global one.
template <class KeyAt>
__global__ void __launch_bounds__(kRowThreads)
    DigitHistogramKernel(int64_t cols, KeyAt key_at, uint32_t* store, int match_shift, uint32_t prefix, int shift,
                         uint32_t digit_mask, unsigned long long* hist) {
  __shared__ unsigned int local[kBins];
  for (int b = threadIdx.x; b < kBins; b += kRowThreads) local[b] = 0u;
  __syncthreads();
  const int64_t row = blockIdx.x;
  for (int64_t t = threadIdx.x; t < cols; t += kRowThreads) {
    const uint32_t key = key_at(row, t);
    if (store) store[row * cols + t] = key;
    if (key != 0u && HasPrefix(key, match_shift, prefix)) atomicAdd(&local[(key >> shift) & digit_mask], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kRowThreads)
    if (local[b] != 0u) atomicAdd(&hist[b], static_cast<unsigned long long>(local[b]));
}
#endif

// hist[d] += the keys with the prefix whose digit at `shift` is d (hist zeroed before);
// the keys stored too when `store` is set. The footprint counts the histogram once: the
// CTAs' adds of their non-zero bins meet in L2 on its 16 KB.
template <class Policy, class KeyAt>
void DigitHistogram(Policy&& policy, int64_t rows, int64_t cols, KeyAt key_at, uint32_t* store, int match_shift,
                    uint32_t prefix, int digit, unsigned long long* hist, const Footprint& footprint) {
  RecordPass(footprint);
  if (rows <= 0 || cols <= 0) return;
  const int shift = kShift[digit];
  const uint32_t digit_mask = kDigitMask[digit];
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    rows_detail::LaunchPerRow(policy, rows, DigitHistogramKernel<KeyAt>, "digit histogram launch", cols, key_at, store,
                              match_shift, prefix, shift, digit_mask, hist);
#endif
  } else {
    (void)policy;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t t = 0; t < cols; ++t) {
        const uint32_t key = key_at(i, t);
        if (store) store[i * cols + t] = key;
        if (key != 0u && HasPrefix(key, match_shift, prefix)) ++hist[(key >> shift) & digit_mask];
      }
  }
}

// Zeroes the n counters (a memset on the device).
template <class Policy>
void ZeroCounts(Policy&& policy, unsigned long long* counts, int64_t n) {
  RecordPass(Footprint().Writes<unsigned long long>(n));
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    const cudaStream_t stream = thrust::cuda_cub::stream(policy);
    Check(cudaMemsetAsync(counts, 0, static_cast<size_t>(n) * sizeof(unsigned long long), stream), "histogram zero");
#endif
  } else {
    (void)policy;
    std::fill(counts, counts + n, 0ull);
  }
}

}  // namespace select_detail

// The flat index i * cols + t of the n-th token (from 1, in row-major order) for which
// pred(i, t) holds; -1 for n < 1, rows * cols when fewer tokens pass. Two passes: each
// row's count of passing tokens (RowPartials), then a scan of the one row the n-th
// falls in. `pred_reads` is what pred reads of one token.
template <class Policy, class Pred>
int64_t NthMatchIndex(Policy&& policy, int64_t rows, int64_t cols, Pred pred, int64_t n, const Footprint& pred_reads) {
  using namespace select_detail;
  if (n < 1) return -1;
  const std::vector<int64_t> counts = RowPartials(policy, rows, cols, int64_t{0}, AddCount(), MatchCount<Pred>{pred},
                                                  TokensOf(pred_reads, rows * cols));
  int64_t before = 0, row = -1;
  for (int64_t i = 0; i < rows && row < 0; ++i) {
    if (before + counts[static_cast<size_t>(i)] >= n)
      row = i;
    else
      before += counts[static_cast<size_t>(i)];
  }
  if (row < 0) return rows * cols;
  PolicyScratch<int64_t, std::remove_reference_t<Policy>> found(policy, 1);
  RowScan(policy, 1, cols, /*reverse=*/false, int64_t{0}, AddCount(), RowMatchCount<Pred>{pred, row},
          MarkNth<Pred>{pred, row, cols, n - before, found.get()}, TokensOf(pred_reads, cols).Writes<int64_t>(1));
  return ToHostVector(policy, static_cast<const int64_t*>(found.get()), 1)[0];
}

// The cut of the k largest keys key(i, t) (OrderedKey's, 0 where a token takes no part)
// in the order (key descending, flat index ascending): KeyCut::All() when k reaches the
// number of keys taking part, None() for k < 1. A radix select: the keys stored with the
// first digit's histogram, one histogram per further digit among the keys of the digits
// chosen, then, where the k-th key is tied and the cut falls inside the tie, the tie's
// n-th token by NthMatchIndex. `key_reads` is what key reads of one token.
template <class Policy, class KeyFn>
KeyCut SelectKthLargest(Policy&& policy, int64_t rows, int64_t cols, KeyFn key, int64_t k, const Footprint& key_reads) {
  using namespace select_detail;
  const int64_t n = rows * cols;
  if (k < 1 || n <= 0) return KeyCut::None();
  using P = std::remove_reference_t<Policy>;
  // The keys, counted three times and matched once more (see the top of this file).
  PolicyScratch<uint32_t, P> keys(policy, n);
  PolicyScratch<unsigned long long, P> hist(policy, kDigits * kBins);
  ZeroCounts(policy, hist.get(), kDigits * kBins);
  const StoredKey stored{keys.get(), cols};
  uint32_t prefix = 0;  // the digits chosen so far
  int64_t rank = k;     // the k-th key's rank among the keys with that prefix
  for (int d = 0; d < kDigits; ++d) {
    unsigned long long* h = hist.get() + d * kBins;
    const int match_shift = d == 0 ? 32 : kShift[d - 1];
    if (d == 0) {
      Footprint f = TokensOf(key_reads, n);
      f.Writes<uint32_t>(n).Writes<unsigned long long>(kBins);
      DigitHistogram(policy, rows, cols, key, keys.get(), match_shift, prefix, d, h, f);
    } else {
      DigitHistogram(policy, rows, cols, stored, static_cast<uint32_t*>(nullptr), match_shift, prefix, d, h,
                     Footprint().Reads<uint32_t>(n).Writes<unsigned long long>(kBins));
    }
    const std::vector<unsigned long long> counts =
        ToHostVector(policy, static_cast<const unsigned long long*>(h), kBins);
    if (d == 0) {
      unsigned long long total = 0;
      for (unsigned long long c : counts) total += c;
      if (static_cast<unsigned long long>(k) >= total) return KeyCut::All();
    }
    // From the top bin down to the one holding the rank-th key.
    int digit = static_cast<int>(kDigitMask[d]);
    while (digit > 0 && static_cast<unsigned long long>(rank) > counts[static_cast<size_t>(digit)]) {
      rank -= static_cast<int64_t>(counts[static_cast<size_t>(digit)]);
      --digit;
    }
    prefix = (d == 0 ? 0u : prefix << (kShift[d - 1] - kShift[d])) | static_cast<uint32_t>(digit);
    // Every key of the chosen bin is taken: the cut is the bin's lowest key.
    if (static_cast<unsigned long long>(rank) == counts[static_cast<size_t>(digit)])
      return {std::max<uint32_t>(prefix << kShift[d], 1u), std::numeric_limits<int64_t>::max()};
  }
  // prefix is now the k-th key, tied with more keys than the cut takes: the rank-th of
  // them in row-major order ends the cut.
  return {prefix, NthMatchIndex(policy, rows, cols, KeyIs{stored, prefix}, rank, Footprint().Reads<uint32_t>(1))};
}

}  // namespace verlconf::cuda
