// The comparator must catch planted errors, call vacuous checks MISTRUSTED, and say
// where and by how much things differ. A comparator that cannot fail proves nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "oracle/judge/compare.h"
#include "oracle/judge/judge.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

Array Ramp(int64_t rows, int64_t cols, DType d = DType::kFloat64) {
  Array a = Array::Matrix(rows, cols, d);
  for (int64_t k = 0; k < a.size(); ++k) a[k] = 0.5 + static_cast<double>(k);
  return a;
}

TEST(Comparator, IdenticalArraysPass) {
  const Array a = Ramp(3, 4);
  const FieldReport r = CompareField("outputs/x", &a, a, DefaultTolerance(DType::kFloat64), false);
  EXPECT_EQ(r.outcome, Outcome::kPassed);
  EXPECT_EQ(r.mismatched, 0);
}

TEST(Comparator, PlantedErrorIsCaughtWithIndexAndPairs) {
  const Array want = Ramp(3, 4);
  Array got = want;
  got.at(2, 1) *= 1.0 + 1e-6;  // far beyond float64's 5.8e-11
  const FieldReport r = CompareField("outputs/advantages", &got, want, DefaultTolerance(DType::kFloat64), false);
  ASSERT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.mismatched, 1);
  EXPECT_EQ(r.worst_index, 2 * 4 + 1);
  EXPECT_NEAR(r.worst_rel, 1e-6, 1e-12);
  const std::string d = r.Describe();
  EXPECT_NE(d.find("outputs/advantages"), std::string::npos) << d;
  EXPECT_NE(d.find("mismatched 1 of 12"), std::string::npos) << d;
  EXPECT_NE(d.find("(2, 1)"), std::string::npos) << d;
  EXPECT_NE(d.find("rtol="), std::string::npos) << d;
}

// The elements shown are the worst, worst first, not the first in memory order; and got
// and want print with enough digits to differ, with their difference.
TEST(Comparator, TheWorstElementsAreShownWithDigitsThatDiffer) {
  Array want = Array::Matrix(4, 8), got = want;
  for (int64_t k = 0; k < want.size(); ++k) want[k] = got[k] = 1.2440830200000001 + static_cast<double>(k);
  for (int64_t k = 0; k < 7; ++k) got[k] = want[k] * (1.0 + 1e-8);  // seven small misses first
  got[29] = want[29] * 2.0;                                         // the worst, late in memory
  got[17] = std::nextafter(want[17], 100.0);                        // within tolerance: not shown
  const FieldReport r = CompareField("outputs/loss", &got, want, DefaultTolerance(DType::kFloat64), false);
  ASSERT_EQ(r.outcome, Outcome::kFailed);
  ASSERT_EQ(r.worst_mismatches.size(), FieldReport::kShownMismatches);
  EXPECT_EQ(r.worst_mismatches.front().index, 29);
  for (size_t i = 1; i < r.worst_mismatches.size(); ++i)
    EXPECT_GE(r.worst_mismatches[i - 1].err_tol, r.worst_mismatches[i].err_tol);
  const std::string d = r.Describe();
  EXPECT_LT(d.find("at (3, 5)"), d.find("at (0, 0)")) << d;
  EXPECT_NE(d.find("diff "), std::string::npos) << d;
  // One float64 ulp apart, printed apart.
  Array a = Array::Scalar(1.24408302), b = Array::Scalar(std::nextafter(1.24408302, 2.0));
  const FieldReport u = CompareField("outputs/loss", &b, a, ExactTolerance(), false);
  ASSERT_EQ(u.outcome, Outcome::kFailed);
  EXPECT_NE(u.Describe().find("got 1.2440830200000002, want 1.24408302"), std::string::npos) << u.Describe();
}

