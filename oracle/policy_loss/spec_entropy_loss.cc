// Registry entry for the entropy loss (family "policy_loss", named after verl's
// function compute_entropy_loss; not a POLICY_LOSS_REGISTRY entry):
//   H_{i,t} = logsumexp(z_{i,t,:}) - sum_v softmax(z_{i,t,:})_v z_{i,t,v}
//             (verl.utils.torch_functional.entropy_from_logits)
//   loss    = agg_loss(H, response_mask, loss_agg_mode)   (no global_batch_info)
// Gradient with respect to the logits: dH/dz_v = -p_v (z_v - sum_u p_u z_u), times the
// aggregation weight of the token.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf {
namespace {

Result RunEntropyLoss(const Case& c) {
  const Array& z = c.Input("logits");
  const Array& mask = c.Input("response_mask");
  const int64_t V = z.shape.at(2);
  Array H(mask.shape, mask.dtype);
  Array dH(z.shape, z.dtype);
  std::vector<double> p(static_cast<size_t>(V));
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double* row = z.data.data() + k * V;
    double m = row[0];
    for (int64_t v = 1; v < V; ++v) m = std::max(m, row[v]);
    double s = 0.0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - m);
    const double lse = m + std::log(s);
    double mean_z = 0.0;  // sum_v p_v z_v
    for (int64_t v = 0; v < V; ++v) {
      p[static_cast<size_t>(v)] = std::exp(row[v] - lse);
      mean_z += p[static_cast<size_t>(v)] * row[v];
    }
    H[k] = lse - mean_z;
    for (int64_t v = 0; v < V; ++v) dH[k * V + v] = -p[static_cast<size_t>(v)] * (row[v] - mean_z);
  }
  const std::string mode = c.config.String("loss_agg_mode");
  const oracle::GlobalBatchInfo global;  // verl passes none: agg_loss's defaults
  const Array w = oracle::agg_loss_weights(mask, mode, global);
  for (int64_t k = 0; k < mask.size(); ++k)
    for (int64_t v = 0; v < V; ++v) dH[k * V + v] *= w[k];
  Result r;
  r.outputs["entropy_loss"] = Array::Scalar(oracle::agg_loss(H, mask, mode, global), c.dtype);
  r.grads["logits"] = std::move(dH);
  r.magnitude = oracle::agg_loss_magnitude(H, mask, mode, global);
  return r;
}

Case GenerateEntropyLoss(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  const int64_t V = g.Int(2, 12);
  Array z = g.Normal(p.batch, p.tokens * V, 0.0, g.Coin(0.5) ? 1.0 : 4.0, p.dtype);
  z.shape = {p.batch, p.tokens, V};
  c.inputs["logits"] = z;
  c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
  return c;
}

}  // namespace

void AddEntropyLossSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "compute_entropy_loss";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_entropy_loss";
  s.inputs = {{"logits", Role::kVocabLogits, false, false, "B x T x V logits"},
              {"response_mask", Role::kTokens, /*is_mask=*/true}};
  s.config = {{"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode", oracle::AggModeChoices()}};
  s.outputs = {{"entropy_loss", OutputKind::kScalar}};
  s.grads = {"logits"};
  s.oracle = RunEntropyLoss;
  s.generate = GenerateEntropyLoss;
  s.notes = "agg_loss(entropy_from_logits(logits)); no global_batch_info (agg_loss's defaults).";
  out.push_back(std::move(s));
}

}  // namespace verlconf
