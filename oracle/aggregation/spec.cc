// Registry entries for agg_loss, one per loss_agg_mode (family "aggregation").
#include "oracle/aggregation/spec.h"

#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"

namespace verlconf {
namespace {

Result RunAgg(const Case& c) {
  const Array& loss_mat = c.Input("loss_mat");
  const Array& mask = c.Input("loss_mask");
  const oracle::GlobalBatchInfo info = oracle::ReadGlobalBatchInfo(c.config);
  Result r;
  r.outputs["loss"] = Array::Scalar(oracle::agg_loss(loss_mat, mask, c.function, info), c.dtype);
  r.grads["loss_mat"] = oracle::agg_loss_weights(mask, c.function, info);
  r.magnitude = oracle::agg_loss_magnitude(loss_mat, mask, c.function, info);
  return r;
}

Case GenerateAgg(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  c.inputs["loss_mat"] = g.Normal(p.batch, p.tokens, 0.0, 1.0, p.dtype);
  c.inputs["loss_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  return c;
}

}  // namespace

void AddAggregationSpecs(std::vector<FunctionSpec>& out) {
  for (const char* mode : oracle::kAggModes) {
    FunctionSpec s;
    s.name = mode;
    s.family = "aggregation";
    s.verl_symbol = "verl.trainer.ppo.core_algos.agg_loss";
    s.inputs = {{"loss_mat", Role::kTokens}, {"loss_mask", Role::kTokens, /*is_mask=*/true}};
    oracle::AddGlobalBatchKeys(s);
    s.outputs = {{"loss", OutputKind::kScalar}};
    s.grads = {"loss_mat"};
    s.oracle = RunAgg;
    s.generate = GenerateAgg;
    s.notes = "loss_agg_mode='" + s.name + "'";
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf
