#include "properties/sharding/sharding_testing.h"

#include <algorithm>
#include <cctype>

#include "oracle/core/generate.h"
#include "oracle/registry.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/shard.h"

namespace verlconf::testing {

std::vector<const FunctionSpec*> AggregatingLosses() {
  std::vector<const FunctionSpec*> out;
  for (const FunctionSpec& s : Registry()) {
    if (!s.FindConfigKey("loss_agg_mode") && !s.FindConfigKey("dp_size")) continue;
    if (!s.oracle || !s.generate || s.grads.empty()) continue;
    const bool has_loss = std::any_of(s.outputs.begin(), s.outputs.end(),
                                      [](const OutputSpec& o) { return o.kind == OutputKind::kScalar; });
    if (has_loss) out.push_back(&s);
  }
  return out;
}

std::string TestName(const FunctionSpec& spec) {
  std::string n = spec.family + "_" + spec.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

void MaskRank(const FunctionSpec& spec, Case& full, const sharding::ShardPlan& plan, int64_t rank) {
  // Every token mask, so that a token pick (cov_selected) never holds a masked token.
  for (const InputSpec& in : spec.inputs) {
    auto it = full.inputs.find(in.name);
    if (!in.is_mask || in.role != Role::kTokens || it == full.inputs.end()) continue;
    for (int64_t i : plan.RankRows(rank))
      for (int64_t t = 0; t < it->second.cols(); ++t) it->second.at(i, t) = 0.0;
  }
}

bool HasEmptyCall(const FunctionSpec& spec, const Case& full, const sharding::ShardPlan& plan) {
  const sharding::ShardedCase sharded = sharding::ShardCase(spec, full, plan);
  const std::string& mask = sharding::LossMaskInput(spec)->name;
  return std::any_of(sharded.calls.begin(), sharded.calls.end(), [&mask](const sharding::ShardCall& c) {
    const Array& m = c.input.Input(mask);
    return std::all_of(m.data.begin(), m.data.end(), [](double v) { return v == 0.0; });
  });
}

rc::Gen<ShardedDraw> ArbitrarySharding(const FunctionSpec& spec, DType dtype) {
  return rc::gen::exec([&spec, dtype] {
    const int64_t k = *rc::gen::element<int64_t>(2, 4, 8);
    GenParams p;
    p.seed = *rc::gen::arbitrary<uint64_t>();
    p.batch = *rc::gen::inRange<int64_t>(k, 25);
    p.tokens = *rc::gen::inRange<int64_t>(1, 33);
    p.dtype = dtype;
    ShardedDraw d;
    d.full = spec.generate(p);
    oracle::InputGen g(p.seed ^ 0x9e3779b97f4a7c15ULL);
    d.plan = sharding::RandomPlan(g, p.batch, k, 3);
    if (g.Coin(0.25)) MaskRank(spec, d.full, d.plan, g.Int(0, k - 1));
    if (g.Coin(0.25)) d.plan.trainer.horizon = sharding::Horizon::kFull;
    if (g.Coin(0.25)) d.plan.trainer.sequences = sharding::SequenceCount::kLive;
    if (spec.FindInput("cov_selected") && !d.full.OptionalInput("cov_selected") && g.Coin(0.5)) {
      const Array& mask = d.full.Input(sharding::LossMaskInput(spec)->name);
      Array pick(mask.shape, mask.dtype);
      for (int64_t e = 0; e < pick.size(); ++e) pick[e] = mask[e] != 0.0 && g.Coin(0.2) ? 1.0 : 0.0;
      d.full.inputs["cov_selected"] = pick;
    }
    return d;
  });
}

void showValue(const ShardedDraw& d, std::ostream& os) {
  const FunctionSpec* spec = SpecFor(d.full);
  const Array& mask = d.full.Input(sharding::LossMaskInput(*spec)->name);
  os << d.full.family << "/" << d.full.function << " seed " << d.full.seed << " " << mask.rows() << "x" << mask.cols()
     << " " << DTypeName(d.full.dtype) << " mode '" << sharding::EffectiveAggMode(*spec, d.full) << "' "
     << d.plan.Describe();
}

Closeness CloseResults(const FunctionSpec& spec, const Result& got, const Result& want, Tol loss_tol, Tol grad_tol,
                       double scale) {
  const std::string& loss = sharding::LossOutput(spec);
  loss_tol.atol *= std::max(1.0, scale);
  const double g = got.outputs.at(loss)[0], w = want.outputs.at(loss)[0];
  if (!Close(g, w, loss_tol, NanPolicy::kNanEqualsNan))
    return Closeness::Fail(loss + ": combined " + std::to_string(g) + ", reference " + std::to_string(w));
  for (const std::string& name : spec.grads) {
    Closeness c = Close(got.grads.at(name), want.grads.at(name), grad_tol, NanPolicy::kNanEqualsNan);
    if (!c) return Closeness::Fail("grads/" + name + ": " + c.message());
  }
  return Closeness::Pass();
}

}  // namespace verlconf::testing
