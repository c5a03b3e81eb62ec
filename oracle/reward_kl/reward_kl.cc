// Mirrors verl 0.9.1 ray_trainer.apply_kl_penalty, core_algos.compute_rewards,
// core_algos.get_kl_controller, FixedKLController.update and AdaptiveKLController.update.
#include "oracle/reward_kl/reward_kl.h"

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/kl/kl_penalty.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

double kl_controller_update(const KlControl& ctrl, double current_kl, double n_steps) {
  if (ctrl.type == "fixed") return ctrl.kl_coef;
  if (ctrl.type != "adaptive") throw VerlError("NotImplementedError", "");
  if (!(ctrl.horizon > 0)) throw VerlError("AssertionError", "horizon must be larger than 0");
  // np.clip keeps a NaN; the Python arithmetic is left to right.
  double error = PyFloatDivide(current_kl, ctrl.target_kl) - 1.0;
  if (!std::isnan(error)) error = std::min(std::max(error, -0.2), 0.2);
  const double mult = 1.0 + error * n_steps / ctrl.horizon;
  return ctrl.kl_coef * mult;
}

Array compute_rewards(const Array& scores, const Array& old_log_prob, const Array& ref_log_prob, double kl_ratio) {
  Array r(scores.shape, scores.dtype);
  for (int64_t k = 0; k < scores.size(); ++k) r[k] = scores[k] - (old_log_prob[k] - ref_log_prob[k]) * kl_ratio;
  return r;
}

KlPenaltyResult apply_kl_penalty(const Array& scores, const Array& old_log_probs, const Array& ref_log_prob,
                                 const Array& mask, const std::string& kl_penalty_name, const KlControl& ctrl) {
  Array kld = kl_penalty(old_log_probs, ref_log_prob, kl_penalty_name);
  for (int64_t k = 0; k < kld.size(); ++k) kld[k] *= mask[k];
  KlPenaltyResult out;
  out.beta = ctrl.kl_coef;
  out.token_level_rewards = Array(scores.shape, scores.dtype);
  for (int64_t k = 0; k < scores.size(); ++k) out.token_level_rewards[k] = scores[k] - out.beta * kld[k];
  const Array row_means = masked_mean_rows(kld, mask);
  ExactSum total;
  for (double v : row_means.data) total.Add(v);
  out.current_kl = total.Value() / static_cast<double>(row_means.size());
  out.next_coef = kl_controller_update(ctrl, out.current_kl, static_cast<double>(scores.rows()));
  return out;
}

}  // namespace verlconf::oracle
