// The oracle's analytic gradients against central differences, for every registry
// function that declares gradients. Stop-gradient parts are held fixed by
// construction: IS weights are separate inputs that are not perturbed, and for the
// straight-through KL names ("k3+") the finite difference is taken of the backward
// surrogate k2, which is exactly what verl's construction differentiates.
//
// Policy losses with a .detach()ed factor (gspo, cispo, dppo_tv, dppo_kl) have a
// gradient that is *not* the derivative of their value: GSPO's sequence ratio depends
// on every token of the row, but verl routes the gradient only through
// log_prob - sg[log_prob]; CISPO's and DPPO's ratios (and DPPO's mask) are constants to
// autograd. Differencing the loss would test the wrong thing, so for these the
// difference is taken of FunctionSpec::stop_gradient_objective: the loss re-evaluated
// at the perturbed point with every detached value held at the unperturbed one, whose
// derivative is by construction what verl's backward computes. clip_cov and kl_cov use
// it too: their token pick depends on log_prob but carries no gradient, so it is held
// at the unperturbed point's pick.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::RunOracle;

// The scalar the gradient is of: the loss, or the sum of an element-wise output.
// With `base`, a spec's stop-gradient parts are taken from there.
double Objective(const FunctionSpec& spec, const Case& c, const Case* base = nullptr) {
  if (base && spec.stop_gradient_objective) return spec.stop_gradient_objective(*base, c);
  const Result r = RunOracle(c);
  const Array& out = r.outputs.at(spec.outputs.at(0).name);
  double s = 0;
  for (double v : out.data) s += v;
  return s;
}

double CentralDifference(const FunctionSpec& spec, Case c, const std::string& input, int64_t k, double h) {
  const Case base = c;
  const double x = c.inputs[input][k];
  c.inputs[input][k] = x + h;
  const double up = Objective(spec, c, &base);
  c.inputs[input][k] = x - h;
  const double down = Objective(spec, c, &base);
  return (up - down) / (2 * h);
}

void CheckFunction(const FunctionSpec& spec) {
  Case c = spec.generate(*ArbitraryParams(DType::kFloat64, 8, 12));
  Result analytic;
  try {
    analytic = RunOracle(c);
  } catch (const VerlError&) {
    RC_SUCCEED("verl raises on these inputs (e.g. a mask sum of 1); nothing to differentiate");
  }
  if (!std::isfinite(Objective(spec, c)))
    RC_SUCCEED("the loss is NaN (verl's 0/0 on an all-masked batch): no derivative to take");
  // A straight-through estimator's gradient is that of another entry: differentiate it.
  const FunctionSpec& surrogate =
      spec.straight_through ? *FindSpec(spec.straight_through->gradient_of, spec.family) : spec;
  if (spec.straight_through) c.function = surrogate.name;
  for (const std::string& input : spec.grads) {
    const Array& g = analytic.grads.at(input);
    const int64_t n = g.size();
    for (int probe = 0; probe < std::min<int64_t>(n, 6); ++probe) {
      const int64_t k = *rc::gen::inRange<int64_t>(0, n);
      const double scale = std::max(1.0, std::fabs(c.inputs[input][k]));
      // A kink (clip boundary, clamp) inside [x - h, x + h] spoils one step size but
      // not a much smaller one; smooth points agree at both.
      const double num1 = CentralDifference(surrogate, c, input, k, 1e-5 * scale);
      const double num2 = CentralDifference(surrogate, c, input, k, 1e-7 * scale);
      const double tol1 = 1e-6 * (1 + std::fabs(g[k])), tol2 = 1e-4 * (1 + std::fabs(g[k]));
      RC_ASSERT(std::fabs(num1 - g[k]) <= tol1 || std::fabs(num2 - g[k]) <= tol2);
    }
  }
}

TEST(GradCheck, EveryDifferentiatedFunction) {
  int checked = 0;
  for (const auto& spec : Registry()) {
    // "full" and "full+" have no values (verl raises); every other function with a
    // gradient needs a generator to be checked here.
    if (spec.grads.empty() || spec.name.rfind("full", 0) == 0) continue;
    EXPECT_TRUE(static_cast<bool>(spec.generate)) << spec.name << " declares gradients but has no generator";
    if (!spec.generate) continue;
    ++checked;
    const auto result = rc::check("analytic gradient of " + spec.name + " matches central differences",
                                  [&spec] { CheckFunction(spec); });
    EXPECT_TRUE(result) << spec.name;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace verlconf
