// Invariants of the entropy loss (compute_entropy_loss), each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "properties/testing.h"

namespace verlconf {
namespace {

using testing::ArbitraryParams;
using testing::RunOracle;

Case Gen() { return FindSpec("compute_entropy_loss", "policy_loss")->generate(*ArbitraryParams()); }

// softmax and the entropy are unchanged when a token's logits all move by the same
// amount, so the loss does not move (up to rounding) and its gradient has no component
// along that direction: the gradient of every token sums to 0 over the vocabulary.
RC_GTEST_PROP(EntropyLoss, ShiftInvariantAndGradientSumsToZero, ()) {
  Case c = Gen();
  const Result r = RunOracle(c);
  const double loss = r.outputs.at("entropy_loss")[0];
  if (std::isnan(loss)) return;  // agg_loss's 0/0 on an empty selection
  Array z = c.Input("logits");
  const int64_t V = z.shape.at(2);
  const Array& g = r.grads.at("logits");
  for (int64_t k = 0; k * V < z.size(); ++k) {
    double sum = 0.0, scale = 0.0;
    for (int64_t v = 0; v < V; ++v) sum += g[k * V + v], scale += std::fabs(g[k * V + v]);
    RC_ASSERT(std::fabs(sum) <= 1e-13 * std::max(1.0, scale));
    const double shift = static_cast<double>(k % 7) - 3.0;
    for (int64_t v = 0; v < V; ++v) z[k * V + v] += shift;
  }
  c.inputs["logits"] = z;
  const double moved = RunOracle(c).outputs.at("entropy_loss")[0];
  RC_ASSERT(std::fabs(moved - loss) <= 1e-12 * std::max(1.0, std::fabs(loss)));
}

// Each token's entropy lies in [0, log V]; token-mean averages the valid tokens, so the
// loss lies there too (an empty selection gives agg_loss's NaN, skipped).
RC_GTEST_PROP(EntropyLoss, TokenMeanWithinZeroAndLogV, ()) {
  Case c = Gen();
  c.config.Set("loss_agg_mode", std::string("token-mean"));
  const double loss = RunOracle(c).outputs.at("entropy_loss")[0];
  if (std::isnan(loss)) return;
  const double logv = std::log(static_cast<double>(c.Input("logits").shape.at(2)));
  RC_ASSERT(loss >= -1e-12);
  RC_ASSERT(loss <= logv + 1e-12);
}

}  // namespace
}  // namespace verlconf
