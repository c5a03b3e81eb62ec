// The oracle's vector-Jacobian products (what verl's stop-gradients leave of each
// tensor output's gradient) on random cases with random projections P, for every
// registry function that declares vjp_inputs:
//  - where verl passes gradient (a KL estimate, a masked mean, a whitening), the VJP is
//    the derivative of sum(P * output), checked against central differences; for the
//    straight-through KL names ("k3+") of sum(P * k2), the surrogate verl's construction
//    differentiates (as gradcheck_test does);
//  - where verl detaches the output or builds it from comparisons (IS weights, rejection
//    masks), the VJP is exactly zero, although sum(P * output) does move with the input
//    (checked too: the IS weights do depend on the log-ratio, so a zero is a stop-gradient
//    and not a constant function).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "oracle/core/errors.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::RunOracle;

// sum(P * output) at `c` (no projections in c: the plain forward).
double Projected(const Case& c, const std::string& output, const Array& p) {
  const Result r = RunOracle(c);
  const Array& out = r.outputs.at(output);
  double s = 0;
  for (int64_t k = 0; k < out.size(); ++k) s += p[k] * out[k];
  return s;
}

double CentralDifference(Case c, const std::string& output, const Array& p, const std::string& input, int64_t k,
                         double h) {
  const double x = c.inputs[input][k];
  c.inputs[input][k] = x + h;
  const double up = Projected(c, output, p);
  c.inputs[input][k] = x - h;
  const double down = Projected(c, output, p);
  return (up - down) / (2 * h);
}

Array RandomProjection(const Array& like) {
  Array p(like.shape, like.dtype);
  for (double& x : p.data) x = *rc::gen::inRange<int>(-4000, 4001) / 1000.0;
  return p;
}

// Per function: detached outputs whose projected value moved under a perturbation.
std::map<std::string, int>& MovedDetached() {
  static std::map<std::string, int> m;
  return m;
}

void CheckFunction(const FunctionSpec& spec) {
  Case c = spec.generate(*ArbitraryParams(DType::kFloat64, 8, 12));
  Result plain;
  try {
    plain = RunOracle(c);
  } catch (const VerlError&) {
    RC_SUCCEED("verl raises on these inputs; nothing to differentiate");
  }
  RC_ASSERT(plain.vjps.empty());  // no projections, no VJPs
  Case projected = c;
  for (const OutputSpec& o : spec.outputs) {
    auto it = plain.outputs.find(o.name);
    if (o.kind == OutputKind::kTensor && it != plain.outputs.end())
      projected.projections[o.name] = RandomProjection(it->second);
  }
  const Result r = RunOracle(projected);
  Case surrogate = c;
  if (spec.straight_through) surrogate.function = spec.straight_through->gradient_of;
  for (const auto& [output, p] : projected.projections) {
    for (const std::string& input : spec.vjp_inputs) {
      const std::string field = output + "/" + input;
      RC_ASSERT(r.vjps.count(field) == 1u);
      const Array& v = r.vjps.at(field);
      const Array& x = c.Input(input);
      RC_ASSERT(v.shape == x.shape);
      if (spec.VjpIsZero(output)) {
        for (double g : v.data) RC_ASSERT(g == 0.0);
        for (int probe = 0; probe < 3; ++probe) {
          const int64_t k = *rc::gen::inRange<int64_t>(0, x.size());
          try {
            if (CentralDifference(c, output, p, input, k, 1e-6 * std::max(1.0, std::fabs(x[k]))) != 0.0) {
              ++MovedDetached()[spec.name + ":" + output];
              break;
            }
          } catch (const VerlError&) {
            // The nudge made verl raise (IcePop rejecting every weight): no value to difference.
          }
        }
        continue;
      }
      const Case& at = spec.straight_through ? surrogate : c;
      if (!std::isfinite(Projected(at, output, p))) RC_SUCCEED("NaN output (verl's 0/0): no derivative to take");
      for (int probe = 0; probe < std::min<int64_t>(x.size(), 6); ++probe) {
        const int64_t k = *rc::gen::inRange<int64_t>(0, x.size());
        const double scale = std::max(1.0, std::fabs(x[k]));
        // A kink (clamp bound) inside [x - h, x + h] spoils one step but not a much
        // smaller one; smooth points agree at both.
        const double num1 = CentralDifference(at, output, p, input, k, 1e-5 * scale);
        const double num2 = CentralDifference(at, output, p, input, k, 1e-7 * scale);
        const double tol1 = 1e-6 * (1 + std::fabs(v[k])), tol2 = 1e-4 * (1 + std::fabs(v[k]));
        RC_ASSERT(std::fabs(num1 - v[k]) <= tol1 || std::fabs(num2 - v[k]) <= tol2);
      }
    }
  }
}

TEST(Vjp, EveryDeclaredFunction) {
  int checked = 0, zero_specs = 0;
  for (const auto& spec : Registry()) {
    // "full" and "full+" have no values (verl raises); every other function with VJPs
    // needs a generator to be checked here.
    if (spec.vjp_inputs.empty() || spec.name.rfind("full", 0) == 0) continue;
    EXPECT_TRUE(static_cast<bool>(spec.generate)) << spec.name << " declares VJPs but has no generator";
    if (!spec.generate) continue;
    ++checked;
    zero_specs += !spec.vjp_zero_outputs.empty();
    const auto result = rc::check("VJPs of " + spec.family + "/" + spec.name + " (central differences / zero)",
                                  [&spec] { CheckFunction(spec); });
    EXPECT_TRUE(result) << spec.name;
  }
  // Which functions have VJPs, and which of those are zero where verl detaches, is the
  // registry's to say (golden_test holds it to the goldens); here each kind must occur.
  EXPECT_GT(checked, zero_specs);
  EXPECT_GT(zero_specs, 0);
  // The IS weights move with the log-ratio: their zero VJP is verl's .detach(), which the
  // check would catch being dropped.
  int moved_weights = 0;
  for (const auto& [key, n] : MovedDetached())
    moved_weights += key.find("rollout_is_weights") != std::string::npos ? n : 0;
  EXPECT_GT(moved_weights, 0);
}

}  // namespace
}  // namespace verlconf
