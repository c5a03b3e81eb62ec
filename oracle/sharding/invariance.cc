#include "oracle/sharding/invariance.h"

#include <map>
#include <stdexcept>
#include <vector>

#include "oracle/sharding/combine.h"
#include "oracle/sharding/shard.h"

namespace verlconf::sharding {
namespace {

// A setting the case's config holds, or else the one a preset fixes (the
// rollout-correction presets carry theirs in preset_expansion, not in the config).
ConfigValue Setting(const FunctionSpec& spec, const Case& c, const std::string& key) {
  if (spec.FindConfigKey(key)) {
    Case storage;
    return Resolved(spec, c, storage).config.Value(key);
  }
  for (const auto& [name, value] : spec.preset_expansion)
    if (name == key) return value;
  return std::monostate{};
}

bool IsSet(const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return false;
  if (const auto* i = std::get_if<int64_t>(&v)) return *i != 0;
  if (const auto* s = std::get_if<std::string>(&v)) return !s->empty() && *s != "None";
  return true;
}

bool HasDeadRow(const Array& mask) {
  for (int64_t i = 0; i < mask.rows(); ++i) {
    bool live = false;
    for (int64_t t = 0; t < mask.cols() && !live; ++t) live = mask.at(i, t) != 0.0;
    if (!live) return true;
  }
  return false;
}

// Removes what a caller of agg_loss alone does not pass: the global-batch arguments.
void ClearGlobalCounts(Case& c) {
  for (const char* key : {"dp_size", "batch_num_tokens", "global_batch_size"}) c.config.Erase(key);
}

// The distinct horizons of the plan's micro-batches, each with the rows it covers.
std::map<int64_t, std::vector<int64_t>> RowsByHorizon(const FunctionSpec& spec, const Case& full,
                                                      const ShardPlan& plan) {
  std::map<int64_t, std::vector<int64_t>> by;
  for (const Rank& r : plan.ranks)
    for (const MicroBatch& mb : r.micro_batches) {
      std::vector<int64_t>& rows = by[MicroBatchHorizon(spec, full, mb.rows, plan.trainer.horizon)];
      rows.insert(rows.end(), mb.rows.begin(), mb.rows.end());
    }
  return by;
}

bool DividesByHorizon(const FunctionSpec& spec, const Case& full) {
  if (EffectiveAggMode(spec, full) != "seq-mean-token-sum-norm") return false;
  Case storage;
  return !Resolved(spec, full, storage).config.OptionalDouble("loss_scale_factor");
}

}  // namespace

const char* DpKindName(DpKind k) {
  switch (k) {
    case DpKind::kInvariant: return "invariant";
    case DpKind::kTrainerCounts: return "trainer-counts";
    case DpKind::kHorizon: return "horizon";
    case DpKind::kLocal: return "local";
  }
  return "?";
}

std::string EffectiveAggMode(const FunctionSpec& spec, const Case& c) {
  if (spec.family == "aggregation") return spec.name;
  if (const ConfigValue* fixed = spec.FixedConfig("loss_agg_mode"))
    if (const auto* s = std::get_if<std::string>(fixed)) return *s;
  if (!spec.FindConfigKey("loss_agg_mode")) return "";
  Case storage;
  return Resolved(spec, c, storage).config.String("loss_agg_mode");
}

std::string LocalStatisticReason(const FunctionSpec& spec, const Case& c) {
  if (!TakesGlobalBatchInfo(spec))
    return "takes no global-batch arguments: each micro-batch is normalised by its own counts, and DDP's "
           "average over ranks divides by k on top";
  // compute_policy_loss_geo_mean: torch.mean of the per-row losses over the rows it is
  // given; its loss_agg_mode and global_batch_info are accepted and ignored.
  if (spec.family == "policy_loss" && spec.name == "geo_mean")
    return "the loss is the mean over the micro-batch's rows (global_batch_info ignored)";
  // compute_policy_loss_clip_cov / _kl_cov: the tokens the loss treats apart are picked
  // from covariances about the batch's means, k of them in proportion to the batch's
  // valid tokens. Given the pick (the input cov_selected), the rest is per token.
  if (spec.FindInput("cov_selected") && !c.OptionalInput("cov_selected"))
    return "the covariance token pick is made over each micro-batch (its means, its token count)";
  // rollout_is_batch_normalize divides the IS weights by their mean over the batch.
  if (IsSet(Setting(spec, c, "rollout_is_batch_normalize")))
    return "rollout_is_batch_normalize divides the IS weights by their mean over the micro-batch";
  return "";
}

bool MicroBatchMayRaise(const FunctionSpec& spec) {
  // The bypass loss (its settings as config keys) and the rollout-correction presets
  // (their settings fixed by the factory) both run the pipeline inside the loss.
  return spec.FindConfigKey("rollout_is") != nullptr || !spec.preset_expansion.empty();
}

bool RejectsInsideLoss(const FunctionSpec& spec, const Case& c) { return IsSet(Setting(spec, c, "rollout_rs")); }

DpVerdict Classify(const FunctionSpec& spec, const Case& full, const ShardPlan& plan) {
  if (std::string why = LocalStatisticReason(spec, full); !why.empty()) return {DpKind::kLocal, why};
  const std::string mode = EffectiveAggMode(spec, full);
  if (DividesByHorizon(spec, full)) {
    const auto by = RowsByHorizon(spec, full, plan);
    const int64_t width = full.Input(LossMaskInput(spec)->name).cols();
    if (by.size() > 1 || by.begin()->first != width)
      return {DpKind::kHorizon,
              "seq-mean-token-sum-norm without loss_scale_factor divides each micro-batch by its own padded width"};
  }
  if (mode == "token-sum") return {};
  // Rejection inside the loss (bypass mode's rollout_rs) drops tokens and whole rows
  // after the trainer counted them.
  if (RejectsInsideLoss(spec, full))
    return {DpKind::kTrainerCounts,
            "rejection inside the loss masks tokens the trainer's batch_num_tokens and global_batch_size counted"};
  const bool seq_mode = mode.rfind("seq-mean", 0) == 0;
  if (seq_mode && plan.trainer.sequences == SequenceCount::kAll && HasDeadRow(full.Input(LossMaskInput(spec)->name)))
    return {DpKind::kTrainerCounts,
            "global_batch_size counts every sequence; agg_loss alone counts only those with a valid token"};
  return {};
}

Case JudgedFullBatch(const FunctionSpec& spec, Case full) {
  if (spec.FindInput("cov_selected")) full.inputs.erase("cov_selected");
  full.projections.clear();
  full.vjps.clear();
  full.config.Set("dp_size", int64_t{1});
  full.config.Erase("batch_num_tokens");
  full.config.Erase("global_batch_size");
  ResolveConfig(spec, full.config);
  return full;
}

Result FullBatchReference(const FunctionSpec& spec, const RunFn& impl, const Case& full) {
  Case c = full;
  if (TakesGlobalBatchInfo(spec)) ClearGlobalCounts(c);
  // Implementations other than the oracle read a resolved config, as the judge hands it.
  ResolveConfig(spec, c.config);
  return impl(c);
}

Result ShardedReference(const FunctionSpec& spec, const RunFn& impl, const Case& full, const ShardPlan& plan) {
  const DpVerdict verdict = Classify(spec, full, plan);
  if (verdict.kind == DpKind::kLocal)
    throw std::logic_error(spec.name + ": no full-batch statement of verl's sharded semantics (" + verdict.why + ")");
  const TrainerCounts counts = CountsFor(spec, full, plan);
  Case base = full;
  base.config.Set("dp_size", int64_t{1});
  base.config.Set("batch_num_tokens", counts.batch_num_tokens);
  base.config.Set("global_batch_size", counts.global_batch_size);
  ResolveConfig(spec, base.config);
  if (!DividesByHorizon(spec, full)) return impl(base);

  // One run per horizon: the rows of micro-batches that wide keep their mask, the rest
  // contribute nothing (the counts are given, so their absence changes no normaliser).
  const int64_t rows_total = full.Input(LossMaskInput(spec)->name).rows();
  const std::string& loss_name = LossOutput(spec);
  Result sum;
  double loss = 0.0;
  for (const auto& [horizon, rows] : RowsByHorizon(spec, full, plan)) {
    Case c = base;
    std::vector<bool> keep(static_cast<size_t>(rows_total), false);
    for (int64_t i : rows) keep[static_cast<size_t>(i)] = true;
    // Every token mask: a token pick (cov_selected) must not keep a token the loss mask drops.
    for (const InputSpec& in : spec.inputs) {
      auto it = c.inputs.find(in.name);
      if (!in.is_mask || in.role != Role::kTokens || it == c.inputs.end()) continue;
      for (int64_t i = 0; i < it->second.rows(); ++i)
        if (!keep[static_cast<size_t>(i)])
          for (int64_t t = 0; t < it->second.cols(); ++t) it->second.at(i, t) = 0.0;
    }
    c.config.Set("loss_scale_factor", static_cast<double>(horizon));
    const Result r = impl(c);
    loss += r.outputs.at(loss_name)[0];
    // A decision within rounding in any run is one in the sum.
    if (r.boundary.size()) {
      if (!sum.boundary.size()) sum.boundary = Array(r.boundary.shape, r.boundary.dtype);
      for (int64_t k = 0; k < r.boundary.size() && r.boundary.shape == sum.boundary.shape; ++k)
        if (r.boundary[k] != 0.0) sum.boundary[k] = 1.0;
    }
    for (const std::string& g : spec.grads) {
      auto [it, fresh] = sum.grads.try_emplace(g, r.grads.at(g));
      if (!fresh)
        for (int64_t k = 0; k < it->second.size(); ++k) it->second[k] += r.grads.at(g)[k];
    }
  }
  sum.outputs[loss_name] = Array::Scalar(loss, full.dtype);
  return sum;
}

RunFn ShardedSemantics(const FunctionSpec& spec, const ShardPlan& plan) {
  return [&spec, plan](const Case& full) {
    // The micro-batches first: their error is the step's, and it comes before anything
    // the unsplit batch would raise (a dual-clip assertion that a micro-batch without a
    // valid token never reaches).
    if (MicroBatchMayRaise(spec)) {
      try {
        (void)RunSharded(spec, spec.oracle, full, plan);
      } catch (const MicroBatchError&) {
        throw;
      } catch (const VerlError& e) {
        throw MicroBatchError(e);
      }
    }
    return ShardedReference(spec, spec.oracle, full, plan);
  };
}

}  // namespace verlconf::sharding
