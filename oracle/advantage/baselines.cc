// Mirrors verl 0.9.1 core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage,
// compute_rloo_outcome_advantage, compute_rloo_vectorized_outcome_advantage,
// compute_opo_outcome_advantage, compute_remax_outcome_advantage and
// compute_gpg_outcome_advantage.
#include "oracle/advantage/baselines.h"

#include <algorithm>

#include "oracle/advantage/groups.h"
#include "oracle/core/sum.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

Array reinforce_plus_plus_baseline_advantage(const Array& rewards, const Array& mask, const Array& index) {
  std::vector<double> s = RowSums(rewards);
  const Groups groups = GroupBy(index);
  std::vector<double> centered(s.size());
  for (const auto& members : groups.members) {
    const double mean = members.size() > 1 ? GroupMean(s, members) : 0.0;
    for (int64_t i : members) centered[static_cast<size_t>(i)] = s[static_cast<size_t>(i)] - mean;
  }
  Array a = masked_whiten(RowsTimesMask(centered, mask), mask, /*shift_mean=*/true);
  for (int64_t k = 0; k < a.size(); ++k) a[k] *= mask[k];
  return a;
}

Array rloo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index) {
  std::vector<double> s = RowSums(rewards);
  for (const auto& members : GroupBy(index).members) {
    if (members.size() < 2) continue;  // the loop leaves a singleton's score as it is
    const double n = static_cast<double>(members.size());
    const double mean = GroupMean(s, members);
    // verl's operation order: (s n) / (n - 1) - (mean n) / (n - 1).
    for (int64_t i : members) {
      double& si = s[static_cast<size_t>(i)];
      si = si * n / (n - 1.0) - mean * n / (n - 1.0);
    }
  }
  return RowsTimesMask(s, mask);
}

Array rloo_vectorized_outcome_advantage(const Array& rewards, const Array& mask, const Array& index) {
  const std::vector<double> s = RowSums(rewards);
  const Groups groups = GroupBy(index);
  std::vector<double> a(s.size());
  for (const auto& members : groups.members) {
    // torch.bincount(weights=...) adds the group's scores one by one in element order.
    double sum = 0.0;
    for (int64_t i : members) sum += s[static_cast<size_t>(i)];
    const double n = static_cast<double>(members.size());
    for (int64_t i : members)
      a[static_cast<size_t>(i)] = (n * s[static_cast<size_t>(i)] - sum) / std::max(n - 1.0, 1.0) * (n > 1 ? 1.0 : 0.0);
  }
  return RowsTimesMask(a, mask);
}

Array opo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index) {
  std::vector<double> s = RowSums(rewards);
  const std::vector<double> len = RowSums(mask);
  for (const auto& members : GroupBy(index).members) {
    double baseline = 0.0;
    if (members.size() > 1) {
      ExactSum num, den;
      for (int64_t i : members) {
        num.Add(len[static_cast<size_t>(i)] * s[static_cast<size_t>(i)]);
        den.Add(len[static_cast<size_t>(i)]);
      }
      baseline = num.Value() / den.Value();  // 0/0 = NaN when every row is empty, as in verl
    }
    for (int64_t i : members) s[static_cast<size_t>(i)] -= baseline;
  }
  return RowsTimesMask(s, mask);
}

AdvantageReturns remax_outcome_advantage(const Array& rewards, const Array& reward_baselines, const Array& mask) {
  AdvantageReturns out;
  out.returns = MaskedRewardToGo(rewards, mask);
  out.advantages = out.returns;
  for (int64_t i = 0; i < mask.rows(); ++i)
    for (int64_t t = 0; t < mask.cols(); ++t) out.advantages.at(i, t) -= reward_baselines[i] * mask.at(i, t);
  return out;
}

Array gpg_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, double f_norm) {
  std::vector<double> s = RowSums(rewards);
  int64_t nonzero = 0;
  for (double v : s) nonzero += v != 0.0;
  // bsz / m.clamp(min=1): an int divided by an int64 tensor is a float32 tensor, and
  // torch evaluates int / tensor as tensor.reciprocal() * int: two float32 roundings,
  // not one (12/7 gives 1.7142859, the correctly rounded quotient is 1.7142857).
  const float reciprocal = 1.0f / static_cast<float>(std::max<int64_t>(nonzero, 1));
  const double alpha = static_cast<double>(reciprocal * static_cast<float>(s.size()));
  for (const auto& members : GroupBy(index).members) {
    const double mean = members.size() > 1 ? GroupMean(s, members) : 0.0;
    for (int64_t i : members) {
      double& si = s[static_cast<size_t>(i)];
      si = alpha * (si - mean) / f_norm;
    }
  }
  return RowsTimesMask(s, mask);
}

}  // namespace verlconf::oracle
