#include "oracle/sharding/shard.h"

#include <algorithm>
#include <stdexcept>

namespace verlconf::sharding {
namespace {

// Rows of a batch-major array (any rank >= 1), and for token-shaped ones (rank >= 2)
// only the first `cols` entries of the second axis; trailing axes (the vocabulary) whole.
Array SliceBatchMajor(const Array& a, const std::vector<int64_t>& rows, std::optional<int64_t> cols) {
  std::vector<int64_t> shape = a.shape;
  shape.at(0) = static_cast<int64_t>(rows.size());
  if (cols) shape.at(1) = *cols;
  int64_t inner = 1;  // elements per entry of the second axis
  for (size_t d = 2; d < a.shape.size(); ++d) inner *= a.shape[d];
  const int64_t src_row = a.shape.size() >= 2 ? a.shape[1] * inner : 1;
  const int64_t keep = a.shape.size() >= 2 ? shape[1] * inner : 1;
  Array out(shape, a.dtype);
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy_n(a.data.begin() + rows[r] * src_row, keep, out.data.begin() + static_cast<int64_t>(r) * keep);
  return out;
}

int64_t MaskSum(const Array& mask) {
  double n = 0;
  for (double m : mask.data) n += m;
  return static_cast<int64_t>(n);
}

}  // namespace

const InputSpec* LossMaskInput(const FunctionSpec& spec) {
  for (const InputSpec& in : spec.inputs)
    if (in.is_mask && in.role == Role::kTokens) return &in;
  return nullptr;
}

bool TakesGlobalBatchInfo(const FunctionSpec& spec) { return spec.FindConfigKey("dp_size") != nullptr; }

TrainerCounts CountsFor(const FunctionSpec& spec, const Case& full, const ShardPlan& plan) {
  TrainerCounts c;
  c.dp_size = plan.dp_size();
  const InputSpec* mask_spec = LossMaskInput(spec);
  if (!mask_spec) throw std::logic_error(spec.name + ": no token mask to count the batch with");
  const Array& mask = full.Input(mask_spec->name);
  c.batch_num_tokens = MaskSum(mask);
  c.global_batch_size = mask.rows();
  if (plan.trainer.sequences == SequenceCount::kLive) {
    c.global_batch_size = 0;
    for (int64_t i = 0; i < mask.rows(); ++i) {
      bool live = false;
      for (int64_t t = 0; t < mask.cols() && !live; ++t) live = mask.at(i, t) != 0.0;
      c.global_batch_size += live ? 1 : 0;
    }
  }
  return c;
}

int64_t MicroBatchHorizon(const FunctionSpec& spec, const Case& full, const std::vector<int64_t>& rows,
                          Horizon horizon) {
  const InputSpec* mask_spec = LossMaskInput(spec);
  const Array& mask = full.Input(mask_spec->name);
  if (horizon == Horizon::kFull) return mask.cols();
  int64_t width = 1;
  for (int64_t i : rows)
    for (int64_t t = mask.cols() - 1; t >= width; --t)
      if (mask.at(i, t) != 0.0) {
        width = t + 1;
        break;
      }
  return width;
}

Case SliceRows(const FunctionSpec& spec, const Case& full, const std::vector<int64_t>& rows, int64_t horizon) {
  Case c;
  c.file = full.file;
  c.family = full.family;
  c.function = full.function;
  c.name = full.name;
  c.dtype = full.dtype;
  c.seed = full.seed;
  c.why = full.why;
  c.config = full.config;
  for (const auto& [name, array] : full.inputs) {
    const InputSpec* in = spec.FindInput(name);
    const Role role = in ? in->role : Role::kScalar;
    switch (role) {
      case Role::kTokens:
      case Role::kVocabLogits: c.inputs[name] = SliceBatchMajor(array, rows, horizon); break;
      case Role::kSequences:
      case Role::kGroupIndex:
      case Role::kComponents: c.inputs[name] = SliceBatchMajor(array, rows, std::nullopt); break;
      case Role::kScalar:
      case Role::kComponentWeights: c.inputs[name] = array; break;
    }
  }
  return c;
}

ShardedCase ShardCase(const FunctionSpec& spec, const Case& full, const ShardPlan& plan) {
  ValidatePlan(plan, full.Input(LossMaskInput(spec)->name).rows());
  ShardedCase s;
  s.dp_size = plan.dp_size();
  s.counts = CountsFor(spec, full, plan);
  for (int64_t r = 0; r < plan.dp_size(); ++r) {
    const Rank& rank = plan.ranks[static_cast<size_t>(r)];
    for (size_t m = 0; m < rank.micro_batches.size(); ++m) {
      ShardCall call;
      call.rank = r;
      call.micro_batch = static_cast<int64_t>(m);
      call.rows = rank.micro_batches[m].rows;
      call.horizon = MicroBatchHorizon(spec, full, call.rows, plan.trainer.horizon);
      call.input = SliceRows(spec, full, call.rows, call.horizon);
      call.input.name = full.name + "/rank" + std::to_string(r) + "/mb" + std::to_string(m);
      if (TakesGlobalBatchInfo(spec)) {
        call.input.config.Set("dp_size", s.counts.dp_size);
        call.input.config.Set("batch_num_tokens", s.counts.batch_num_tokens);
        call.input.config.Set("global_batch_size", s.counts.global_batch_size);
      }
      // Implementations other than the oracle read a resolved config, as the judge hands it.
      ResolveConfig(spec, call.input.config);
      s.calls.push_back(std::move(call));
    }
  }
  return s;
}

}  // namespace verlconf::sharding
