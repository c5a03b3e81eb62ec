// What the policy losses' registry entries share (and the rollout-correction entries
// that end in vanilla's loss): their inputs, their result layout, vanilla's
// configuration and their random batches.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oracle/aggregation/spec_common.h"
#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/core/generate.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::oracle {

// The input specs: old_log_prob, log_prob, advantages, response_mask and, unless the
// loss takes none, the optional rollout_is_weights.
std::vector<InputSpec> PolicyLossInputSpecs(bool rollout_is_weights = true);
PolicyLossInputs ReadPolicyLossInputs(const Case& c);
// verl's clip_ratio_low / clip_ratio_high, each falling back to clip_ratio when None.
std::pair<double, double> ReadClipRatios(const Config& c);
Result PackPolicyLoss(PolicyLossResult pl, DType dtype);
// ActorConfig's keys the actor's losses read, with verl's defaults (the one place each
// is stated): clip_ratio and the clip_ratio_low / clip_ratio_high that fall back to it,
// clip_ratio_c, loss_agg_mode.
void AddClipRatioKeys(FunctionSpec& s, const std::string& clip_ratio_doc = "symmetric clip epsilon");
ConfigKey ActorClipRatioCKey(const std::string& doc);
ConfigKey ActorLossAggModeKey(const std::string& doc = "agg_loss mode");
// vanilla's configuration (ActorConfig: clip ratios, dual clip, aggregation, global
// batch), shared with bypass_mode and the bypass presets: as config entries, read back,
// and drawn at random.
void AddVanillaKeys(FunctionSpec& s);
VanillaConfig ReadVanillaConfig(const Config& c);
void SetRandomVanillaConfig(InputGen& g, Config& cfg);
// old/new log-probs a small or a large step apart, N(0, 1) advantages, a response mask
// with padding and interior spans, and IS weights a third of the time.
Case NewPolicyLossCase(const GenParams& p, InputGen& g);

}  // namespace verlconf::oracle
