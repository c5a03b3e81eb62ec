// Row-tiled passes: a recurrence along each row of a rows x cols token matrix (a
// reward-to-go, GAE's backward step, a running weight) as one template with a device
// scheduler and a host twin over the same __host__ __device__ functors.
//
// Why not a device-wide scan keyed by row: CUB's decoupled look-back combines a tile with
// whichever of its predecessors' partial or inclusive sums is published first, so the
// order of float additions (and the result's last bits) changes from run to run. Here a
// row is one CTA that walks its tiles in order and carries the running value from one to
// the next (BlockScan with a prefix callback): the order of operations is fixed by the
// block size alone, and the outputs are bitwise reproducible. The host twin walks each
// row sequentially, the order of verl's own torch.cumsum on the CPU.
#pragma once

#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#ifdef __CUDACC__
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <thrust/system/cuda/execution_policy.h>
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/buffer.h"

namespace verlconf::cuda {

// Whether a Thrust execution policy runs on the device (nvcc's build only has one).
template <class Policy>
constexpr bool OnDevice() {
#ifdef __CUDACC__
  using P = std::decay_t<Policy>;
  return std::is_base_of_v<thrust::cuda_cub::execution_policy<P>, P>;
#else
  return false;
#endif
}

// Threads of one row's CTA: a tile is this many tokens.
constexpr int kRowThreads = 256;

#ifdef __CUDACC__
namespace rows_detail {

// The running value of a row across its tiles: each tile's scan starts from it.
template <class T, class Op>
struct Carry {
  T total;
  Op op;
  __device__ T operator()(T tile_total) {
    const T before = total;
    total = op(total, tile_total);
    return before;
  }
};

template <class T, class Op, class TermFn, class OutFn>
__global__ void __launch_bounds__(kRowThreads)
    RowScanKernel(int64_t cols, bool reverse, T identity, Op op, TermFn term, OutFn out) {
  using Scan = cub::BlockScan<T, kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int64_t row = blockIdx.x;
  Carry<T, Op> carry{identity, op};
  for (int64_t base = 0; base < cols; base += kRowThreads) {
    const int64_t j = base + threadIdx.x;
    const bool live = j < cols;
    const int64_t t = reverse ? cols - 1 - j : j;
    const T x = live ? term(row, t) : identity;
    T y;
    Scan(temp).InclusiveScan(x, y, op, carry);
    if (live) out(row, t, y);
    __syncthreads();  // temp is reused by the next tile
  }
}

template <class T, class Op, class TermFn, class OutFn>
__global__ void __launch_bounds__(kRowThreads)
    RowReduceKernel(int64_t cols, T identity, Op op, TermFn term, OutFn out) {
  using Reduce = cub::BlockReduce<T, kRowThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const int64_t row = blockIdx.x;
  T acc = identity;
  for (int64_t t = threadIdx.x; t < cols; t += kRowThreads) acc = op(acc, term(row, t));
  const T total = Reduce(temp).Reduce(acc, op);
  if (threadIdx.x == 0) out(row, total);
}

}  // namespace rows_detail
#endif

// For every row i, walking t forward (or backward with `reverse`): acc = op(acc,
// term(i, t)) from `identity`, then out(i, t, acc). `op` must be associative (the device
// groups a tile's terms as a tree) with `identity` its neutral element; `term` and `out`
// are __host__ __device__ functors that read and write the policy's memory.
template <class Policy, class T, class Op, class TermFn, class OutFn>
void RowScan(Policy&& policy, int64_t rows, int64_t cols, bool reverse, T identity, Op op, TermFn term, OutFn out) {
  if (rows <= 0 || cols <= 0) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    const cudaStream_t stream = thrust::cuda_cub::stream(policy);
    rows_detail::RowScanKernel<T, Op, TermFn, OutFn>
        <<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(cols, reverse, identity, op, term, out);
    Check(cudaGetLastError(), "row scan launch");
#endif
  } else {
    (void)policy;
    for (int64_t i = 0; i < rows; ++i) {
      T acc = identity;
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t t = reverse ? cols - 1 - j : j;
        acc = op(acc, term(i, t));
        out(i, t, acc);
      }
    }
  }
}

// For every row i: out(i, op-reduction of term(i, t) over t) from `identity`. `term` may
// also write the token's outputs (each token is visited once). The device reduces a row's
// strided partials as a tree of fixed shape; the host twin walks the row in order.
template <class Policy, class T, class Op, class TermFn, class OutFn>
void RowReduce(Policy&& policy, int64_t rows, int64_t cols, T identity, Op op, TermFn term, OutFn out) {
  if (rows <= 0) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    const cudaStream_t stream = thrust::cuda_cub::stream(policy);
    rows_detail::RowReduceKernel<T, Op, TermFn, OutFn>
        <<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(cols, identity, op, term, out);
    Check(cudaGetLastError(), "row reduce launch");
#endif
  } else {
    (void)policy;
    for (int64_t i = 0; i < rows; ++i) {
      T acc = identity;
      for (int64_t t = 0; t < cols; ++t) acc = op(acc, term(i, t));
      out(i, acc);
    }
  }
}

// Writes a row's reduction into a rows-long buffer.
template <class T>
struct StoreRow {
  T* out;
  __host__ __device__ void operator()(int64_t i, const T& v) const { out[i] = v; }
};

// n values of the policy's memory in a host vector (on the device: a copy on the
// policy's stream, waited for).
template <class Policy, class T>
std::vector<T> ToHostVector(Policy&& policy, const T* p, int64_t n) {
  std::vector<T> h(static_cast<size_t>(n > 0 ? n : 0));
  if (n <= 0) return h;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    const cudaStream_t stream = thrust::cuda_cub::stream(policy);
    Check(cudaMemcpyAsync(h.data(), p, h.size() * sizeof(T), cudaMemcpyDeviceToHost, stream), "row partials D2H");
    Check(cudaStreamSynchronize(stream), "row partials D2H");
#endif
  } else {
    (void)policy;
    std::copy(p, p + n, h.begin());
  }
  return h;
}

}  // namespace verlconf::cuda
