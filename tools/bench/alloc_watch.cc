#include "tools/bench/alloc_watch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace verlconf::bench {
namespace {

struct AllocWatch {
  std::mutex mu;
  bool active = false;
  std::map<void*, size_t> live;  // allocations made inside the window, not yet freed
  size_t outstanding = 0;
  AllocStats stats;

  void Alloc(void* p, size_t n) {
    std::lock_guard<std::mutex> l(mu);
    if (!active || !p) return;
    live[p] = n;
    ++stats.calls;
    outstanding += n;
    stats.peak = std::max(stats.peak, outstanding);
  }
  void Free(void* p) {
    std::lock_guard<std::mutex> l(mu);
    auto it = live.find(p);
    if (it == live.end()) return;
    outstanding -= it->second;
    live.erase(it);
  }
};

AllocWatch& Watch() {
  static AllocWatch w;
  return w;
}

}  // namespace

void BeginAllocWatch() {
  AllocWatch& w = Watch();
  std::lock_guard<std::mutex> l(w.mu);
  w.active = true;
  w.live.clear();
  w.outstanding = 0;
  w.stats = {};
}

AllocStats EndAllocWatch() {
  AllocWatch& w = Watch();
  std::lock_guard<std::mutex> l(w.mu);
  w.active = false;
  return w.stats;
}

}  // namespace verlconf::bench

using verlconf::bench::Watch;

extern "C" {
cudaError_t __real_cudaMalloc(void** p, size_t n);
cudaError_t __real_cudaMallocManaged(void** p, size_t n, unsigned int flags);
cudaError_t __real_cudaMallocAsync(void** p, size_t n, cudaStream_t s);
cudaError_t __real_cudaFree(void* p);
cudaError_t __real_cudaFreeAsync(void* p, cudaStream_t s);

cudaError_t __wrap_cudaMalloc(void** p, size_t n) {
  const cudaError_t e = __real_cudaMalloc(p, n);
  if (e == cudaSuccess) Watch().Alloc(*p, n);
  return e;
}
cudaError_t __wrap_cudaMallocManaged(void** p, size_t n, unsigned int flags) {
  const cudaError_t e = __real_cudaMallocManaged(p, n, flags);
  if (e == cudaSuccess) Watch().Alloc(*p, n);
  return e;
}
cudaError_t __wrap_cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  const cudaError_t e = __real_cudaMallocAsync(p, n, s);
  if (e == cudaSuccess) Watch().Alloc(*p, n);
  return e;
}
cudaError_t __wrap_cudaFree(void* p) {
  Watch().Free(p);
  return __real_cudaFree(p);
}
cudaError_t __wrap_cudaFreeAsync(void* p, cudaStream_t s) {
  Watch().Free(p);
  return __real_cudaFreeAsync(p, s);
}
}