TEST(Comparator, ErrorJustInsideToleranceStillPasses) {
  const Array want = Ramp(1, 8);
  Array got = want;
  const Tolerance tol = DefaultTolerance(DType::kFloat64);
  got[5] = want[5] + 0.5 * (tol.atol + tol.rtol * want[5]);
  EXPECT_EQ(CompareField("f", &got, want, tol, false).outcome, Outcome::kPassed);
  got[5] = want[5] + 2.0 * (tol.atol + tol.rtol * want[5]);
  EXPECT_EQ(CompareField("f", &got, want, tol, false).outcome, Outcome::kFailed);
}

TEST(Comparator, Float32ToleranceIsLooserThanFloat64) {
  const Tolerance t64 = DefaultTolerance(DType::kFloat64), t32 = DefaultTolerance(DType::kFloat32);
  EXPECT_LT(t64.rtol, 1e-10);  // the design's bound for oracle vs float64 goldens
  EXPECT_GT(t32.rtol, t64.rtol);
  EXPECT_GT(t32.atol, t64.atol);
}

TEST(Comparator, AllZeroReferenceIsMistrusted) {
  const Array zero = Array::Matrix(2, 3);
  const FieldReport r = CompareField("outputs/x", &zero, zero, DefaultTolerance(DType::kFloat64), false);
  EXPECT_EQ(r.outcome, Outcome::kMistrusted);
  Array wrong = zero;
  wrong[4] = 1.0;  // but a wrong answer against zeros is still a failure
  EXPECT_EQ(CompareField("outputs/x", &wrong, zero, DefaultTolerance(DType::kFloat64), false).outcome,
            Outcome::kFailed);
}

TEST(Comparator, MissingFieldIsUnsupportedAndShapeMismatchFails) {
  const Array want = Ramp(2, 3);
  EXPECT_EQ(CompareField("f", nullptr, want, DefaultTolerance(DType::kFloat64), false).outcome, Outcome::kUnsupported);
  const Array other = Ramp(3, 2);
  const FieldReport r = CompareField("f", &other, want, DefaultTolerance(DType::kFloat64), false);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_NE(r.note.find("shape"), std::string::npos);
}

TEST(Comparator, NanMatchesOnlyNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Array want = Array::Scalar(nan);
  const Array same = Array::Scalar(nan), number = Array::Scalar(1.0);
  EXPECT_NE(CompareField("f", &same, want, DefaultTolerance(DType::kFloat64), false).outcome, Outcome::kFailed);
  EXPECT_EQ(CompareField("f", &number, want, DefaultTolerance(DType::kFloat64), false).outcome, Outcome::kFailed);
  EXPECT_EQ(CompareField("f", &want, number, DefaultTolerance(DType::kFloat64), false).outcome, Outcome::kFailed);
}

TEST(Comparator, DiscreteOutputsAreExactInFloat64) {
  const Array want = Ramp(1, 4);
  Array got = want;
  got[0] += 1e-15;
  EXPECT_EQ(CompareField("f", &got, want, ExactTolerance(), true).outcome, Outcome::kFailed);
}

// A case-level check through the registry: a case whose masks cover nothing, or whose
// every reference is zero, must not count as a pass.
TEST(Comparator, CaseWithEmptyMaskIsMistrusted) {
  const FunctionSpec* spec = FindSpec("token-mean");
  ASSERT_NE(spec, nullptr);
  Case c;
  c.function = "token-mean";
  c.name = "empty";
  c.inputs["loss_mat"] = Ramp(2, 3);
  c.inputs["loss_mask"] = Array::Matrix(2, 3);
  c.outputs["loss"] = Array::Scalar(std::numeric_limits<double>::quiet_NaN());  // verl: 0/0
  c.grads["loss_mat"] = Array::Matrix(2, 3);
  const CaseReport r = CheckImplementation(*spec, c, spec->oracle);
  EXPECT_EQ(r.outcome, Outcome::kMistrusted) << r.Describe();
}

