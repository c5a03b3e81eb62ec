// How a batch is spread over data-parallel ranks and, within a rank, over micro-batches,
// and which of verl's trainer conventions the sharding follows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oracle/core/generate.h"

namespace verlconf::sharding {

// The padded width of one micro-batch's token matrices. verl 0.9.1's engine keeps
// sequences unpadded and pads each micro-batch to its own longest response
// (workers/utils/losses.py ppo_loss: no_padding_2_padding, to_padded_tensor): the
// horizon is the last column any of its rows has a valid token in. kFull keeps the
// batch's own T in every micro-batch (a trainer that pads to the batch's width).
enum class Horizon { kPerMicroBatch, kFull };

// What global_batch_size counts. verl 0.9.1's trainer passes ppo_mini_batch_size *
// rollout.n (trainer/ppo/ray_trainer.py _update_actor / _update_critic): every sequence
// of the mini-batch, fully masked ones included. kLive counts only sequences with a
// valid token, which is what agg_loss derives by itself when given no count.
enum class SequenceCount { kAll, kLive };

struct TrainerModel {
  Horizon horizon = Horizon::kPerMicroBatch;
  SequenceCount sequences = SequenceCount::kAll;
};

// Rows of the full batch, in the order the micro-batch holds them.
struct MicroBatch {
  std::vector<int64_t> rows;
};
struct Rank {
  std::vector<MicroBatch> micro_batches;
};

struct ShardPlan {
  std::vector<Rank> ranks;
  TrainerModel trainer;

  int64_t dp_size() const { return static_cast<int64_t>(ranks.size()); }
  // Every row the rank holds, micro-batch by micro-batch.
  std::vector<int64_t> RankRows(int64_t rank) const;
  // "k=4 [3+2|1|...]": ranks separated by '|', micro-batch sizes by '+'.
  std::string Describe() const;
};

// std::invalid_argument unless every row in [0, batch) is in exactly one micro-batch
// and every rank and micro-batch holds at least one row (verl gives no rank an empty
// batch; a rank whose rows are all masked is data, not an empty shard).
void ValidatePlan(const ShardPlan& plan, int64_t batch);

// A random plan over `batch` rows (batch >= ranks): uneven row counts per rank, the rows
// in order or shuffled, each rank cut into 1..max_micro_batches micro-batches of
// uneven sizes.
ShardPlan RandomPlan(oracle::InputGen& g, int64_t batch, int64_t ranks, int64_t max_micro_batches);

}  // namespace verlconf::sharding
