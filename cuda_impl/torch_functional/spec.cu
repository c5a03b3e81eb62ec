// The torch_functional family's CUDA entries as the registry sees them: masked_mean
// (whole-array and per-row), masked_var and masked_whiten, Case in and Result out with
// the outputs and grads of oracle/torch_functional/spec.cc, in the cuda and cuda-host
// slots.
#include "oracle/torch_functional/spec.h"

#include <cstdint>
#include <tuple>
#include <utility>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/torch_functional/masked.cuh"

namespace verlconf::cuda {
namespace {

// The rows x cols a whole-array statistic runs over: the first axis by the others (one
// row for a scalar or a vector).
std::pair<int64_t, int64_t> RowsCols(const Array& a) {
  const int64_t n = static_cast<int64_t>(a.data.size());
  const int64_t rows = a.rank() >= 2 ? a.shape[0] : 1;
  return {rows, rows > 0 ? n / rows : 0};
}

Result RunMaskedMean(System system, const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const SystemBuffer<float> d_v(system, ToFloat(v)), d_m(system, ToFloat(m));
  SystemBuffer<float> d_grad(system, v.data.size());
  Result r;
  if (oracle::ReadMaskedMeanAxis(c)) {
    const int64_t rows = v.rows(), cols = v.cols();
    SystemBuffer<float> d_out(system, static_cast<size_t>(rows));
    RunEntry(system, [&](auto&& policy) {
      masked_mean_rows(policy, d_v.data(), d_m.data(), rows, cols, d_out.data(), d_grad.data());
    });
    r.outputs["output"] = FromFloat(d_out.ToHost(), {rows}, c.dtype);
  } else {
    int64_t rows, cols;
    std::tie(rows, cols) = RowsCols(v);
    float mean = 0.0f;
    RunEntry(system,
             [&](auto&& policy) { mean = masked_mean(policy, d_v.data(), d_m.data(), rows, cols, d_grad.data()); });
    r.outputs["output"] = Array::Scalar(mean, c.dtype);
  }
  r.grads["values"] = FromFloat(d_grad.ToHost(), v.shape, c.dtype);
  return r;
}

Result RunMaskedVar(System system, const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const bool unbiased = c.config.Bool("unbiased");
  int64_t rows, cols;
  std::tie(rows, cols) = RowsCols(v);
  const SystemBuffer<float> d_v(system, ToFloat(v)), d_m(system, ToFloat(m));
  SystemBuffer<float> d_grad(system, v.data.size());
  float var = 0.0f;
  RunEntry(system, [&](auto&& policy) {
    var = masked_var(policy, d_v.data(), d_m.data(), rows, cols, unbiased, d_grad.data());
  });
  Result r;
  r.outputs["output"] = Array::Scalar(var, c.dtype);
  r.grads["values"] = FromFloat(d_grad.ToHost(), v.shape, c.dtype);
  return r;
}

Result RunMaskedWhiten(System system, const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const bool shift = c.config.Bool("shift_mean");
  int64_t rows, cols;
  std::tie(rows, cols) = RowsCols(v);
  const SystemBuffer<float> d_v(system, ToFloat(v)), d_m(system, ToFloat(m));
  SystemBuffer<float> d_out(system, v.data.size()), d_grad(system, v.data.size());
  RunEntry(system, [&](auto&& policy) {
    masked_whiten(policy, d_v.data(), d_m.data(), rows, cols, shift, d_out.data(), d_grad.data());
  });
  Result r;
  r.outputs["output"] = FromFloat(d_out.ToHost(), v.shape, c.dtype);
  r.grads["values"] = FromFloat(d_grad.ToHost(), v.shape, c.dtype);
  return r;
}

const bool registered = [] {
  RegisterCudaEntry("torch_functional", "masked_mean", RunMaskedMean);
  RegisterCudaEntry("torch_functional", "masked_var", RunMaskedVar);
  RegisterCudaEntry("torch_functional", "masked_whiten", RunMaskedWhiten);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
