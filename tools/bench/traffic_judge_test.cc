// The traffic judge can fail: planted entries whose passes declare one token matrix too
// many, or call a Thrust algorithm outside the templates, or raise, against one that moves
// exactly its minimal traffic; the fit recovers a B T + b B + c T + d exactly; an
// exception holds its entry to its own bound and goes stale when it excuses nothing.
#include <gtest/gtest.h>
#include <thrust/transform.h>

#include <string>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/system.cuh"
#include "oracle/core/errors.h"
#include "tools/bench/traffic.h"

namespace verlconf::bench {
namespace {

// y = 2 x over a rows x tokens matrix; `extra` more token matrices declared than needed,
// `raw` the map done by a Thrust algorithm outside the templates.
Result Double(const Case& c, int extra, bool raw) {
  const Array& x = c.inputs.at("x");
  const int64_t rows = x.shape[0], cols = x.shape[1];
  std::vector<float> in(x.data.begin(), x.data.end()), out(in.size());
  cuda::RunEntry(cuda::System::kHost, [&](auto&& policy) {
    if (raw) {
      thrust::transform(policy, in.begin(), in.end(), out.begin(), [](float v) { return 2 * v; });
      return;
    }
    cuda::RowMap(
        policy, rows, cols,
        [&](int64_t i, int64_t t) {
          out[static_cast<size_t>(i * cols + t)] = 2 * in[static_cast<size_t>(i * cols + t)];
        },
        cuda::Footprint().Reads<float>(rows * cols, 1 + extra).Writes<float>(rows * cols));
  });
  Result r;
  Array y(x.shape, c.dtype);
  y.data.assign(out.begin(), out.end());
  r.outputs["y"] = y;
  return r;
}

FunctionSpec Spec() {
  FunctionSpec s;
  s.family = "test";
  s.name = "double";
  s.inputs = {{"x", Role::kTokens}};
  s.outputs = {{"y"}};
  s.generate = [](const GenParams& p) {
    Case c;
    c.function = "double";
    c.dtype = DType::kFloat32;
    c.inputs["x"] = Array::Matrix(p.batch, p.tokens, DType::kFloat32);
    return c;
  };
  return s;
}

TrafficRow Measure(const RunFn& impl, const std::vector<TrafficException>& exceptions = {}) {
  static const FunctionSpec spec = Spec();
  const BenchItem item{"test/double", &spec, {}, nullptr};
  CaseMaker maker;
  TrafficRow row = MeasureTraffic(item, impl, maker);
  JudgeTraffic(row, exceptions);
  return row;
}

TEST(FitBytes, RecoversTheFourCoefficients) {
  const auto f = [](double r, double t) { return 3 * r * t + 5 * r + 7 * t + 11; };
  const double at[4] = {f(32, 256), f(64, 256), f(32, 512), f(64, 512)};
  const BytesModel m = FitBytes(32, 64, 256, 512, at);
  EXPECT_DOUBLE_EQ(m.At(4096, 8192), f(4096, 8192));
}

TEST(Traffic, AnEntryMovingItsMinimalTrafficIsWithin) {
  const TrafficRow row = Measure([](const Case& c) { return Double(c, 0, false); });
  EXPECT_EQ(row.verdict, "ok");
  EXPECT_DOUBLE_EQ(row.ratio(), 1.0);
  EXPECT_DOUBLE_EQ(row.minimal, 8.0 * 4096 * 8192);
  EXPECT_EQ(row.launches, 1);
}

TEST(Traffic, TheBudgetHoldsAtOneAndAHalfAndFailsPastIt) {
  // The minimal traffic is two token matrices (x read, y written).
  const TrafficRow one_more = Measure([](const Case& c) { return Double(c, 1, false); });
  EXPECT_DOUBLE_EQ(one_more.ratio(), 1.5);
  EXPECT_EQ(one_more.verdict, "ok");
  const TrafficRow two_more = Measure([](const Case& c) { return Double(c, 2, false); });
  EXPECT_DOUBLE_EQ(two_more.ratio(), 2.0);
  EXPECT_EQ(two_more.verdict, "over budget");
}

TEST(Traffic, ARawThrustPassIsNotCounted) {
  const TrafficRow row = Measure([](const Case& c) { return Double(c, 0, true); });
  EXPECT_EQ(row.verdict, "not counted");
  EXPECT_EQ(row.raw_passes.at("transform"), 1);
}

TEST(Traffic, AnEntryThatRaisesIsNotJudged) {
  const TrafficRow row = Measure([](const Case&) -> Result { throw VerlError("ValueError", "no"); });
  EXPECT_EQ(row.verdict, "raises");
}

TEST(Traffic, AnExceptionHoldsItsEntryToItsOwnBoundAndGoesStale) {
  const RunFn two_extra = [](const Case& c) { return Double(c, 2, false); };  // 2x
  EXPECT_EQ(Measure(two_extra).verdict, "over budget");
  EXPECT_EQ(Measure(two_extra, {{"test/double", 2.5, "planted"}}).verdict, "ok");
  EXPECT_EQ(Measure(two_extra, {{"test/double", 1.8, "planted"}}).verdict, "over budget");
  const TrafficRow exact =
      Measure([](const Case& c) { return Double(c, 0, false); }, {{"test/double", 2.5, "planted"}});
  EXPECT_EQ(StaleExceptions({exact}, {{"test/double", 2.5, "planted"}}).size(), 1u);
  EXPECT_EQ(StaleExceptions({exact}, {{"test/gone", 2.5, "planted"}}).size(), 1u);
  const TrafficRow twice = Measure(two_extra, {{"test/double", 2.5, "planted"}});
  EXPECT_TRUE(StaleExceptions({twice}, {{"test/double", 2.5, "planted"}}).empty());
}

}  // namespace
}  // namespace verlconf::bench
