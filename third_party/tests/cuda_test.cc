// Proves cuda_library + @cuda//:cudart_static compile and link everywhere, and
// run where a GPU exists. CI has nvcc but no GPU: the test must SKIP there.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "third_party/tests/saxpy.h"
#include "third_party/tests/smoke_math.h"

TEST(CudaSmoke, SaxpyOnDevice) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    GTEST_SKIP() << "no CUDA device: "
                 << (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  }
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  ASSERT_EQ(smoke::saxpy(2.0f, x.data(), y.data(), n), "");
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], smoke::saxpy_ref(2.0f, x[i], 1.0f)) << "at " << i;
}
