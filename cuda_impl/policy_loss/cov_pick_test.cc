// The default picks of clip_cov and kl_cov (no recorded verl pick) made by the CUDA
// code, through Thrust's host system, against the oracle's: on batches whose
// covariances tie in blocks with the top-k cut inside a block, kl_cov's pick must keep
// the lower index first, as oracle::kl_cov_default_selection's stable descending sort
// does; a token picked differently shows in the gradient (ppo_kl_coef * sign(d)) and
// in the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "oracle/judge/judge.h"
#include "oracle/policy_loss/cov.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

// A rows x cols float32 case of `name` whose advantages and log-probs take two values
// each (so the covariance takes few values, each on many tokens), every third token
// masked out, log-ratio 0.1 everywhere.
Case TiedCase(const std::string& name, int64_t rows, int64_t cols) {
  const FunctionSpec* spec = FindSpec(name, "policy_loss");
  GenParams p;
  p.seed = 7;
  p.batch = rows;
  p.tokens = cols;
  p.dtype = DType::kFloat32;
  Case c = spec->generate(p);
  c.inputs.erase("cov_selected");
  c.inputs.erase("rollout_is_weights");
  for (int64_t k = 0; k < rows * cols; ++k) {
    c.inputs["advantages"].data[k] = (k / 5) % 2 ? 1.0 : -1.0;
    c.inputs["log_prob"].data[k] = (k / 3) % 2 ? -0.5 : -1.5;
    c.inputs["old_log_prob"].data[k] = c.inputs["log_prob"].data[k] - 0.125;
    c.inputs["response_mask"].data[k] = k % 3 == 2 ? 0.0 : 1.0;
  }
  c.config.Set("loss_agg_mode", std::string("token-sum"));
  c.name = "tied_" + std::to_string(rows) + "x" + std::to_string(cols);
  return c;
}

void ExpectHostMatchesOracle(Case c) {
  const FunctionSpec& spec = *FindSpec(c.function, "policy_loss");
  const RunFn* host = spec.Implementation(Impl::kCudaHost);
  ASSERT_NE(host, nullptr) << c.function;
  const Result want = spec.oracle(c);
  c.outputs = want.outputs;
  c.grads = want.grads;
  c.metrics = want.metrics;
  const CaseReport r = CheckImplementation(spec, c, *host);
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
}

TEST(CovPick, KlCovTiesGoToTheLowerIndex) {
  // 2/3 of the tokens valid; ratios whose k falls inside the top tie block.
  int cut_in_a_tie = 0;
  for (const double ratio : {0.01, 0.05, 0.2, 0.3, 0.6, 1.0}) {
    Case c = TiedCase("kl_cov", 9, 31);
    c.config.Set("kl_cov_ratio", ratio);
    c.config.Set("ppo_kl_coef", 1.0);
    // Whether the k-th and (k+1)-th largest covariances tie: the pick then depends on
    // the tie rule alone.
    const oracle::PolicyLossInputs in{c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                                      c.Input("response_mask")};
    oracle::CovLossConfig cfg;
    cfg.kl_cov_ratio = ratio;
    const Array cov = oracle::kl_cov_covariance(in);
    std::vector<double> valid;
    for (int64_t k = 0; k < cov.size(); ++k)
      if (in.response_mask[k] > 0) valid.push_back(cov[k]);
    std::sort(valid.begin(), valid.end(), std::greater<double>());
    const size_t kk = static_cast<size_t>(oracle::kl_cov_pick_count(in, cfg));
    if (kk < valid.size() && valid[kk - 1] == valid[kk]) ++cut_in_a_tie;
    ExpectHostMatchesOracle(c);
  }
  EXPECT_GE(cut_in_a_tie, 4);
}

TEST(CovPick, ClipCovTakesTheFirstCandidates) {
  for (const double ratio : {0.01, 0.05, 0.2, 1.0}) {
    Case c = TiedCase("clip_cov", 9, 31);
    c.config.Set("clip_cov_ratio", ratio);
    c.config.Set("clip_cov_lb", -5.0);  // every unclipped valid token is a candidate
    c.config.Set("clip_cov_ub", 5.0);
    ExpectHostMatchesOracle(c);
  }
}

}  // namespace
}  // namespace verlconf
