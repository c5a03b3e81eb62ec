// Every registry function has a CUDA entry but the listed exceptions (cuda_coverage.h):
// checked here on the cuda-host slot, which this binary's host copies fill; the device
// build's test (tools/gpu:cuda_test) checks both slots against the same list.
#include "properties/cuda_coverage.h"

#include <gtest/gtest.h>

#include <string>

namespace verlconf::testing {
namespace {

TEST(CudaCoverage, EveryEntryHasACudaHostEntryButTheExceptions) {
  for (const std::string& problem : CudaCoverageProblems(Impl::kCudaHost)) ADD_FAILURE() << problem;
}

TEST(CudaCoverage, EveryExceptionHasAReason) {
  for (const auto& [key, why] : CudaExceptions()) EXPECT_FALSE(why.empty()) << key;
}

}  // namespace
}  // namespace verlconf::testing
