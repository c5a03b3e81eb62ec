// Invariants of the critic's clipped value loss (compute_value_loss), each with the
// reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::Close;
using testing::NanPolicy;
using testing::RunOracle;
using testing::Tol;

Case Gen() { return FindSpec("compute_value_loss", "policy_loss")->generate(*ArbitraryParams()); }

// The unclipped loss 0.5 * agg_loss((v - R)^2) and its gradient w * (v - R).
double Unclipped(const Case& c, Array* grad) {
  const Array& v = c.Input("vpreds");
  const Array& R = c.Input("returns");
  const Array& mask = c.Input("response_mask");
  Array sq(mask.shape, mask.dtype);
  for (int64_t k = 0; k < sq.size(); ++k) sq[k] = (v[k] - R[k]) * (v[k] - R[k]);
  const std::string mode = c.config.String("loss_agg_mode", "token-mean");
  const auto global = oracle::ReadGlobalBatchInfo(c.config);
  if (grad) {
    const Array w = oracle::agg_loss_weights(mask, mode, global);
    *grad = Array(mask.shape, mask.dtype);
    for (int64_t k = 0; k < sq.size(); ++k) (*grad)[k] = w[k] * (v[k] - R[k]);
  }
  return 0.5 * oracle::agg_loss(sq, mask, mode, global);
}

// The clipped loss takes max(l1, l2) >= l1 token by token and every aggregation weight
// is >= 0, so it is never below the unclipped loss; the clip fraction is a fraction.
RC_GTEST_PROP(ValueLoss, NeverBelowTheUnclippedLoss, ()) {
  const Case c = Gen();
  const Result r = RunOracle(c);
  const double loss = r.outputs.at("vf_loss")[0];
  const double plain = Unclipped(c, nullptr);
  // (Both are NaN together: agg_loss's NaN on an empty selection depends on the mask only.)
  RC_ASSERT(std::isnan(loss) == std::isnan(plain));
  if (!std::isnan(loss)) RC_ASSERT(loss >= plain - 1e-12 * std::fabs(plain));
  const double f = r.metrics.at("vf_clipfrac");
  RC_ASSERT(f >= 0.0 && f <= 1.0);
}

// A clip range wider than any |vpreds - values| leaves clip_by_value the identity
// (strictly inside both bounds, so torch's min/max pass the full gradient), l2 == l1
// everywhere: the loss and gradient are the plain squared error's and nothing counts
// as clipped.
RC_GTEST_PROP(ValueLoss, WideClipRangeIsPlainSquaredError, ()) {
  Case c = Gen();
  c.config.Set("cliprange_value", 1e6);
  const Result r = RunOracle(c);
  Array g;
  RC_ASSERT(Close(r.outputs.at("vf_loss")[0], Unclipped(c, &g), Tol{1e-12, 1e-14}, NanPolicy::kNanEqualsNan));
  const Array& got = r.grads.at("vpreds");
  for (int64_t k = 0; k < g.size(); ++k) RC_ASSERT(Close(got[k], g[k], Tol{1e-12, 1e-15}, NanPolicy::kNanEqualsNan));
  RC_ASSERT(r.metrics.at("vf_clipfrac") == 0.0);
}

// Where the clip is active and l2 > l1 the loss is constant in vpreds (the clipped
// value does not move with it): verl's value loss stops pulling such a token. So on the
// tokens counted by vf_clipfrac the gradient is exactly 0.
RC_GTEST_PROP(ValueLoss, ClippedTokensGetNoGradient, ()) {
  const Case c = Gen();
  const Result r = RunOracle(c);
  const Array& v = c.Input("vpreds");
  const Array& V = c.Input("values");
  const Array& R = c.Input("returns");
  const double cr = c.config.Double("cliprange_value", 0.5);
  const Array& g = r.grads.at("vpreds");
  for (int64_t k = 0; k < v.size(); ++k) {
    const double vc = std::max(std::min(v[k], V[k] + cr), V[k] - cr);
    const double l1 = (v[k] - R[k]) * (v[k] - R[k]), l2 = (vc - R[k]) * (vc - R[k]);
    if (vc != v[k] && l2 > l1) RC_ASSERT(g[k] == 0.0);
  }
}

}  // namespace
}  // namespace verlconf
