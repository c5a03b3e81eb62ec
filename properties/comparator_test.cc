// The comparator must catch planted errors, call vacuous checks MISTRUSTED, and say
// where and by how much things differ. A comparator that cannot fail proves nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "oracle/core/check.h"
#include "oracle/core/compare.h"
#include "oracle/core/registry.h"

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

}  // namespace
}  // namespace verlconf
