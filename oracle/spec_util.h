// Small helpers the per-family spec files share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oracle/aggregation.h"
#include "oracle/generate.h"
#include "oracle/policy_loss.h"
#include "oracle/case.h"
#include "oracle/registry.h"

namespace verlconf::oracle {

// verl's global_batch_info keys as config entries, and reading them back.
void AddGlobalBatchKeys(FunctionSpec& s);
GlobalBatchInfo ReadGlobalBatchInfo(const Config& c);

inline ConfigValue None() { return std::monostate{}; }

// verl's loss_agg_mode names, as a config key's choices, and one drawn at random.
std::vector<std::string> AggModeChoices();
std::string RandomAggMode(InputGen& g);

// Policy losses share their inputs, their result layout and their random batches.
// The input specs: old_log_prob, log_prob, advantages, response_mask and, unless the
// loss takes none, the optional rollout_is_weights.
std::vector<InputSpec> PolicyLossInputSpecs(bool rollout_is_weights = true);
PolicyLossInputs ReadPolicyLossInputs(const Case& c);
// verl's clip_ratio_low / clip_ratio_high, each falling back to clip_ratio when None.
std::pair<double, double> ReadClipRatios(const Config& c);
Result PackPolicyLoss(PolicyLossResult pl, DType dtype);
// vanilla's configuration (ActorConfig: clip ratios, dual clip, aggregation, global
// batch), shared with bypass_mode and the bypass presets: as config entries, read back,
// and drawn at random.
void AddVanillaKeys(FunctionSpec& s);
VanillaConfig ReadVanillaConfig(const Config& c);
void SetRandomVanillaConfig(InputGen& g, Config& cfg);
// old/new log-probs a small or a large step apart, N(0, 1) advantages, a response mask
// with padding and interior spans, and IS weights a third of the time.
Case NewPolicyLossCase(const GenParams& p, InputGen& g);

// The start of every registry generator: an empty case named "generated" with p's
// dtype and seed (the registry fills in family and function).
Case NewGeneratedCase(const GenParams& p);

// float32 condition numbers of the advantage estimators (FunctionSpec::float32_condition).
// verl's float32 result is only as good as float32 arithmetic on the case's scores
// allows; the float32 tolerance is scaled by these, never the float64 one.
//
// GRPO: row sums lose eps32 * sum_t |r_t|, the group mean eps32 * |mean|, and the
// division by (std + eps) amplifies both.
double GrpoFloat32Condition(const Case& c);
// Un-normalised baselines (rloo, opo, gpg, remax): the error is eps32 times the size of
// the scores that cancel, max_i sum_t |r_{i,t}| (times gpg's alpha / f_norm).
double ScoreScaleCondition(const Case& c);
// Baselines followed by batch whitening (reinforce_plus_plus_baseline): the same error,
// divided by the whitening's std.
double WhitenedScoreCondition(const Case& c);

}  // namespace verlconf::oracle
