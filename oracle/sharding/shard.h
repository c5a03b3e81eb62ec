// A case split as verl's trainer splits it: one case per (rank, micro-batch), holding
// that micro-batch's rows and the global-batch arguments verl's engine gives it.
//
// verl 0.9.1 (workers/engine/fsdp/transformer_impl.py forward_backward_batch, and
// workers/utils/losses.py ppo_loss / value_loss): before the micro-batch loop the engine
// all-reduces the mini-batch's loss_mask sum over the data-parallel group
// (batch_num_tokens) and records the data-parallel size (dp_size); the trainer has set
// global_batch_size to ppo_mini_batch_size * rollout.n; the loss copies these, and the
// actor's own loss_scale_factor, into config.global_batch_info for every micro-batch.
// Each micro-batch's loss is backpropagated as it is: no per-micro-batch factor
// (the legacy actor's 1/gradient_accumulation is gone in 0.9.1), the gradients of a
// rank's micro-batches accumulate, and DDP/FSDP average them over ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/sharding/plan.h"

namespace verlconf::sharding {

// The global-batch arguments every micro-batch of one sharded batch is given.
struct TrainerCounts {
  int64_t dp_size = 1;
  int64_t batch_num_tokens = 0;   // valid tokens of the whole batch (the input mask's)
  int64_t global_batch_size = 0;  // sequences of the whole batch (SequenceCount)
};

struct ShardCall {
  int64_t rank = 0;
  int64_t micro_batch = 0;
  std::vector<int64_t> rows;  // rows of the full batch, in the call's row order
  int64_t horizon = 0;        // token columns the call holds (the first `horizon`)
  Case input;
};

struct ShardedCase {
  int64_t dp_size = 1;
  TrainerCounts counts;
  std::vector<ShardCall> calls;  // rank-major, micro-batches in order
};

// The spec's loss mask: its first token-shaped mask input (response_mask, loss_mask),
// the mask verl's trainer counts tokens and live sequences with. Null if it has none.
const InputSpec* LossMaskInput(const FunctionSpec& spec);

// Whether the spec takes verl's global-batch arguments (its config declares dp_size).
bool TakesGlobalBatchInfo(const FunctionSpec& spec);

// The counts verl's trainer computes for `full` sharded over `plan`.
TrainerCounts CountsFor(const FunctionSpec& spec, const Case& full, const ShardPlan& plan);

// The padded width of a micro-batch holding `rows` (Horizon): at least 1.
int64_t MicroBatchHorizon(const FunctionSpec& spec, const Case& full, const std::vector<int64_t>& rows,
                          Horizon horizon);

// `full`'s batch-shaped inputs restricted to `rows` (in that order) and, for token-shaped
// ones, to the first `horizon` columns; scalars and per-component weights are shared.
// Config, dtype and names are kept; expected results and projections are dropped.
Case SliceRows(const FunctionSpec& spec, const Case& full, const std::vector<int64_t>& rows, int64_t horizon);

// One case per (rank, micro-batch), each with the trainer's global-batch arguments when
// the spec takes them (dp_size, batch_num_tokens, global_batch_size; loss_scale_factor
// stays the case's own, as verl's actor config holds it). A spec without them gets
// nothing added: its calls see only their micro-batch, as verl's callers of it do.
ShardedCase ShardCase(const FunctionSpec& spec, const Case& full, const ShardPlan& plan);

}  // namespace verlconf::sharding
