// The critic's clipped value loss, float64.
#pragma once

#include <map>
#include <string>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

struct ValueLossResult {
  double loss = 0.0;
  Array grad_vpreds;                      // d loss / d vpreds
  std::map<std::string, double> metrics;  // "vf_clipfrac"
  Array boundary;                         // tokens whose clip decision is within float32 rounding
  AggregateMagnitude magnitude;           // of agg_loss's sum, before the 0.5 (Result::magnitude)
};

// Filled in by the registry entry's reader from the case's config; verl's defaults are
// the spec's ConfigKeys, not these (zero) initialisers.
struct ValueLossConfig {
  double cliprange_value = 0;
  std::string loss_agg_mode;
  GlobalBatchInfo global;
};

// verl: core_algos.compute_value_loss.
//
//   vc = max(min(vpreds, values + c), values - c)     (verl_F.clip_by_value)
//   l1 = (vpreds - returns)^2,  l2 = (vc - returns)^2
//   loss = 0.5 * agg_loss(max(l1, l2), mask, mode)
//   vf_clipfrac = masked_mean(l2 > l1, mask)
// Gradient with respect to vpreds by torch's rules: min/max split a tie 0.5/0.5 (so
// vpreds exactly on values +- c gets half the clipped branch's gradient), and l1 == l2
// splits between the two squared errors.
ValueLossResult compute_value_loss(const Array& vpreds, const Array& returns, const Array& values, const Array& mask,
                                   const ValueLossConfig& cfg);

}  // namespace verlconf::oracle
