// Invariants of the actor-side KL loss (actor_kl_loss), each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/kl/kl_penalty.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::kExact;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

Case Gen() { return FindSpec("actor_kl_loss", "policy_loss")->generate(*ArbitraryParams()); }

// On the reference policy (log_prob == ref_log_prob) every estimator is 0, and so is the
// slope of all but k1 (k2: half the squared log-ratio, k3: e^x - 1 - x, abs: |x| whose
// subgradient torch takes as 0 at 0; the '+' forms use k2's slope). k1 is the log-ratio
// itself, slope 1: its term still pulls, by coef times the aggregation weight.
RC_GTEST_PROP(ActorKlLoss, ZeroOnTheReferencePolicy, ()) {
  Case c = Gen();
  c.inputs["log_prob"] = c.Input("ref_log_prob");
  const Result r = RunOracle(c);
  const double t = r.outputs.at("kl_term")[0];
  RC_ASSERT(std::isnan(t) || t == 0.0);
  const std::string type = c.config.String("kl_loss_type", "");
  if (type == "kl" || type == "k1") return;
  for (double g : r.grads.at("log_prob").data) RC_ASSERT(std::isnan(g) || g == 0.0);
}

// The '+' names are straight-through: the value of the base estimator with the gradient
// of k2. So actor_kl_loss with "X+" has X's term and metric and k2's gradient, whatever
// the aggregation (agg_loss is linear and the same weights apply to both).
RC_GTEST_PROP(ActorKlLoss, StraightThroughIsValueOfBaseGradientOfK2, ()) {
  Case c = Gen();
  // The case's estimator and its straight-through form, as the kl registry declares them.
  const FunctionSpec* kl = FindSpec(c.config.String("kl_loss_type", "low_var_kl"), "kl");
  RC_ASSERT(kl != nullptr);
  const std::string base = kl->straight_through ? kl->straight_through->value_of : kl->name;
  const FunctionSpec* st = nullptr;
  for (const FunctionSpec& s : Registry())
    if (s.family == "kl" && s.straight_through && s.straight_through->value_of == base) st = &s;
  RC_ASSERT(st != nullptr);
  c.config.Set("kl_loss_type", st->name);
  const Result plus = RunOracle(c);
  c.config.Set("kl_loss_type", base);
  const Result value = RunOracle(c);
  c.config.Set("kl_loss_type", st->straight_through->gradient_of);
  const Result k2 = RunOracle(c);
  RC_ASSERT(Close(plus.outputs.at("kl_term")[0], value.outputs.at("kl_term")[0], kExact, NanPolicy::kNanEqualsNan));
  RC_ASSERT(Close(plus.metrics.at("kl_loss"), value.metrics.at("kl_loss"), kExact, NanPolicy::kNanEqualsNan));
  const Array& g = plus.grads.at("log_prob");
  for (int64_t k = 0; k < g.size(); ++k)
    RC_ASSERT(Close(g[k], k2.grads.at("log_prob")[k], Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
}

}  // namespace
}  // namespace verlconf
