// Invariants of agg_loss, each with the reason it must hold.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/errors.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

using oracle::agg_loss;
using oracle::agg_loss_weights;
using oracle::GlobalBatchInfo;
using testing::ArbitraryParams;
using testing::Close;
using testing::Generate;
using testing::NanPolicy;
using testing::Tol;

struct Batch {
  Array loss, mask;
};

Batch Draw() {
  const Case c = Generate("token-mean", *ArbitraryParams());
  return {c.Input("loss_mat"), c.Input("loss_mask")};
}

double Count(const Array& m) {
  double n = 0;
  for (double v : m.data) n += v;
  return n;
}

// An all-masked batch divides 0 by 0 (NaN), as verl does; both sides of an identity
// then are NaN.
constexpr Tol kTight{1e-12, 1e-12};

// token-mean is token-sum over the number of valid tokens.
RC_GTEST_PROP(Agg, TokenMeanIsTokenSumOverCount, ()) {
  const Batch b = Draw();
  const double n = Count(b.mask);
  RC_PRE(n > 0);
  RC_ASSERT(Close(agg_loss(b.loss, b.mask, "token-mean", {}), agg_loss(b.loss, b.mask, "token-sum", {}) / n, kTight,
                  NanPolicy::kNanEqualsNan));
}

// -norm divides seq-mean-token-sum by a constant horizon (T by default).
RC_GTEST_PROP(Agg, SumNormIsSumOverHorizon, ()) {
  const Batch b = Draw();
  const double sum = agg_loss(b.loss, b.mask, "seq-mean-token-sum", {});
  RC_ASSERT(Close(agg_loss(b.loss, b.mask, "seq-mean-token-sum-norm", {}), sum / static_cast<double>(b.mask.cols()),
                  kTight, NanPolicy::kNanEqualsNan));
  GlobalBatchInfo g;
  g.loss_scale_factor = 123.0;
  RC_ASSERT(
      Close(agg_loss(b.loss, b.mask, "seq-mean-token-sum-norm", g), sum / 123.0, kTight, NanPolicy::kNanEqualsNan));
}

// When every sequence has the same number of valid tokens, averaging per sequence and
// then over sequences is the same as averaging over tokens (up to verl's 1e-8).
RC_GTEST_PROP(Agg, EqualLengthsMakeSeqMeanTokenMeanATokenMean, ()) {
  Batch b = Draw();
  const int64_t len = *rc::gen::inRange<int64_t>(1, b.mask.cols() + 1);
  for (int64_t i = 0; i < b.mask.rows(); ++i)
    for (int64_t t = 0; t < b.mask.cols(); ++t) b.mask.at(i, t) = t < len ? 1.0 : 0.0;
  const double x = agg_loss(b.loss, b.mask, "seq-mean-token-mean", {}), y = agg_loss(b.loss, b.mask, "token-mean", {});
  RC_ASSERT(Close(x, y, Tol{1e-7, 1e-7}, NanPolicy::kNanFails));
}

// seq-mean-token-mean gives every live sequence the same total weight, however long.
RC_GTEST_PROP(Agg, SeqMeanTokenMeanWeighsSequencesEqually, ()) {
  const Batch b = Draw();
  const Array w = agg_loss_weights(b.mask, "seq-mean-token-mean", {});
  double first = -1;
  for (int64_t i = 0; i < w.rows(); ++i) {
    double row = 0, m = 0;
    for (int64_t t = 0; t < w.cols(); ++t) row += w.at(i, t), m += b.mask.at(i, t);
    if (m == 0) continue;
    if (first < 0) first = row;
    RC_ASSERT(std::fabs(row - first) <= 1e-7 * first);
  }
}

