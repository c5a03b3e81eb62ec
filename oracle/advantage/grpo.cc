// Mirrors verl 0.9.1 core_algos.compute_grpo_outcome_advantage and
// compute_grpo_vectorized_outcome_advantage.
#include "oracle/advantage/grpo.h"

#include <algorithm>
#include <cmath>

#include "oracle/advantage/groups.h"
#include "oracle/core/sum.h"

namespace verlconf::oracle {
namespace {

// float32(1) + eps evaluated in float32, which is what torch does for a float32
// tensor plus a Python float.
double Float32OnePlus(double eps) { return static_cast<double>(1.0f + static_cast<float>(eps)); }

Array Broadcast(const std::vector<double>& per_seq, const Array& mask) {
  Array out(mask.shape, mask.dtype);
  for (int64_t i = 0; i < mask.rows(); ++i)
    for (int64_t t = 0; t < mask.cols(); ++t) out.at(i, t) = per_seq[static_cast<size_t>(i)] * mask.at(i, t);
  return out;
}

}  // namespace

Array grpo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, const GrpoConfig& cfg) {
  const std::vector<double> s = RowSums(rewards);
  const Groups groups = GroupBy(index);
  std::vector<double> adv(s.size());
  for (const auto& members : groups.members) {
    const double n = static_cast<double>(members.size());
    double mean = 0.0;
    double denom = Float32OnePlus(cfg.epsilon);  // singleton: float32 tensor(1.0) + eps
    if (members.size() > 1) {
      ExactSum sum;
      for (int64_t i : members) sum.Add(s[static_cast<size_t>(i)]);
      mean = sum.Value() / n;
      ExactSum sq;
      for (int64_t i : members) sq.Add((s[static_cast<size_t>(i)] - mean) * (s[static_cast<size_t>(i)] - mean));
      denom = std::sqrt(sq.Value() / (n - 1.0)) + cfg.epsilon;  // torch.std: unbiased
    }
    for (int64_t i : members) {
      const double centered = s[static_cast<size_t>(i)] - mean;
      adv[static_cast<size_t>(i)] = cfg.norm_adv_by_std_in_grpo ? centered / denom : centered;
    }
  }
  return Broadcast(adv, mask);
}

Array grpo_vectorized_outcome_advantage(const Array& rewards, const Array& mask, const Array& index,
                                        const GrpoConfig& cfg) {
  const std::vector<double> s = RowSums(rewards);
  const Groups groups = GroupBy(index);
  // group_mean_std in float32, accumulating in element order like index_add_.
  std::vector<float> mean32(groups.members.size()), std32(groups.members.size());
  for (size_t g = 0; g < groups.members.size(); ++g) {
    const auto& members = groups.members[g];
    const float count = static_cast<float>(members.size());
    float s1 = 0.0f;
    for (int64_t i : members) s1 += static_cast<float>(s[static_cast<size_t>(i)]);
    const float mean = s1 / std::max(count, 1.0f);
    float var_num = 0.0f;
    for (int64_t i : members) {
      const float c = static_cast<float>(s[static_cast<size_t>(i)]) - mean;
      var_num += c * c;
    }
    const float var = var_num / std::max(count - 1.0f, 1.0f);
    const bool singleton = count <= 1.0f;
    mean32[g] = singleton ? 0.0f : mean;
    std32[g] = singleton ? 1.0f : std::sqrt(std::max(var, 0.0f));
  }
  std::vector<double> adv(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t g = static_cast<size_t>(groups.group_of[i]);
    const double centered = s[i] - static_cast<double>(mean32[g]);
    const double denom = static_cast<double>(std32[g] + static_cast<float>(cfg.epsilon));
    adv[i] = cfg.norm_adv_by_std_in_grpo ? centered / denom : centered;
  }
  return Broadcast(adv, mask);
}

}  // namespace verlconf::oracle
