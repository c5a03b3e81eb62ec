// The float32 judgement of a scalar loss whose per-token terms cancel. A float32 sum of
// n terms rounds against their magnitude sum |W L|, not against the (small) result, so a
// correct float32 implementation can miss a cancelling loss by far more than 256 eps32
// of it; the comparator allows ~(log2 n + 8) eps32 of the magnitude (oracle/judge/tolerance.cc), computed
// from the oracle's run. These cases pin both sides of that: correct float32 sums pass
// where the plain relative bound fails them, and an error beyond the allowance, or any
// error where nothing cancels, still fails.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "oracle/judge/compare.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

constexpr int64_t kRows = 4, kCols = 8192;

// token-sum over kRows x kCols float32 terms of N(0, 1) whose last term cancels the rest
// (the result is about one term's rounding), or all positive when !cancel.
Case SumCase(bool cancel, DType dtype = DType::kFloat32) {
  Case c;
  c.family = "aggregation";
  c.function = "token-sum";
  c.name = cancel ? "cancelling" : "positive";
  c.dtype = dtype;
  Array loss = Array::Matrix(kRows, kCols, dtype), mask = Array::Matrix(kRows, kCols, dtype);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  double sum = 0.0;
  for (int64_t k = 0; k < loss.size(); ++k) {
    const double v = static_cast<float>(cancel ? normal(rng) : std::fabs(normal(rng)) + 0.5);
    loss.data[static_cast<size_t>(k)] = v;
    mask.data[static_cast<size_t>(k)] = 1.0;
    if (k + 1 < loss.size()) sum += v;
  }
  if (cancel) loss.data.back() = static_cast<float>(-sum + 0.25);
  c.inputs["loss_mat"] = loss;
  c.inputs["loss_mask"] = mask;
  return c;
}

const FunctionSpec& TokenSum() {
  const FunctionSpec* s = FindSpec("token-sum", "aggregation");
  EXPECT_NE(s, nullptr);
  return *s;
}

// What a float32 framework computes: a sequential float32 sum (the worst usual order).
double Float32Sum(const Case& c) {
  float acc = 0.0f;
  for (double v : c.inputs.at("loss_mat").data) acc += static_cast<float>(v);
  return acc;
}

// The golden: the oracle's result, as the cuda-host tests use it.
Case WithOracleResult(const FunctionSpec& spec, Case c) {
  const Result r = spec.oracle(c);
  c.outputs = r.outputs;
  return c;
}

RunFn Returning(double value) {
  return [value](const Case&) {
    Result r;
    r.outputs["loss"] = Array::Scalar(value, DType::kFloat32);
    return r;
  };
}

TEST(Float32SumTolerance, CorrectFloat32SumOfCancellingTermsPasses) {
  const FunctionSpec& spec = TokenSum();
  const Case golden = WithOracleResult(spec, SumCase(true));
  const double want = golden.outputs.at("loss").data[0];
  const double got = Float32Sum(golden);
  // The plain float32 bound (relative to |want|) would fail this correct sum.
  const Tolerance plain = DefaultTolerance(DType::kFloat32);
  ASSERT_GT(std::fabs(got - want), plain.atol + plain.rtol * std::fabs(want)) << "the case does not cancel enough";
  const Tolerance t = ToleranceFor(spec, "outputs/loss", golden);
  EXPECT_NE(t.reason.find("float32 sum of 32768 terms"), std::string::npos) << t.reason;
  const CaseReport r = CheckImplementation(spec, golden, Returning(got));
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
}

TEST(Float32SumTolerance, AnErrorBeyondTheMagnitudeAllowanceFails) {
  const FunctionSpec& spec = TokenSum();
  const Case golden = WithOracleResult(spec, SumCase(true));
  const double want = golden.outputs.at("loss").data[0];
  const Tolerance t = ToleranceFor(spec, "outputs/loss", golden);
  const double allowed = t.atol + t.rtol * std::fabs(want);
  const CaseReport r = CheckImplementation(spec, golden, Returning(want + 1.5 * allowed));
  EXPECT_EQ(r.outcome, Outcome::kFailed) << r.Describe();
}

TEST(Float32SumTolerance, WithoutCancellationTheAllowanceIsBelowTheDefaultScale) {
  const FunctionSpec& spec = TokenSum();
  const Case golden = WithOracleResult(spec, SumCase(false));
  const double want = golden.outputs.at("loss").data[0];
  const Tolerance t = ToleranceFor(spec, "outputs/loss", golden);
  const Tolerance plain = DefaultTolerance(DType::kFloat32);
  // Magnitude == |loss| here: the extra allowance is (log2 n + 8) / 256 of the default's.
  EXPECT_LT(t.atol - plain.atol, 0.1 * plain.rtol * std::fabs(want));
  EXPECT_EQ(CheckImplementation(spec, golden, Returning(want * (1 + 1e-4))).outcome, Outcome::kFailed);
  EXPECT_EQ(CheckImplementation(spec, golden, Returning(Float32Sum(golden))).outcome, Outcome::kPassed);
}

TEST(Float32SumTolerance, Float64AndNonFiniteLossesGetNoAllowance) {
  const FunctionSpec& spec = TokenSum();
  const Case g64 = WithOracleResult(spec, SumCase(true, DType::kFloat64));
  EXPECT_EQ(ToleranceFor(spec, "outputs/loss", g64).reason.find("float32 sum"), std::string::npos);
  Case inf = SumCase(true);
  inf.inputs.at("loss_mat").data[3] = INFINITY;
  const Case ginf = WithOracleResult(spec, inf);
  EXPECT_EQ(ToleranceFor(spec, "outputs/loss", ginf).atol, DefaultTolerance(DType::kFloat32).atol);
}

}  // namespace
}  // namespace verlconf