// Every mode is linear in the loss matrix, and the weights are its gradient.
RC_GTEST_PROP(Agg, LinearWithWeightsAsGradient, ()) {
  GenParams p = *ArbitraryParams();
  const Case first = Generate("token-mean", p);
  p.seed += 1;  // same shape, other values
  const Batch b = {first.Input("loss_mat"), first.Input("loss_mask")};
  const Batch c = {Generate("token-mean", p).Input("loss_mat"), b.mask};
  const double alpha = *rc::gen::inRange(-20, 20) / 4.0;
  for (const char* mode : oracle::kAggModes) {
    Array mix = b.loss;
    for (int64_t k = 0; k < mix.size(); ++k) mix[k] = b.loss[k] + alpha * c.loss[k];
    const double lhs = agg_loss(mix, b.mask, mode, {});
    const double rhs = agg_loss(b.loss, b.mask, mode, {}) + alpha * agg_loss(c.loss, b.mask, mode, {});
    RC_ASSERT(Close(lhs, rhs, Tol{1e-10, 1e-10}, NanPolicy::kNanEqualsNan));
    const Array w = agg_loss_weights(b.mask, mode, {});
    double dot = 0;
    for (int64_t k = 0; k < w.size(); ++k) dot += w[k] * b.loss[k];
    RC_ASSERT(std::isnan(lhs) ||
              Close(agg_loss(b.loss, b.mask, mode, {}), dot, Tol{1e-10, 1e-10}, NanPolicy::kNanFails));
  }
}

// With dp ranks each holding the same micro-batch and the global counts given, the
// dp_size scaling must cancel: the loss equals the single-rank loss.
RC_GTEST_PROP(Agg, DataParallelScalingCancels, ()) {
  const Batch b = Draw();
  const int64_t dp = *rc::gen::inRange<int64_t>(2, 9);
  double alive = 0;
  for (int64_t i = 0; i < b.mask.rows(); ++i) {
    double m = 0;
    for (int64_t t = 0; t < b.mask.cols(); ++t) m += b.mask.at(i, t);
    alive += m > 0;
  }
  GlobalBatchInfo g;
  g.dp_size = dp;
  g.batch_num_tokens = Count(b.mask) * dp;
  g.global_batch_size = alive * dp;
  for (const char* mode : oracle::kAggModes) {
    if (std::string(mode) == "token-sum") continue;  // a sum has nothing to cancel: scaled by dp
    RC_ASSERT(
        Close(agg_loss(b.loss, b.mask, mode, g), agg_loss(b.loss, b.mask, mode, {}), kTight, NanPolicy::kNanEqualsNan));
  }
  RC_ASSERT(Close(agg_loss(b.loss, b.mask, "token-sum", g), dp * agg_loss(b.loss, b.mask, "token-sum", {}), kTight,
                  NanPolicy::kNanEqualsNan));
}

// Padding columns are masked out and change nothing (the -norm default divisor is T,
// so that mode gets an explicit factor).
RC_GTEST_PROP(Agg, PaddingInvariant, ()) {
  const Batch b = Draw();
  Case c;
  c.inputs["l"] = b.loss;
  c.inputs["m"] = b.mask;
  const Case p = testing::PadTokens(c, *rc::gen::inRange<int64_t>(1, 6));
  GlobalBatchInfo g;
  g.loss_scale_factor = 16.0;
  for (const char* mode : oracle::kAggModes)
    RC_ASSERT(Close(agg_loss(p.Input("l"), p.Input("m"), mode, g), agg_loss(b.loss, b.mask, mode, g), kTight,
                    NanPolicy::kNanEqualsNan));
}

// verl refuses dp_size > 1 without the global count the mode needs.
TEST(Agg, DataParallelWithoutGlobalCountsRaises) {
  Array l = Array::Matrix(2, 2), m = Array::Matrix(2, 2);
  for (double& v : m.data) v = 1;
  GlobalBatchInfo g;
  g.dp_size = 2;
  for (const char* mode : oracle::kAggModes) {
    if (std::string(mode) == "token-sum") {
      EXPECT_NO_THROW(agg_loss(l, m, mode, g));
      continue;
    }
    EXPECT_THROW(agg_loss(l, m, mode, g), VerlError) << mode;
  }
  EXPECT_THROW(agg_loss(l, m, "token-avg", {}), VerlError);
}

// An all-masked batch divides 0 by 0, as verl does: NaN loss, zero gradient.
TEST(Agg, EmptyBatchIsNanWithZeroGradient) {
  Array l = Array::Matrix(2, 3), m = Array::Matrix(2, 3);
  for (const char* mode : {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean"}) {
    EXPECT_TRUE(std::isnan(agg_loss(l, m, mode, {}))) << mode;
    for (double w : agg_loss_weights(m, mode, {}).data) EXPECT_EQ(w, 0.0) << mode;
  }
}

}  // namespace
}  // namespace verlconf
