// The host system's execution policy: Thrust's CPP system drawing temporaries from an
// entry's workspace, as thrust::cpp::par(ws) would, but with a type of its own, so that
// argument-dependent lookup finds the overloads below before Thrust's generic dispatch.
// They forward every algorithm to thrust::cpp::par(ws) unchanged and tell the traffic
// ledger (traffic.h) that a pass ran outside the row templates, whose bytes nobody
// declared. Only the host system can be watched this way; the traffic model is a host
// run, so that is where it is needed.
#pragma once

#include <thrust/adjacent_difference.h>
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/extrema.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/gather.h>
#include <thrust/inner_product.h>
#include <thrust/logical.h>
#include <thrust/memory.h>
#include <thrust/partition.h>
#include <thrust/reduce.h>
#include <thrust/remove.h>
#include <thrust/replace.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system/cpp/execution_policy.h>
#include <thrust/tabulate.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/transform_scan.h>
#include <thrust/unique.h>

#include <cstddef>
#include <utility>

#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda::host_system {

template <class Alloc>
struct Policy : thrust::system::cpp::detail::execution_policy<Policy<Alloc>> {
  explicit Policy(Alloc& a) : alloc(&a) {}
  auto base() const { return thrust::cpp::par(*alloc); }
  Alloc* alloc;
};

// Temporaries (PolicyScratch, the agg plan's row buffer) from the workspace.
template <class T, class Alloc>
thrust::pair<T*, std::ptrdiff_t> get_temporary_buffer(Policy<Alloc>& p, std::ptrdiff_t n) {
  return {reinterpret_cast<T*>(p.alloc->allocate(n * static_cast<std::ptrdiff_t>(sizeof(T)))), n};
}
template <class Alloc, class Ptr>
void return_temporary_buffer(Policy<Alloc>& p, Ptr ptr, std::ptrdiff_t n) {
  using T = std::remove_pointer_t<decltype(thrust::raw_pointer_cast(ptr))>;
  p.alloc->deallocate(reinterpret_cast<char*>(thrust::raw_pointer_cast(ptr)), static_cast<size_t>(n) * sizeof(T));
}

// Thrust's algorithms: a family calling one outside the templates is marked at run time
// (and cuda_impl/core:no_raw_thrust_test finds any algorithm call in the sources).
#define VERLCONF_HOST_ALGORITHM(name)                           \
  template <class Alloc, class... Args>                         \
  decltype(auto) name(Policy<Alloc>& p, Args&&... args) {       \
    RecordRawThrustPass(#name);                                 \
    return thrust::name(p.base(), std::forward<Args>(args)...); \
  }
VERLCONF_HOST_ALGORITHM(adjacent_difference)
VERLCONF_HOST_ALGORITHM(all_of)
VERLCONF_HOST_ALGORITHM(any_of)
VERLCONF_HOST_ALGORITHM(copy)
VERLCONF_HOST_ALGORITHM(copy_if)
VERLCONF_HOST_ALGORITHM(copy_n)
VERLCONF_HOST_ALGORITHM(count)
VERLCONF_HOST_ALGORITHM(count_if)
VERLCONF_HOST_ALGORITHM(exclusive_scan)
VERLCONF_HOST_ALGORITHM(exclusive_scan_by_key)
VERLCONF_HOST_ALGORITHM(fill)
VERLCONF_HOST_ALGORITHM(fill_n)
VERLCONF_HOST_ALGORITHM(for_each)
VERLCONF_HOST_ALGORITHM(for_each_n)
VERLCONF_HOST_ALGORITHM(gather)
VERLCONF_HOST_ALGORITHM(gather_if)
VERLCONF_HOST_ALGORITHM(inclusive_scan)
VERLCONF_HOST_ALGORITHM(inclusive_scan_by_key)
VERLCONF_HOST_ALGORITHM(inner_product)
VERLCONF_HOST_ALGORITHM(lower_bound)
VERLCONF_HOST_ALGORITHM(max_element)
VERLCONF_HOST_ALGORITHM(min_element)
VERLCONF_HOST_ALGORITHM(minmax_element)
VERLCONF_HOST_ALGORITHM(none_of)
VERLCONF_HOST_ALGORITHM(partition)
VERLCONF_HOST_ALGORITHM(reduce)
VERLCONF_HOST_ALGORITHM(reduce_by_key)
VERLCONF_HOST_ALGORITHM(remove_if)
VERLCONF_HOST_ALGORITHM(replace_if)
VERLCONF_HOST_ALGORITHM(scatter)
VERLCONF_HOST_ALGORITHM(scatter_if)
VERLCONF_HOST_ALGORITHM(sequence)
VERLCONF_HOST_ALGORITHM(sort)
VERLCONF_HOST_ALGORITHM(sort_by_key)
VERLCONF_HOST_ALGORITHM(stable_partition)
VERLCONF_HOST_ALGORITHM(stable_sort)
VERLCONF_HOST_ALGORITHM(stable_sort_by_key)
VERLCONF_HOST_ALGORITHM(tabulate)
VERLCONF_HOST_ALGORITHM(transform)
VERLCONF_HOST_ALGORITHM(transform_exclusive_scan)
VERLCONF_HOST_ALGORITHM(transform_inclusive_scan)
VERLCONF_HOST_ALGORITHM(transform_reduce)
VERLCONF_HOST_ALGORITHM(unique)
VERLCONF_HOST_ALGORITHM(unique_by_key)
VERLCONF_HOST_ALGORITHM(upper_bound)
#undef VERLCONF_HOST_ALGORITHM

}  // namespace verlconf::cuda::host_system

namespace verlconf::cuda {

// The policy a core template hands to a Thrust algorithm it wraps (a sort it declares
// the footprint of): on the host, the unwatched CPP policy underneath, so the wrapped
// call is not marked raw; any other policy unchanged.
template <class Alloc>
auto Unwatched(host_system::Policy<Alloc>& p) {
  return p.base();
}
template <class Policy>
Policy& Unwatched(Policy& p) {
  return p;
}

}  // namespace verlconf::cuda
