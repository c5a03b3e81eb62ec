// Where verl's semantics make a sharded loss equal to the full batch's, where not and
// why, and what they give instead (docs/verl-quirks.md, "Data-parallel sharding").
//
// The reference is the full batch through the oracle with agg_loss's own defaults
// (dp_size 1, no global counts: every count taken from the batch itself). A sharded run
// (ShardCase, the implementation per call, Combine) equals it exactly where Classify says
// kInvariant. Elsewhere verl's sharded semantics are ShardedReference: the full batch,
// still unsplit, run with the trainer's counts and, for seq-mean-token-sum-norm without
// loss_scale_factor, each micro-batch's own horizon; except for kLocal, where the loss
// is a statistic of the micro-batch itself and the only statement of verl's semantics is
// the sharded run.
#pragma once

#include <string>

#include "oracle/core/case.h"
#include "oracle/core/errors.h"
#include "oracle/core/function_spec.h"
#include "oracle/sharding/plan.h"

namespace verlconf::sharding {

enum class DpKind {
  kInvariant,      // the combination is the full batch's loss and gradient
  kTrainerCounts,  // it is the full batch normalised by the trainer's counts, not the batch's own
  kHorizon,        // ... and each micro-batch divides by its own padded width
  kLocal,          // each micro-batch normalises by itself: no full-batch formula
};
const char* DpKindName(DpKind k);

struct DpVerdict {
  DpKind kind = DpKind::kInvariant;
  std::string why;  // one line: what breaks invariance ("" when invariant)
};

// The loss_agg_mode the function aggregates with: the aggregation entries' own name, a
// mode verl fixes whatever the config says (FunctionSpec::fixed_config), else the
// case's loss_agg_mode (verl's default when absent). "" for a spec without one.
std::string EffectiveAggMode(const FunctionSpec& spec, const Case& c);

// Why the function's loss is a statistic of the micro-batch it is given (a per-row mean
// over the batch, a token pick or a normalisation computed over the batch, no global
// counts taken at all), or "" when its terms are each row's own with global normalisers.
std::string LocalStatisticReason(const FunctionSpec& spec, const Case& c);

// Whether verl may refuse a micro-batch that the full batch passes: the losses that run
// the rollout-correction pipeline on their own micro-batch (bypass mode) raise on one
// without a valid token (rollout_corr_helper: "response_mask must contain at least one
// valid token") and on one whose every applied IS weight is 0 (a ZeroDivisionError in
// the IS metrics). A sharding with such a micro-batch has no result in verl. The other
// losses give any micro-batch a (possibly zero) contribution.
bool MicroBatchMayRaise(const FunctionSpec& spec);

// Whether the loss masks tokens itself after the trainer counted them (bypass mode's
// rejection sampling, rollout_rs): batch_num_tokens and global_batch_size then count
// tokens and rows the loss drops, where agg_loss alone would count only what is left.
bool RejectsInsideLoss(const FunctionSpec& spec, const Case& c);

DpVerdict Classify(const FunctionSpec& spec, const Case& full, const ShardPlan& plan);

// The full batch a candidate's sharded calls are judged against: as agg_loss sees it
// alone (dp_size 1, no global counts, the config resolved; the trainer's counts are the
// shards'), without projections or VJPs. A choice the function
// makes from the batch it is given (clip_cov's and kl_cov's covariance token pick) is made
// again in every micro-batch, by verl as by a framework that follows it; a pick recorded
// over the full batch (a golden's cov_selected) is no reference for those calls, so it is
// dropped and the case classifies as a local statistic. Sharded semantics given a pick
// stay the oracle's to state (Classify on a case that keeps it).
Case JudgedFullBatch(const FunctionSpec& spec, Case full);

// `impl` on the full batch as agg_loss sees it alone: dp_size 1, no global counts.
Result FullBatchReference(const FunctionSpec& spec, const RunFn& impl, const Case& full);

// What verl's semantics give for `full` sharded over `plan`, computed on the unsplit
// batch with `impl`: dp_size 1, the trainer's batch_num_tokens and global_batch_size,
// and, where the mode divides by the horizon and no loss_scale_factor is set, one run per
// distinct micro-batch horizon h over only the rows of micro-batches that wide (the
// others' masks zeroed) with loss_scale_factor = h, the runs' losses and gradients added.
// Equal to FullBatchReference where Classify is kInvariant. std::logic_error for kLocal.
Result ShardedReference(const FunctionSpec& spec, const RunFn& impl, const Case& full, const ShardPlan& plan);

// The error a micro-batch raises where verl runs part of the loss on each by itself
// (MicroBatchMayRaise): the training step stops at the first micro-batch that raises,
// with that micro-batch's first error, whatever the unsplit batch would give.
class MicroBatchError : public VerlError {
 public:
  explicit MicroBatchError(const VerlError& e) : VerlError(e) {}
};

// verl's semantics for `plan` as one function of the unsplit batch, the oracle's: the
// micro-batches' first error (a MicroBatchError, in the order verl runs them) where
// MicroBatchMayRaise, else ShardedReference with its threshold boundary. It is what a
// sharded case's golden holds, so the judge pushes decisions across a boundary through it
// (the batch's own counts would scale the other decision's values differently). Any
// other VerlError is the unsplit batch's alone, which no training step raises.
RunFn ShardedSemantics(const FunctionSpec& spec, const ShardPlan& plan);

}  // namespace verlconf::sharding
