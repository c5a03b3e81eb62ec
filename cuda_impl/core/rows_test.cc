// RowScan's host twin: each row scanned on its own, forward or backward, the running
// value carried in walk order (an operator that does not commute shows it), and nothing
// done for an empty shape.
#include "cuda_impl/core/rows.cuh"

#include <gtest/gtest.h>
#include <thrust/system/cpp/execution_policy.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace verlconf::cuda {
namespace {

struct Add {
  float operator()(float a, float b) const { return a + b; }
};
// (a, b): x -> a x + b; Then(f, g) is f then g, which does not commute.
using Map = std::pair<float, float>;
struct Then {
  Map operator()(const Map& f, const Map& g) const { return {g.first * f.first, g.first * f.second + g.second}; }
};

struct At {
  const std::vector<float>* v;
  int64_t cols;
  float operator()(int64_t i, int64_t t) const { return (*v)[static_cast<size_t>(i * cols + t)]; }
};
struct MapAt {
  int64_t cols;
  Map operator()(int64_t i, int64_t t) const { return {2.0f, static_cast<float>(i * cols + t)}; }
};
template <class T>
struct Store {
  std::vector<T>* out;
  int64_t cols;
  void operator()(int64_t i, int64_t t, const T& v) const { (*out)[static_cast<size_t>(i * cols + t)] = v; }
};

TEST(RowScan, SumsEachRowForwardAndBackward) {
  const std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40};
  std::vector<float> fwd(8), bwd(8);
  RowScan(thrust::cpp::par, 2, 4, false, 0.0f, Add(), At{&x, 4}, Store<float>{&fwd, 4});
  RowScan(thrust::cpp::par, 2, 4, true, 0.0f, Add(), At{&x, 4}, Store<float>{&bwd, 4});
  EXPECT_EQ(fwd, (std::vector<float>{1, 3, 6, 10, 10, 30, 60, 100}));
  EXPECT_EQ(bwd, (std::vector<float>{10, 9, 7, 4, 100, 90, 70, 40}));
}

TEST(RowScan, CarriesTheValueInWalkOrder) {
  // Backward over one row of maps x -> 2x + k: the value at t composes k = T-1 first.
  std::vector<Map> out(3);
  RowScan(thrust::cpp::par, 1, 3, true, Map{1.0f, 0.0f}, Then(), MapAt{3}, Store<Map>{&out, 3});
  EXPECT_EQ(out[2], (Map{2.0f, 2.0f}));
  EXPECT_EQ(out[1], (Map{4.0f, 5.0f}));   // 2 (2) + 1
  EXPECT_EQ(out[0], (Map{8.0f, 10.0f}));  // 2 (5) + 0
}

TEST(RowScan, AnEmptyShapeWritesNothing) {
  std::vector<float> x, out;
  RowScan(thrust::cpp::par, 0, 4, false, 0.0f, Add(), At{&x, 4}, Store<float>{&out, 4});
  RowScan(thrust::cpp::par, 3, 0, true, 0.0f, Add(), At{&x, 0}, Store<float>{&out, 0});
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace verlconf::cuda
