// The row templates' host twins: each row scanned on its own, forward or backward, the
// running value carried in walk order (an operator that does not commute shows it),
// nothing done for an empty shape, every token mapped once. And the traffic model's
// plumbing: each template records its footprint and launch in the installed ledger, and
// the host policy marks a Thrust algorithm called outside the templates.
#include "cuda_impl/core/rows.cuh"

#include <gtest/gtest.h>
#include <thrust/system/cpp/execution_policy.h>
#include <thrust/transform.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

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
  RowScan(thrust::cpp::par, 2, 4, false, 0.0f, Add(), At{&x, 4}, Store<float>{&fwd, 4}, Footprint());
  RowScan(thrust::cpp::par, 2, 4, true, 0.0f, Add(), At{&x, 4}, Store<float>{&bwd, 4}, Footprint());
  EXPECT_EQ(fwd, (std::vector<float>{1, 3, 6, 10, 10, 30, 60, 100}));
  EXPECT_EQ(bwd, (std::vector<float>{10, 9, 7, 4, 100, 90, 70, 40}));
}

TEST(RowScan, CarriesTheValueInWalkOrder) {
  // Backward over one row of maps x -> 2x + k: the value at t composes k = T-1 first.
  std::vector<Map> out(3);
  RowScan(thrust::cpp::par, 1, 3, true, Map{1.0f, 0.0f}, Then(), MapAt{3}, Store<Map>{&out, 3}, Footprint());
  EXPECT_EQ(out[2], (Map{2.0f, 2.0f}));
  EXPECT_EQ(out[1], (Map{4.0f, 5.0f}));   // 2 (2) + 1
  EXPECT_EQ(out[0], (Map{8.0f, 10.0f}));  // 2 (5) + 0
}

TEST(RowScan, AnEmptyShapeWritesNothing) {
  std::vector<float> x, out;
  RowScan(thrust::cpp::par, 0, 4, false, 0.0f, Add(), At{&x, 4}, Store<float>{&out, 4}, Footprint());
  RowScan(thrust::cpp::par, 3, 0, true, 0.0f, Add(), At{&x, 0}, Store<float>{&out, 0}, Footprint());
  EXPECT_TRUE(out.empty());
}

TEST(RowMap, VisitsEveryTokenOnce) {
  std::vector<int> seen(6, 0);
  RowMap(
      thrust::cpp::par, 2, 3, [&](int64_t i, int64_t t) { ++seen[static_cast<size_t>(i * 3 + t)]; }, Footprint());
  EXPECT_EQ(seen, (std::vector<int>(6, 1)));
}

// Installs a ledger for one test's scope.
struct LedgerScope {
  TrafficLedger ledger;
  TrafficLedger* previous;
  LedgerScope() : previous(SetTrafficLedger(&ledger)) {}
  ~LedgerScope() { SetTrafficLedger(previous); }
};

TEST(Traffic, EachTemplateRecordsItsFootprintAndLaunch) {
  LedgerScope scope;
  const std::vector<float> x(8, 1.0f);
  std::vector<float> out(8);
  RowScan(thrust::cpp::par, 2, 4, false, 0.0f, Add(), At{&x, 4}, Store<float>{&out, 4},
          Footprint().Reads<float>(8).Writes<float>(8));
  RowReduce(
      thrust::cpp::par, 2, 4, 0.0f, Add(), At{&x, 4}, [](int64_t, float) {},
      Footprint().Reads<float>(8).Writes<double>(2));
  RowMap(
      thrust::cpp::par, 0, 4, [](int64_t, int64_t) {}, Footprint().Reads<float>(0));
  const std::vector<float> back = ToHostVector(thrust::cpp::par, x.data(), 3);
  EXPECT_EQ(scope.ledger.read_bytes, 4.0 * 16 + 4.0 * 3);
  EXPECT_EQ(scope.ledger.write_bytes, 4.0 * 8 + 8.0 * 2);
  EXPECT_EQ(scope.ledger.launches, 3);  // an empty RowMap is still the call's pass
  EXPECT_EQ(scope.ledger.host_syncs, 1);
  EXPECT_TRUE(scope.ledger.complete());
}

TEST(Traffic, TheHostPolicyMarksAThrustAlgorithmOutsideTheTemplates) {
  LedgerScope scope;
  Workspace ws(System::kHost);
  auto policy = HostPolicy(ws);
  std::vector<float> x(4, 1.0f), y(4);
  thrust::transform(policy, x.begin(), x.end(), y.begin(), [](float v) { return 2 * v; });
  EXPECT_EQ(y, (std::vector<float>(4, 2.0f)));
  EXPECT_FALSE(scope.ledger.complete());
  EXPECT_EQ(scope.ledger.raw_passes["transform"], 1);
  // Its temporaries still come from the workspace.
  PolicyScratch<float, decltype(policy)> scratch(policy, 16);
  EXPECT_GE(ws.peak_bytes(), 16 * sizeof(float));
}

}  // namespace
}  // namespace verlconf::cuda
