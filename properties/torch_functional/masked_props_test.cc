// Invariants of verl's masked statistics, each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>

#include "oracle/core/errors.h"
#include "oracle/torch_functional/masked.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Generate;

double MaskSum(const Array& m) {
  double s = 0;
  for (double v : m.data) s += v;
  return s;
}

// The mean of a constant is that constant, shrunk by verl's 1e-8 in the denominator.
RC_GTEST_PROP(Masked, MeanOfConstant, ()) {
  Case c = Generate("masked_mean", *ArbitraryParams());
  const double k = *rc::gen::inRange(-100, 100) / 4.0;
  for (double& v : c.inputs["values"].data) v = k;
  const double m = MaskSum(c.Input("mask"));
  RC_ASSERT(oracle::masked_mean(c.Input("values"), c.Input("mask")) == k * m / (m + 1e-8) ||
            std::fabs(oracle::masked_mean(c.Input("values"), c.Input("mask")) - k * m / (m + 1e-8)) <=
                1e-15 * std::fabs(k));
}

// Values under a zero mask never matter, not even NaN (verl zeroes them first).
RC_GTEST_PROP(Masked, MaskedOutValuesAreIgnored, ()) {
  Case c = Generate("masked_mean", *ArbitraryParams());
  Array poisoned = c.Input("values");
  for (int64_t k = 0; k < poisoned.size(); ++k)
    if (c.Input("mask")[k] == 0.0) poisoned[k] = std::numeric_limits<double>::quiet_NaN();
  RC_ASSERT(oracle::masked_mean(poisoned, c.Input("mask")) == oracle::masked_mean(c.Input("values"), c.Input("mask")));
}

// A variance is non-negative and invariant to shifting every value.
RC_GTEST_PROP(Masked, VarianceNonNegativeAndShiftInvariant, ()) {
  Case c = Generate("masked_var", *ArbitraryParams());
  RC_PRE(MaskSum(c.Input("mask")) >= 2);
  const double v = oracle::masked_var(c.Input("values"), c.Input("mask"), true);
  RC_ASSERT(v >= 0.0);
  Array shifted = c.Input("values");
  const double s = *rc::gen::inRange(-100, 100) / 8.0;
  for (double& x : shifted.data) x += s;
  // The 1e-8 bias of the mean makes the shift visible at ~1e-8 * |s| relative.
  RC_ASSERT(std::fabs(oracle::masked_var(shifted, c.Input("mask"), true) - v) <= 1e-7 * (v + s * s + 1));
}

// Whitening gives zero mean and unit (unbiased) variance over the mask.
RC_GTEST_PROP(Masked, WhitenStandardizes, ()) {
  Case c = Generate("masked_whiten", *ArbitraryParams());
  RC_PRE(MaskSum(c.Input("mask")) >= 2);
  RC_PRE(oracle::masked_var(c.Input("values"), c.Input("mask"), true) > 1e-2);
  const Array w = oracle::masked_whiten(c.Input("values"), c.Input("mask"), true);
  RC_ASSERT(std::fabs(oracle::masked_mean(w, c.Input("mask"))) <= 1e-6);
  RC_ASSERT(std::fabs(oracle::masked_var(w, c.Input("mask"), true) - 1.0) <= 1e-5);
}

// verl's masked_var refuses mask sums 0 and 1 (Bessel's correction divides by M - 1).
TEST(Masked, VarianceErrorsOnMaskSumsZeroAndOne) {
  Array v = Array::Matrix(1, 3), m = Array::Matrix(1, 3);
  EXPECT_THROW(oracle::masked_var(v, m, true), VerlError);
  m[1] = 1;
  EXPECT_THROW(oracle::masked_var(v, m, true), VerlError);
  EXPECT_THROW(oracle::masked_whiten(v, m, true), VerlError);
  EXPECT_NO_THROW(oracle::masked_var(v, m, false));
  m[2] = 1;
  EXPECT_NO_THROW(oracle::masked_var(v, m, true));
}

}  // namespace
}  // namespace verlconf
