// Invariants of the KL estimators, each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/kl/kl_penalty.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using oracle::kl_grad_logprob;
using oracle::kl_value;
using oracle::ParseKlName;

double LogRatio() { return *rc::gen::inRange(-400000, 400000) / 10000.0; }  // [-40, 40]
double Base() { return -*rc::gen::inRange(1, 60000) / 10000.0; }

// k2 and k3 are squares / convex gaps: never negative (k1 can be).
RC_GTEST_PROP(Kl, K2K3AbsNonNegative, ()) {
  const double ref = Base(), lp = ref + LogRatio();
  for (const char* n : {"abs", "k2", "k3", "mse", "low_var_kl"}) RC_ASSERT(kl_value(ParseKlName(n), lp, ref) >= 0.0);
}

// k3 = exp(-d) + d - 1 = d^2/2 - d^3/6 + ...: it matches k2 to second order, the
// difference bounded by |d|^3 / 6 (times a little) for small log-ratios.
RC_GTEST_PROP(Kl, K3AgreesWithK2ToSecondOrder, ()) {
  const double ref = Base(), d = *rc::gen::inRange(-1000, 1000) / 10000.0;  // |d| <= 0.1
  const double k2 = kl_value(ParseKlName("k2"), ref + d, ref), k3 = kl_value(ParseKlName("k3"), ref + d, ref);
  const double ad = std::fabs(d);
  RC_ASSERT(std::fabs(k3 - k2) <= 1.2 * ad * ad * ad / 6.0 + 1e-15);
}

// verl's aliases are the same estimator.
RC_GTEST_PROP(Kl, AliasesAgree, ()) {
  const double ref = Base(), lp = ref + LogRatio();
  for (auto [a, b] :
       {std::pair{"kl", "k1"}, {"mse", "k2"}, {"low_var_kl", "k3"}, {"kl+", "k1+"}, {"low_var_kl+", "k3+"}}) {
    RC_ASSERT(kl_value(ParseKlName(a), lp, ref) == kl_value(ParseKlName(b), lp, ref));
    RC_ASSERT(kl_grad_logprob(ParseKlName(a), lp, ref) == kl_grad_logprob(ParseKlName(b), lp, ref));
  }
}

// The "+" variants are straight-through: k-value forward, k2 gradient backward.
RC_GTEST_PROP(Kl, StraightThroughKeepsValueTakesK2Gradient, ()) {
  const double ref = Base(), lp = ref + LogRatio();
  for (const char* n : {"kl", "abs", "mse", "low_var_kl"}) {
    const std::string plus = std::string(n) + "+";
    RC_ASSERT(kl_value(ParseKlName(plus), lp, ref) == kl_value(ParseKlName(n), lp, ref));
    RC_ASSERT(kl_grad_logprob(ParseKlName(plus), lp, ref) == lp - ref);
  }
}

// k3 is clamped to [-10, 10]; beyond the clamp its gradient is zero (torch.clamp).
RC_GTEST_PROP(Kl, K3ClampedWithZeroGradientOutside, ()) {
  const double ref = Base(), lp = ref + LogRatio();
  const double v = kl_value(ParseKlName("k3"), lp, ref);
  RC_ASSERT(v <= 10.0);
  if (v == 10.0) RC_ASSERT(kl_grad_logprob(ParseKlName("k3"), lp, ref) == 0.0);
}

// k1 is antisymmetric in its arguments.
RC_GTEST_PROP(Kl, K1Antisymmetric, ()) {
  const double a = Base(), b = Base();
  RC_ASSERT(kl_value(ParseKlName("k1"), a, b) == -kl_value(ParseKlName("k1"), b, a));
}

// "full" needs vocabulary logits; verl raises NotImplementedError, and so do we.
TEST(Kl, FullRaisesNotImplemented) {
  for (const char* n : {"full", "full+", "k4"}) {
    try {
      ParseKlName(n);
      FAIL() << n;
    } catch (const VerlError& e) {
      EXPECT_EQ(e.kind(), "NotImplementedError") << n;
    }
  }
}

}  // namespace
}  // namespace verlconf
