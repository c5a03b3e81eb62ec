// One source, two systems: every CUDA function is a template over a Thrust execution
// policy. On the GPU it runs with thrust::cuda::par_nosync on the entry's stream; on the
// CPU the same instantiation runs on Thrust's CPP system (host_policy.cuh), which is how CI checks this
// code on machines without a GPU (`--impl cuda-host`). The math (__host__ __device__
// functors), the iterator plumbing, the passes and the workspace are shared; only the
// memory the pointers live in differs.
#pragma once

#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#include <thrust/memory.h>
#include <thrust/system/cpp/execution_policy.h>
#ifdef __CUDACC__
#include <thrust/system/cuda/execution_policy.h>
#endif

#include <algorithm>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/host_policy.cuh"
#include "cuda_impl/core/system.h"

namespace verlconf::cuda {

// The workspace every algorithm of one entry call draws its temporaries from: a caching
// allocator (a freed block is kept for the next request of its size, so the passes of
// one call allocate each size once) that records the peak bytes held, which the bench
// reports. Device memory for System::kDevice, host memory for System::kHost.
class Workspace {
 public:
  using value_type = char;

  explicit Workspace(System system) : system_(system) {}
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
    for (auto& [size, blocks] : free_)
      for (char* p : blocks) Release(p);
  }

  char* allocate(std::ptrdiff_t n) {
    const size_t size = static_cast<size_t>(n);
    auto it = free_.find(size);
    char* p = nullptr;
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    } else if (system_ == System::kDevice) {
      Check(cudaMalloc(reinterpret_cast<void**>(&p), size ? size : 1), "cudaMalloc (workspace)");
    } else {
      p = new char[size ? size : 1];
    }
    held_ += size;
    if (held_ > peak_) peak_ = held_;
    return p;
  }

  void deallocate(char* p, size_t n) {
    held_ -= n;
    free_[n].push_back(p);
  }

  size_t peak_bytes() const { return peak_; }

 private:
  void Release(char* p) const {
    if (system_ == System::kDevice)
      cudaFree(p);
    else
      delete[] p;
  }

  System system_;
  std::map<size_t, std::vector<char*>> free_;
  size_t held_ = 0, peak_ = 0;
};

// The stream an entry call runs on (device only; the host system has none).
class StreamScope {
 public:
  explicit StreamScope(System system) {
    if (system == System::kDevice) Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream create");
  }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  ~StreamScope() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// The execution policy of a system, drawing temporaries from `ws`. Only nvcc's build has
// the device's: the host copy of a source (cuda.bzl) is compiled without a CUDA compiler.
#ifdef __CUDACC__
inline auto DevicePolicy(Workspace& ws, cudaStream_t stream) { return thrust::cuda::par_nosync(ws).on(stream); }
#endif
inline auto HostPolicy(Workspace& ws) { return host_system::Policy<Workspace>(ws); }

// Calls f(policy) with the policy of `system`: the one place a function's template is
// instantiated for both systems.
template <class F>
void WithPolicy(System system, Workspace& ws, cudaStream_t stream, F&& f) {
  if (system == System::kHost) {
    f(HostPolicy(ws));
    return;
  }
#ifndef __CUDACC__
  // The host copy registers only the cuda-host slot (system.h), so this is a bug.
  (void)stream;
  throw std::logic_error("the host build of a CUDA entry was asked to run on the device");
#else
  BenchProbe* probe = CurrentBenchProbe();
  if (!probe) {
    f(DevicePolicy(ws, stream));
    Check(cudaStreamSynchronize(stream), "stream synchronize");
    return;
  }
  // The bench's timing (BenchProbe in system.h). A function may synchronise inside (a
  // reduction's scalar comes back to the host), so each repeat is timed on its own.
  for (int i = 0; i < probe->warmup; ++i) f(DevicePolicy(ws, stream));
  Check(cudaStreamSynchronize(stream), "stream synchronize");
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "event create");
  Check(cudaEventCreate(&stop), "event create");
  std::vector<double> ms;
  if (probe->window_begin) probe->window_begin();
  for (int i = 0; i < probe->repeats; ++i) {
    Check(cudaEventRecord(start, stream), "event record");
    f(DevicePolicy(ws, stream));
    Check(cudaEventRecord(stop, stream), "event record");
    Check(cudaEventSynchronize(stop), "event synchronize");
    float elapsed = 0;
    Check(cudaEventElapsedTime(&elapsed, start, stop), "event elapsed");
    ms.push_back(elapsed);
  }
  if (probe->window_end) probe->window_end();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  probe->repeat_ms = ms;
  std::sort(ms.begin(), ms.end());
  if (!ms.empty()) probe->ms += ms[ms.size() / 2];
  probe->workspace_peak_bytes = std::max(probe->workspace_peak_bytes, ws.peak_bytes());
  ++probe->passes;
#endif
}

// One entry call's run on `system`: the ceremony every CUDA entry shares, in one place. It
// owns the call's workspace and stream and calls pass(policy) with the system's execution
// policy (WithPolicy: on the device, synchronised, and timed when the bench asks). The
// entry reads its case and config before and packs its Result after; `pass` holds only
// the policy-templated work.
template <class Pass>
void RunEntry(System system, Pass&& pass) {
  Workspace ws(system);
  StreamScope stream(system);
  WithPolicy(system, ws, stream.get(), std::forward<Pass>(pass));
}

// An array in the memory of a system: a DeviceBuffer on the device, a vector on the
// host; data() is what the policy's algorithms take.
template <typename T>
class SystemBuffer {
 public:
  SystemBuffer(System system, size_t n) : system_(system) {
    if (system_ == System::kDevice)
      device_ = DeviceBuffer<T>(n);
    else
      host_.assign(n, T{});
  }
  SystemBuffer(System system, const std::vector<T>& values) : system_(system) {
    if (system_ == System::kDevice)
      device_ = DeviceBuffer<T>(values);
    else
      host_ = values;
  }
  T* data() { return system_ == System::kDevice ? device_.get() : host_.data(); }
  const T* data() const { return system_ == System::kDevice ? device_.get() : host_.data(); }
  std::vector<T> ToHost() const { return system_ == System::kDevice ? device_.ToHost() : host_; }

 private:
  System system_;
  DeviceBuffer<T> device_{0};
  std::vector<T> host_;
};

// Scratch memory of n elements from the policy's allocator (the entry's Workspace, in
// the policy's system), handed back to it when it goes out of scope. For a function's
// temporaries: unlike a SystemBuffer it frees nothing mid-call (cudaFree stalls the
// queued par_nosync work until the device is idle), and it counts in the workspace's
// peak, which the bench reports.
template <class T, class Policy>
class PolicyScratch {
 public:
  PolicyScratch(Policy& policy, int64_t n) : policy_(policy) {
    auto r = thrust::get_temporary_buffer<T>(policy_, static_cast<std::ptrdiff_t>(n > 0 ? n : 1));
    ptr_ = r.first;
    n_ = r.second;
  }
  PolicyScratch(const PolicyScratch&) = delete;
  PolicyScratch& operator=(const PolicyScratch&) = delete;
  ~PolicyScratch() { thrust::return_temporary_buffer(policy_, ptr_, n_); }
  T* get() const { return thrust::raw_pointer_cast(ptr_); }

 private:
  Policy& policy_;
  decltype(thrust::get_temporary_buffer<T>(std::declval<Policy&>(), std::ptrdiff_t{}).first) ptr_;
  std::ptrdiff_t n_ = 0;
};

}  // namespace verlconf::cuda