TEST(Comparator, ExpectedErrorMustBeRaised) {
  const FunctionSpec* spec = FindSpec("masked_var");
  ASSERT_NE(spec, nullptr);
  Case c;
  c.function = "masked_var";
  c.name = "one";
  c.inputs["values"] = Ramp(1, 3);
  Array mask = Array::Matrix(1, 3);
  mask[1] = 1.0;
  c.inputs["mask"] = mask;
  c.expect_error = "ValueError: The sum of the mask is one";
  EXPECT_EQ(CheckImplementation(*spec, c, spec->oracle).outcome, Outcome::kPassed);
  c.expect_error = "AssertionError: something else";
  EXPECT_EQ(CheckImplementation(*spec, c, spec->oracle).outcome, Outcome::kFailed);
  // And a result where verl raised is a failure too.
  const RunFn no_raise = [](const Case&) { return Result{}; };
  EXPECT_EQ(CheckImplementation(*spec, c, no_raise).outcome, Outcome::kFailed);
}

// err/tol is the pass test itself: an element passes exactly when its ratio is <= 1, so a
// field's worst ratio is <= 1 exactly when it has no mismatch. Random values on a
// logarithmic spread, a quarter of the references zero (where a relative error is
// undefined and only atol allows anything), and differences placed within a few ulps of
// the allowed bound, where a ratio computed any other way could round to the wrong side.
TEST(Comparator, ErrorRatioIsThePassTest) {
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const Tolerance tols[] = {DefaultTolerance(DType::kFloat64),
                            DefaultTolerance(DType::kFloat32),
                            ExactTolerance(),
                            {1e-3, 0.0, "rtol only"},
                            {0.0, 1e-6, "atol only"}};
  int64_t passes = 0, fails = 0, near_bound = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const Tolerance& tol = tols[trial % 5];
    Array want = Array::Matrix(4, 8);
    Array got = want;
    for (int64_t k = 0; k < want.size(); ++k) {
      const double w = unit(rng) < 0.25 ? 0.0 : (unit(rng) < 0.5 ? -1 : 1) * std::pow(10.0, 12.0 * unit(rng) - 6.0);
      want[k] = w;
      const double allowed = tol.atol + tol.rtol * std::fabs(w);
      double g;
      const double pick = unit(rng);
      if (pick < 0.3) {  // at the bound, give or take a few ulps
        g = w + (unit(rng) < 0.5 ? -1 : 1) * allowed;
        for (int u = static_cast<int>(8 * unit(rng)) - 4; u != 0; u += u > 0 ? -1 : 1)
          g = std::nextafter(g, u > 0 ? HUGE_VAL : -HUGE_VAL);
        ++near_bound;
      } else if (pick < 0.9) {  // well inside
        g = w + (unit(rng) - 0.5) * allowed;
      } else {  // well outside
        g = w + (unit(rng) < 0.5 ? -1 : 1) * (1.0 + 10.0 * unit(rng)) * (allowed + 1e-300);
      }
      got[k] = g;
      // The documented test, written out independently of ErrorRatio.
      const volatile double lhs = std::fabs(g - w);
      const volatile double rhs = tol.atol + tol.rtol * std::fabs(w);
      const bool within = lhs <= rhs;
      const double ratio = ErrorRatio(g, w, tol);
      ASSERT_EQ(ratio <= 1.0, within) << "got " << g << " want " << w << " rtol " << tol.rtol << " atol " << tol.atol
                                      << " ratio " << ratio;
      ++(within ? passes : fails);
    }
    const FieldReport r = CompareField("outputs/x", &got, want, tol, false);
    ASSERT_EQ(r.outcome == Outcome::kFailed, r.err_tol > 1.0) << r.Describe();
    ASSERT_EQ(r.mismatched > 0, r.err_tol > 1.0) << r.Describe();
    if (r.worst_index >= 0) {
      EXPECT_EQ(ErrorRatio(got[r.worst_index], want[r.worst_index], tol), r.err_tol);
    }
  }
  // Both sides of the bound were exercised, many times.
  EXPECT_GT(passes, 10000);
  EXPECT_GT(fails, 10000);
  EXPECT_GT(near_bound, 10000);
}

