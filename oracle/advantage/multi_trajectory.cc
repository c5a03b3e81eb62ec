// Mirrors verl 0.9.1 trainer/ppo/v1/utils.compute_advantage_for_multi_trajectories
// (the GRPO branch; other estimators are delegated to compute_advantage unchanged).
#include "oracle/advantage/multi_trajectory.h"

#include <map>
#include <utility>
#include <vector>

namespace verlconf::oracle {

Array multi_trajectory_grpo_advantage(const Array& rewards, const Array& mask, const Array& index, const Array& session,
                                      const Array& turn, const GrpoConfig& cfg) {
  const int64_t rows = rewards.rows(), cols = rewards.cols();
  // Sessions in first-appearance order (verl's dict), each with its final row: a later
  // row replaces the current one only with a strictly larger turn.
  std::map<std::pair<double, double>, size_t> slot;
  std::vector<int64_t> final_row, session_of(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    auto [it, fresh] = slot.emplace(std::make_pair(index[i], session[i]), final_row.size());
    if (fresh)
      final_row.push_back(i);
    else if (turn[final_row[it->second]] < turn[i])
      final_row[it->second] = i;
    session_of[static_cast<size_t>(i)] = static_cast<int64_t>(it->second);
  }
  // GRPO over the final rows only.
  const int64_t n = static_cast<int64_t>(final_row.size());
  Array r = Array::Matrix(n, cols, rewards.dtype), m = Array::Matrix(n, cols, mask.dtype);
  Array idx({n}, DType::kInt64);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = final_row[static_cast<size_t>(j)];
    idx[j] = index[i];
    for (int64_t t = 0; t < cols; ++t) r.at(j, t) = rewards.at(i, t), m.at(j, t) = mask.at(i, t);
  }
  const Array adv = grpo_outcome_advantage(r, m, idx, cfg);
  std::vector<double> score(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t first = 0;  // response_mask.argmax(dim=1): the first valid token, or 0
    while (first < cols && m.at(j, first) == 0.0) ++first;
    if (first == cols) first = 0;
    score[static_cast<size_t>(j)] = adv.at(j, first);
  }
  Array out(mask.shape, mask.dtype);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < cols; ++t)
      out.at(i, t) = score[static_cast<size_t>(session_of[static_cast<size_t>(i)])] * mask.at(i, t);
  return out;
}

}  // namespace verlconf::oracle
