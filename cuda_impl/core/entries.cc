#include "cuda_impl/core/entries.h"

#include <cuda_runtime.h>

#include <map>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/kl/kl_penalty.h"
#include "oracle/kl/kl_penalty.h"

namespace verlconf::cuda {
namespace {

std::vector<float> ToFloat(const Array& a) { return std::vector<float>(a.data.begin(), a.data.end()); }

Array FromFloat(const std::vector<float>& v, const std::vector<int64_t>& shape, DType d) {
  Array a(shape, d);
  for (size_t k = 0; k < v.size(); ++k) a.data[k] = static_cast<double>(v[k]);
  return a;
}

Result RunKl(const Case& c) {
  // The name decides the estimator exactly as in the oracle (and raises as verl does).
  const oracle::KlEstimator e = oracle::ParseKlName(c.function);
  const Array& lp = c.Input("logprob");
  const Array& ref = c.Input("ref_logprob");
  const DeviceBuffer<float> d_lp(ToFloat(lp)), d_ref(ToFloat(ref));
  DeviceBuffer<float> d_kl(lp.data.size()), d_grad(lp.data.size());
  kl_penalty(d_lp.get(), d_ref.get(), d_kl.get(), d_grad.get(), lp.size(), static_cast<int>(e.kind),
             e.straight_through, nullptr);
  Check(cudaGetLastError(), "kl_penalty launch");
  Check(cudaDeviceSynchronize(), "kl_penalty");
  Result r;
  r.outputs["kl"] = FromFloat(d_kl.ToHost(), lp.shape, c.dtype);
  r.grads["logprob"] = FromFloat(d_grad.ToHost(), lp.shape, c.dtype);
  return r;
}

const std::map<std::string, RunFn>& Table() {
  static const std::map<std::string, RunFn> table = [] {
    std::map<std::string, RunFn> t;
    for (const char* name : {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "kl+", "k1+", "abs+", "mse+", "k2+",
                             "low_var_kl+", "k3+"})
      t[name] = RunKl;
    return t;
  }();
  return table;
}

}  // namespace

std::string DeviceUnavailableReason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return "";
}

const RunFn* FindEntry(const std::string& name) {
  auto it = Table().find(name);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> EntryNames() {
  std::vector<std::string> v;
  for (const auto& [k, fn] : Table()) v.push_back(k);
  return v;
}

}  // namespace verlconf::cuda
