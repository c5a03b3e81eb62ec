#include "oracle/policy_loss/value_loss.h"

#include <cmath>

#include "oracle/core/torch_rules.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {

ValueLossResult compute_value_loss(const Array& vpreds, const Array& returns, const Array& values, const Array& mask,
                                   const ValueLossConfig& cfg) {
  const double c = cfg.cliprange_value;
  Array losses(mask.shape, mask.dtype), dloss(mask.shape, mask.dtype), clipped(mask.shape, mask.dtype);
  Array boundary(mask.shape, mask.dtype);
  const double eps = mask.dtype == DType::kFloat32 ? kEps32 : kEps64;
  for (int64_t k = 0; k < mask.size(); ++k) {
    const double v = vpreds[k], R = returns[k];
    const double hi = values[k] + c, lo = values[k] - c;
    const double m = std::min(v, hi);
    const double vc = std::max(m, lo);
    const double dvc = MinShareA(v, hi) * MaxShareA(m, lo);  // d vc / d vpreds
    const double l1 = (v - R) * (v - R);
    const double l2 = (vc - R) * (vc - R);
    losses[k] = std::max(l1, l2);
    const double s = MaxShareA(l1, l2);
    dloss[k] = s * 2.0 * (v - R) + (1.0 - s) * 2.0 * (vc - R) * dvc;
    clipped[k] = l2 > l1 ? 1.0 : 0.0;
    // Rounding decides l2 > l1 only where a correct implementation may compute it
    // differently: v within rounding of a clip bound (V + c is itself rounded), or v
    // clipped with the two squares a few ulps apart. Strictly inside the range the clip
    // returns v itself, l1 and l2 are the same number, and nothing is clipped in any
    // precision: no decision there for an allowance to count.
    const double scale = std::max({1.0, std::fabs(values[k]), std::fabs(c), std::fabs(v)});
    const bool at_bound =
        std::fabs(v - hi) <= kDecisionUlps * eps * scale || std::fabs(v - lo) <= kDecisionUlps * eps * scale;
    const bool close_squares = vc != v && std::fabs(l2 - l1) <= kDecisionUlps * eps * std::max({l1, l2, 1e-300});
    boundary[k] = at_bound || close_squares ? 1.0 : 0.0;
  }
  ValueLossResult out;
  out.loss = 0.5 * agg_loss(losses, mask, cfg.loss_agg_mode, cfg.global);
  out.magnitude = agg_loss_magnitude(losses, mask, cfg.loss_agg_mode, cfg.global);
  const Array w = agg_loss_weights(mask, cfg.loss_agg_mode, cfg.global);
  out.grad_vpreds = Array(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) out.grad_vpreds[k] = 0.5 * w[k] * dloss[k];
  out.metrics["vf_clipfrac"] = masked_mean(clipped, mask);
  out.boundary = std::move(boundary);
  return out;
}

}  // namespace verlconf::oracle
