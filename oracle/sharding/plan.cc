#include "oracle/sharding/plan.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace verlconf::sharding {
namespace {

// `n` items cut into `parts` non-empty runs of random lengths: the run lengths.
std::vector<int64_t> RandomCuts(oracle::InputGen& g, int64_t n, int64_t parts) {
  std::vector<int64_t> positions(static_cast<size_t>(n - 1));
  std::iota(positions.begin(), positions.end(), int64_t{1});
  std::shuffle(positions.begin(), positions.end(), g.rng());
  positions.resize(static_cast<size_t>(parts - 1));
  std::sort(positions.begin(), positions.end());
  std::vector<int64_t> lengths;
  int64_t prev = 0;
  for (int64_t p : positions) {
    lengths.push_back(p - prev);
    prev = p;
  }
  lengths.push_back(n - prev);
  return lengths;
}

}  // namespace

std::vector<int64_t> ShardPlan::RankRows(int64_t rank) const {
  std::vector<int64_t> rows;
  for (const MicroBatch& mb : ranks.at(static_cast<size_t>(rank)).micro_batches)
    rows.insert(rows.end(), mb.rows.begin(), mb.rows.end());
  return rows;
}

std::string ShardPlan::Describe() const {
  std::ostringstream os;
  os << "k=" << ranks.size() << " [";
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (r) os << '|';
    for (size_t m = 0; m < ranks[r].micro_batches.size(); ++m)
      os << (m ? "+" : "") << ranks[r].micro_batches[m].rows.size();
  }
  os << ']' << (trainer.horizon == Horizon::kFull ? " full-width" : "")
     << (trainer.sequences == SequenceCount::kLive ? " live-count" : "");
  return os.str();
}

void ValidatePlan(const ShardPlan& plan, int64_t batch) {
  if (plan.ranks.empty()) throw std::invalid_argument("sharding plan without ranks");
  std::vector<int> seen(static_cast<size_t>(batch), 0);
  for (const Rank& r : plan.ranks) {
    if (r.micro_batches.empty()) throw std::invalid_argument("sharding plan: a rank without micro-batches");
    for (const MicroBatch& mb : r.micro_batches) {
      if (mb.rows.empty()) throw std::invalid_argument("sharding plan: an empty micro-batch");
      for (int64_t i : mb.rows) {
        if (i < 0 || i >= batch)
          throw std::invalid_argument("sharding plan: row " + std::to_string(i) + " out of range");
        if (++seen[static_cast<size_t>(i)] > 1)
          throw std::invalid_argument("sharding plan: row " + std::to_string(i) + " given twice");
      }
    }
  }
  for (int64_t i = 0; i < batch; ++i)
    if (!seen[static_cast<size_t>(i)])
      throw std::invalid_argument("sharding plan: row " + std::to_string(i) + " given to no rank");
}

ShardPlan RandomPlan(oracle::InputGen& g, int64_t batch, int64_t ranks, int64_t max_micro_batches) {
  if (ranks < 1 || batch < ranks) throw std::invalid_argument("RandomPlan needs 1 <= ranks <= batch");
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), int64_t{0});
  // verl's dispatch hands each rank a contiguous chunk; a shuffled order covers
  // samplers that interleave, and invariance must not depend on which rows go together.
  if (g.Coin(0.5)) std::shuffle(order.begin(), order.end(), g.rng());
  ShardPlan plan;
  size_t next = 0;
  for (int64_t rank_rows : RandomCuts(g, batch, ranks)) {
    Rank rank;
    const int64_t micro = g.Int(1, std::min(max_micro_batches, rank_rows));
    for (int64_t mb_rows : RandomCuts(g, rank_rows, micro)) {
      MicroBatch mb;
      for (int64_t k = 0; k < mb_rows; ++k) mb.rows.push_back(order[next++]);
      rank.micro_batches.push_back(std::move(mb));
    }
    plan.ranks.push_back(std::move(rank));
  }
  return plan;
}

}  // namespace verlconf::sharding
