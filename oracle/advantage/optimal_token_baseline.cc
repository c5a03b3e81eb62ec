// Mirrors verl 0.9.1 core_algos.compute_optimal_token_baseline_advantage and
// compute_multi_turn_optimal_token_baseline_advantage.
#include "oracle/advantage/optimal_token_baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "oracle/advantage/groups.h"
#include "oracle/core/sum.h"

namespace verlconf::oracle {
namespace {

// W_{i,t}: the running sum of the per-token path-variance proxy over valid tokens, in
// verl's order of operations ((1 - 2 pi) + sum pi^2, then * rho^2, then * mask, cumsum).
// `size` gets the running sum of the sizes its rounding scales with (the terms of w, and
// the cumsum's partial sums).
Array CumulativeW(const Array& old_log_probs, const Array& sum_pi_squared, const Array* rho, const Array& mask,
                  Array* size = nullptr) {
  Array w(mask.shape, mask.dtype);
  if (size) *size = Array(mask.shape, mask.dtype);
  for (int64_t i = 0; i < mask.rows(); ++i) {
    double acc = 0.0, mag = 0.0;
    for (int64_t t = 0; t < mask.cols(); ++t) {
      const double pi = std::exp(old_log_probs.at(i, t));
      double v = 1.0 - 2.0 * pi + sum_pi_squared.at(i, t);
      double terms = 2.0 * pi + std::fabs(1.0 - 2.0 * pi) + std::fabs(sum_pi_squared.at(i, t)) + std::fabs(v);
      if (rho) v *= rho->at(i, t) * rho->at(i, t), terms *= rho->at(i, t) * rho->at(i, t);
      acc += v * mask.at(i, t);
      mag += (terms + std::fabs(acc)) * mask.at(i, t);
      w.at(i, t) = acc;
      if (size) size->at(i, t) = mag;
    }
  }
  return w;
}

// One position's baseline and its rounding bound (in eps): members' returns G, weights W
// and their sizes M.
struct Weighted {
  ExactSum num, den;
  std::vector<double> g, m;
  void Add(double gi, double wi, double mi) {
    num.Add(gi * wi);
    den.Add(wi);
    g.push_back(gi);
    m.push_back(mi);
  }
  double Baseline(double epsilon) const { return num.Value() / (den.Value() + epsilon); }
  double Cancellation(double epsilon) const {
    const double b = Baseline(epsilon);
    double moved = 0.0;
    for (size_t k = 0; k < g.size(); ++k) moved += std::fabs(g[k] - b) * m[k];
    const double d = std::fabs(den.Value() + epsilon);
    return d > 0 ? moved / d : (moved > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  }
};

// The handle_zero_tail rule: the member (row of `rows`) that is alone at the longest
// length, and the second-longest length; -1 when the longest length is tied.
struct Tail {
  int64_t row = -1;
  int64_t from = 0;
};
Tail LongestAlone(const std::vector<int64_t>& rows, const std::vector<double>& lengths) {
  std::vector<double> sorted;
  for (int64_t i : rows) sorted.push_back(lengths[static_cast<size_t>(i)]);
  std::sort(sorted.begin(), sorted.end());
  const double longest = sorted.back(), second = sorted[sorted.size() - 2];
  Tail tail;
  int64_t count = 0;
  for (int64_t i : rows)
    if (lengths[static_cast<size_t>(i)] == longest) ++count, tail.row = i;
  if (count != 1 || !(longest > second)) tail.row = -1;
  tail.from = static_cast<int64_t>(second);
  return tail;
}

}  // namespace

AdvantageReturns optimal_token_baseline_advantage(const Array& rewards, const Array& mask, const Array& index,
                                                  const Array& old_log_probs, const Array& sum_pi_squared,
                                                  const Array* rho, const OtbConfig& cfg, double* cancellation) {
  AdvantageReturns out;
  out.returns = MaskedRewardToGo(rewards, mask);
  Array size;
  const Array w = CumulativeW(old_log_probs, sum_pi_squared, rho, mask, &size);
  const std::vector<double> lengths = RowSums(mask);
  Array baseline(mask.shape, mask.dtype);
  if (cancellation) *cancellation = 0.0;
  for (const auto& members : GroupBy(index).members) {
    if (members.size() < 2) continue;  // a single trajectory keeps its return
    for (int64_t t = 0; t < mask.cols(); ++t) {
      Weighted at;
      for (int64_t i : members)
        at.Add(out.returns.at(i, t) * mask.at(i, t), w.at(i, t) * mask.at(i, t), size.at(i, t) * mask.at(i, t));
      const double b = at.Baseline(cfg.epsilon);
      if (cancellation) *cancellation = std::max(*cancellation, at.Cancellation(cfg.epsilon));
      for (int64_t i : members) baseline.at(i, t) = b;
    }
    if (cfg.handle_zero_tail) {
      const Tail tail = LongestAlone(members, lengths);
      if (tail.row >= 0)
        for (int64_t t = tail.from; t < mask.cols(); ++t) baseline.at(tail.row, t) = 0.0;
    }
  }
  out.advantages = Array(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) out.advantages[k] = (out.returns[k] - baseline[k]) * mask[k];
  return out;
}

AdvantageReturns tir_optimal_token_baseline_advantage(const Array& rewards, const Array& mask, const Array& index,
                                                      const Array& old_log_probs, const Array& sum_pi_squared,
                                                      const Array* rho, const OtbConfig& cfg, double* cancellation) {
  AdvantageReturns out;
  out.returns = MaskedRewardToGo(rewards, mask);
  Array size;
  const Array w = CumulativeW(old_log_probs, sum_pi_squared, rho, mask, &size);
  if (cancellation) *cancellation = 0.0;
  const std::vector<double> lengths = RowSums(mask);
  // Packed rows: the k-th valid token's position.
  std::vector<std::vector<int64_t>> valid(static_cast<size_t>(mask.rows()));
  for (int64_t i = 0; i < mask.rows(); ++i)
    for (int64_t t = 0; t < mask.cols(); ++t)
      if (mask.at(i, t) != 0.0) valid[static_cast<size_t>(i)].push_back(t);
  // Group members in batch order, without the empty rows.
  const Groups all = GroupBy(index);
  out.advantages = Array(mask.shape, mask.dtype);
  for (const auto& group : all.members) {
    std::vector<int64_t> members;
    for (int64_t i : group)
      if (!valid[static_cast<size_t>(i)].empty()) members.push_back(i);
    if (members.empty()) continue;
    size_t longest = 0;
    for (int64_t i : members) longest = std::max(longest, valid[static_cast<size_t>(i)].size());
    std::vector<double> b(longest, 0.0);
    if (members.size() > 1) {
      for (size_t k = 0; k < longest; ++k) {
        Weighted at;
        for (int64_t i : members) {
          const auto& v = valid[static_cast<size_t>(i)];
          if (k >= v.size()) continue;  // packed rows are 0 past their length
          at.Add(out.returns.at(i, v[k]), w.at(i, v[k]), size.at(i, v[k]));
        }
        b[k] = at.Baseline(cfg.epsilon);
        if (cancellation) *cancellation = std::max(*cancellation, at.Cancellation(cfg.epsilon));
      }
    }
    Tail tail;
    if (members.size() > 1 && cfg.handle_zero_tail) tail = LongestAlone(members, lengths);
    for (int64_t i : members) {
      const auto& v = valid[static_cast<size_t>(i)];
      for (size_t k = 0; k < v.size(); ++k) {
        const bool zeroed = i == tail.row && static_cast<int64_t>(k) >= tail.from;
        out.advantages.at(i, v[k]) = (out.returns.at(i, v[k]) - (zeroed ? 0.0 : b[k])) * mask.at(i, v[k]);
      }
    }
  }
  return out;
}

}  // namespace verlconf::oracle