TEST(Comparator, ErrorRatioOfSpecialValues) {
  const Tolerance tol = DefaultTolerance(DType::kFloat64);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ErrorRatio(nan, nan, tol), 0.0);
  EXPECT_EQ(ErrorRatio(inf, inf, tol), 0.0);
  EXPECT_EQ(ErrorRatio(-inf, inf, tol), inf);
  EXPECT_EQ(ErrorRatio(nan, 1.0, tol), inf);
  EXPECT_EQ(ErrorRatio(1.0, nan, tol), inf);
  EXPECT_EQ(ErrorRatio(1e308, -1e308, tol), inf);  // the difference overflows
  EXPECT_EQ(ErrorRatio(0.0, 0.0, ExactTolerance()), 0.0);
  EXPECT_EQ(ErrorRatio(1e-300, 0.0, ExactTolerance()), inf);
  // At a zero reference only atol allows anything: an absolute error of 2.16 is a failure
  // by a factor of about 1e13, not a small relative error.
  EXPECT_GT(ErrorRatio(2.16, 0.0, tol), 1e12);
}

// The case's figure follows its outcome: a field failed for a reason no element shows (a
// shape) reads as +inf, a failure on error semantics too, and a pass stays <= 1.
TEST(Comparator, CaseErrorRatioFollowsTheOutcome) {
  const FunctionSpec* spec = FindSpec("masked_var");
  ASSERT_NE(spec, nullptr);
  Case c;
  c.function = "masked_var";
  c.name = "one";
  c.inputs["values"] = Ramp(1, 3);
  Array mask = Array::Matrix(1, 3);
  mask[1] = 1.0;
  c.inputs["mask"] = mask;
  c.expect_error = "ValueError: The sum of the mask is one";
  const CaseReport raised = CheckImplementation(*spec, c, spec->oracle);
  EXPECT_EQ(raised.outcome, Outcome::kPassed);
  EXPECT_FALSE(raised.err_tol.has_value());  // nothing numeric compared
  c.expect_error = "AssertionError: something else";
  const CaseReport wrong = CheckImplementation(*spec, c, spec->oracle);
  EXPECT_EQ(wrong.outcome, Outcome::kFailed);
  ASSERT_TRUE(wrong.err_tol.has_value());
  EXPECT_GT(*wrong.err_tol, 1.0);

  Result want;
  want.outputs["x"] = Ramp(2, 3);
  Result got;
  got.outputs["x"] = Ramp(3, 2);
  Case g;
  g.function = "masked_var";
  g.name = "shape";
  g.outputs = want.outputs;
  FunctionSpec bare;
  bare.name = "bare";
  const CaseReport shape = CompareResult(bare, g, &got, std::nullopt);
  EXPECT_EQ(shape.outcome, Outcome::kFailed);
  ASSERT_TRUE(shape.err_tol.has_value());
  EXPECT_GT(*shape.err_tol, 1.0);
  // An empty reference answered with elements: failed, and so read, with nothing compared.
  g.outputs["x"] = Array::Matrix(0, 3);
  const CaseReport empty = CompareResult(bare, g, &got, std::nullopt);
  EXPECT_EQ(empty.outcome, Outcome::kFailed);
  ASSERT_TRUE(empty.err_tol.has_value());
  EXPECT_GT(*empty.err_tol, 1.0);
  g.outputs = want.outputs;
  const CaseReport same = CompareResult(bare, g, &want, std::nullopt);
  EXPECT_EQ(same.outcome, Outcome::kPassed);
  ASSERT_TRUE(same.err_tol.has_value());
  EXPECT_EQ(*same.err_tol, 0.0);
}

}  // namespace
}  // namespace verlconf
