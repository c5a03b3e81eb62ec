#include "oracle/policy_loss/legacy.h"

#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

PolicyLossResult policy_loss_reinforce(const PolicyLossInputs& in, const std::string& loss_agg_mode,
                                       const GlobalBatchInfo& global) {
  const Array& mask = in.response_mask;
  Array losses(mask.shape, mask.dtype), dlosses(mask.shape, mask.dtype), kl(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double A = in.advantages[k];
    const double w = in.rollout_is_weights ? (*in.rollout_is_weights)[k] : 1.0;
    losses[k] = in.rollout_is_weights ? -A * in.log_prob[k] * w : -A * in.log_prob[k];
    dlosses[k] = -A * w;
    kl[k] = -(in.log_prob[k] - in.old_log_prob[k]);
  }
  PolicyLossResult out;
  Aggregate(losses, dlosses, mask, loss_agg_mode, global, out);
  out.metrics["actor/ppo_kl"] = masked_mean(kl, mask);
  return out;
}

PolicyLossResult policy_loss_deprecated(const PolicyLossInputs& in, double cliprange_low, double cliprange_high,
                                        double clip_ratio_c, const std::string& loss_agg_mode) {
  VanillaConfig cfg;
  cfg.clip_ratio_low = cliprange_low;
  cfg.clip_ratio_high = cliprange_high;
  cfg.clip_ratio_c = clip_ratio_c;
  cfg.loss_agg_mode = loss_agg_mode;
  PolicyLossInputs plain = in;
  plain.rollout_is_weights = nullptr;
  PolicyLossResult out = policy_loss_vanilla(plain, cfg);
  std::map<std::string, double> renamed;
  for (const auto& [k, v] : out.metrics) renamed[k.substr(k.find('/') + 1)] = v;  // "actor/x" -> "x"
  out.metrics = std::move(renamed);
  return out;
}

}  // namespace verlconf::oracle
