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
#include <utility>
#include <vector>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

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

template <class Fn>
__global__ void __launch_bounds__(kRowThreads) RowMapKernel(int64_t cols, Fn fn) {
  const int64_t row = blockIdx.x;
  for (int64_t t = threadIdx.x; t < cols; t += kRowThreads) fn(row, t);
}

// `kernel` with a CTA of kRowThreads per row, on the policy's stream; `what` names a
// failed launch.
template <class Policy, class... Params, class... Args>
void LaunchPerRow(Policy& policy, int64_t rows, void (*kernel)(Params...), const char* what, Args&&... args) {
  kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, thrust::cuda_cub::stream(policy)>>>(
      std::forward<Args>(args)...);
  Check(cudaGetLastError(), what);
}

}  // namespace rows_detail
#endif

// Every template takes the footprint of its functors (traffic.h): the bytes `term`,
// `fn` and `out` read and write, declared where they are built. The pass records it, and
// its launch, whether or not it runs (an empty shape launches nothing on the device but
// is still the call's pass).

// For every row i, walking t forward (or backward with `reverse`): acc = op(acc,
// term(i, t)) from `identity`, then out(i, t, acc). `op` must be associative (the device
// groups a tile's terms as a tree) with `identity` its neutral element; `term` and `out`
// are __host__ __device__ functors that read and write the policy's memory.
template <class Policy, class T, class Op, class TermFn, class OutFn>
void RowScan(Policy&& policy, int64_t rows, int64_t cols, bool reverse, T identity, Op op, TermFn term, OutFn out,
             const Footprint& footprint) {
  RecordPass(footprint);
  if (rows <= 0 || cols <= 0) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    rows_detail::LaunchPerRow(policy, rows, rows_detail::RowScanKernel<T, Op, TermFn, OutFn>, "row scan launch", cols,
                              reverse, identity, op, term, out);
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
// also write the token's outputs (each token is visited once). `op` must be associative
// and commutative. Both systems group a row the same way: kRowThreads strided partials
// (partial j takes t = j, j + kRowThreads, ... in order), then the partials combined as
// a tree (CUB's on the device, pairwise on the host). A long row's float error so grows
// with cols / kRowThreads, not with cols, on the host as on the device.
template <class Policy, class T, class Op, class TermFn, class OutFn>
void RowReduce(Policy&& policy, int64_t rows, int64_t cols, T identity, Op op, TermFn term, OutFn out,
               const Footprint& footprint) {
  RecordPass(footprint);
  if (rows <= 0) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    rows_detail::LaunchPerRow(policy, rows, rows_detail::RowReduceKernel<T, Op, TermFn, OutFn>, "row reduce launch",
                              cols, identity, op, term, out);
#endif
  } else {
    (void)policy;
    std::vector<T> partial;
    for (int64_t i = 0; i < rows; ++i) {
      partial.assign(kRowThreads, identity);
      for (int64_t t = 0; t < cols; ++t) {
        T& acc = partial[static_cast<size_t>(t % kRowThreads)];
        acc = op(acc, term(i, t));
      }
      for (size_t width = kRowThreads / 2; width > 0; width /= 2)
        for (size_t j = 0; j < width; ++j) partial[j] = op(partial[j], partial[j + width]);
      out(i, partial[0]);
    }
  }
}

// fn(i, t) for every token of every row, in no particular order: the elementwise pass
// (a token's outputs from its inputs, or one row's entry when cols is a row count and
// rows is 1). A CTA per row on the device; rows then tokens in order on the host.
template <class Policy, class Fn>
void RowMap(Policy&& policy, int64_t rows, int64_t cols, Fn fn, const Footprint& footprint) {
  RecordPass(footprint);
  if (rows <= 0 || cols <= 0) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    rows_detail::LaunchPerRow(policy, rows, rows_detail::RowMapKernel<Fn>, "row map launch", cols, fn);
#endif
  } else {
    (void)policy;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t t = 0; t < cols; ++t) fn(i, t);
  }
}

// Writes a row's reduction into a rows-long buffer.
template <class T>
struct StoreRow {
  T* out;
  __host__ __device__ void operator()(int64_t i, const T& v) const { out[i] = v; }
};

// Each row's op-reduction of term(i, t) (RowReduce), brought to the host in row order:
// the first level of a batch-wide reduction, whose second level the caller does on the
// host in a fixed order (no float atomics, so bitwise reproducible). `footprint` is the
// term's; the pass adds the rows' partials it writes and the copy.
template <class Policy, class T, class Op, class TermFn>
std::vector<T> RowPartials(Policy&& policy, int64_t rows, int64_t cols, T identity, Op op, TermFn term,
                           Footprint footprint) {
  PolicyScratch<T, std::remove_reference_t<Policy>> partials(policy, rows);
  footprint.Writes<T>(rows);
  RowReduce(policy, rows, cols, identity, op, term, StoreRow<T>{partials.get()}, footprint);
  return ToHostVector(policy, static_cast<const T*>(partials.get()), rows);
}

// n values of the policy's memory in a host vector (on the device: a copy on the
// policy's stream, waited for).
template <class Policy, class T>
std::vector<T> ToHostVector(Policy&& policy, const T* p, int64_t n) {
  std::vector<T> h(static_cast<size_t>(n > 0 ? n : 0));
  RecordHostCopy(static_cast<double>(h.size() * sizeof(T)));
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

// Copies a host vector to n values of the policy's memory (on the device: on the
// policy's stream; the host vector must live until the stream has read it, so the call
// waits): for the few row- or group-sized values a function works out on the host.
template <class Policy, class T>
void FromHostVector(Policy&& policy, const std::vector<T>& h, T* p) {
  RecordHostCopy(static_cast<double>(h.size() * sizeof(T)));
  if (h.empty()) return;
  if constexpr (OnDevice<Policy>()) {
#ifdef __CUDACC__
    const cudaStream_t stream = thrust::cuda_cub::stream(policy);
    Check(cudaMemcpyAsync(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, stream), "row values H2D");
    Check(cudaStreamSynchronize(stream), "row values H2D");
#endif
  } else {
    (void)policy;
    std::copy(h.begin(), h.end(), p);
  }
}

}  // namespace verlconf::cuda
