// Mirrors verl 0.9.1 core_algos.compute_grpo_passk_outcome_advantage and
// compute_gdpo_outcome_advantage.
#include "oracle/advantage/grpo_variants.h"

#include <cmath>

#include "oracle/advantage/groups.h"
#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

void CheckPassAtKGroups(const Array& index) {
  for (const auto& members : GroupBy(index).members)
    if (members.size() < 2)
      throw VerlError("ValueError", "Pass@k requires at least 2 samples per group. Got 1 for group");
}

Array grpo_passk_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, double epsilon,
                                   bool norm_adv_by_std_in_grpo) {
  const std::vector<double> s = RowSums(rewards);
  std::vector<double> adv(s.size(), 0.0);
  CheckPassAtKGroups(index);
  for (const auto& members : GroupBy(index).members) {
    // The first maximum stands for torch.topk's pick: on a tie the advantage is
    // r_max - r_2nd = 0, so the choice cannot be observed.
    int64_t best = members[0];
    for (int64_t i : members)
      if (s[static_cast<size_t>(i)] > s[static_cast<size_t>(best)]) best = i;
    double second = -INFINITY;
    bool skipped = false;
    for (int64_t i : members) {
      if (i == best && !skipped) {
        skipped = true;
        continue;
      }
      second = std::max(second, s[static_cast<size_t>(i)]);
    }
    double a = s[static_cast<size_t>(best)] - second;
    if (norm_adv_by_std_in_grpo) a /= GroupStd(s, members) + epsilon;
    adv[static_cast<size_t>(best)] = a;
  }
  return RowsTimesMask(adv, mask);
}

namespace {

// One GRPO pass over float32 scores, as verl's compute_grpo_outcome_advantage runs on
// a float32 tensor: torch.mean of float32 is the float32 sum over n (here rounded once,
// which a pair's is; a longer group's torch sums in its own order, which the tolerance
// allows), torch.std of float32
// on the CPU is the deviations from that float32 mean squared and summed in double,
// rounded once (measured: [-0.50000018, -0.5] gives 1.3328e-07, about the exact mean
// 1.2644e-07), and the final (s - mean) / (std + eps) is float32 arithmetic.
// Singletons use float32 tensors 0 and 1, as in grpo.
std::vector<double> GrpoFloat32(const std::vector<double>& s64, const Array& index, const GrpoConfig& cfg) {
  std::vector<double> s(s64.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(s64[i]);
  std::vector<double> out(s.size());
  const float eps = static_cast<float>(cfg.epsilon);
  for (const auto& members : GroupBy(index).members) {
    float mean = 0.0f, sd = 1.0f;
    if (members.size() > 1) {
      ExactSum sum;
      for (int64_t i : members) sum.Add(s[static_cast<size_t>(i)]);
      mean = static_cast<float>(sum.Value()) / static_cast<float>(members.size());
      sd = static_cast<float>(GroupStdAbout(s, members, static_cast<double>(mean)));
    }
    for (int64_t i : members) {
      const float centered = static_cast<float>(s[static_cast<size_t>(i)]) - mean;
      out[static_cast<size_t>(i)] = cfg.norm_adv_by_std_in_grpo ? centered / (sd + eps) : centered;
    }
  }
  return out;
}

}  // namespace

Array gdpo_weighted_sum(const Array& rewards, const Array& mask, const Array& index, const Array* components,
                        const Array* weights, const GrpoConfig& cfg) {
  Array sum;
  if (components == nullptr) {
    // score_list = [token_level_rewards]; the float32 weight 1 leaves GRPO as it is.
    sum = grpo_outcome_advantage(rewards, mask, index, cfg);
  } else {
    sum = Array(mask.shape, mask.dtype);
    const int64_t k_count = components->cols();
    for (int64_t k = 0; k < k_count; ++k) {
      std::vector<double> score(static_cast<size_t>(components->rows()));
      for (int64_t i = 0; i < components->rows(); ++i) score[static_cast<size_t>(i)] = components->at(i, k);
      const Array a = RowsTimesMask(GrpoFloat32(score, index, cfg), mask);
      const double w = weights ? static_cast<double>(static_cast<float>((*weights)[k])) : 1.0;
      for (int64_t e = 0; e < a.size(); ++e) sum[e] = k == 0 ? w * a[e] : sum[e] + w * a[e];
    }
  }
  return sum;
}

Array gdpo_outcome_advantage(const Array& rewards, const Array& mask, const Array& index, const Array* components,
                             const Array* weights, const GrpoConfig& cfg) {
  Array out = masked_whiten(gdpo_weighted_sum(rewards, mask, index, components, weights, cfg), mask,
                            /*shift_mean=*/true);
  for (int64_t e = 0; e < out.size(); ++e) out[e] *= mask[e];
  return out;
}

}  // namespace verlconf::oracle
