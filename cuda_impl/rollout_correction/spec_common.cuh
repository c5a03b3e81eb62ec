// What the rollout-correction CUDA entries share on the host (spec*.cu): the config
// parsed with the oracle's own parsers and checks into the plans the templates take.
// Errors are the oracle's, raised by the oracle's functions in the same order.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include "cuda_impl/rollout_correction/pipeline.cuh"
#include "oracle/core/case.h"
#include "oracle/core/errors.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf::cuda {

// compute_rollout_correction_weights' arguments (oracle::ParseRolloutIsArguments: its
// checks), as the float32 bounds the weights use.
inline IsConfig ParseIsConfig(const ConfigValue& rollout_is, const ConfigValue& threshold) {
  const oracle::IsArguments args = oracle::ParseRolloutIsArguments(rollout_is, threshold);
  const oracle::IsThreshold& th = args.threshold;
  IsConfig cfg;
  cfg.sequence = args.sequence;
  cfg.upper_py = th.upper;
  cfg.metric_lower_py = th.lower ? *th.lower : 1.0 / th.upper;
  cfg.bounds.icepop = th.lower.has_value();
  cfg.bounds.upper = static_cast<float>(th.upper);
  cfg.bounds.lower = th.lower ? static_cast<float>(*th.lower) : 0.0f;
  cfg.bounds.metric_lower = static_cast<float>(cfg.metric_lower_py);
  return cfg;
}

// compute_rollout_rejection_mask's arguments (oracle::ParseRolloutRsArguments: its
// checks and parsing): each option's statistic and keep range, the k1 bounds math.log
// of the Python floats, then float32.
inline std::vector<RsOption> ParseRsOptions(const ConfigValue& rollout_rs, const ConfigValue& threshold) {
  std::vector<RsOption> out;
  for (const auto& [name, th] : oracle::ParseRolloutRsArguments(rollout_rs, threshold)) {
    RsOption o;
    o.name = name;
    const char k = name.back();
    o.kind = k == '1' ? RsKind::kK1 : k == '2' ? RsKind::kK2 : RsKind::kK3;
    o.level = name.rfind("token_", 0) == 0     ? RsLevel::kToken
              : name.rfind("seq_sum", 0) == 0  ? RsLevel::kSeqSum
              : name.rfind("seq_mean", 0) == 0 ? RsLevel::kSeqMean
                                               : RsLevel::kSeqMax;
    if (o.kind == RsKind::kK1)
      o.range = {true, static_cast<float>(std::log(*th.lower)), static_cast<float>(std::log(th.upper))};
    else
      o.range = {false, 0.0f, static_cast<float>(th.upper)};
    out.push_back(std::move(o));
  }
  return out;
}

// The pipeline's plan from the five settings: IS when rollout_is and its threshold are
// both set, RS when rollout_rs is.
inline CorrectionPlan PlanCorrection(const oracle::RolloutCorrectionSettings& s) {
  CorrectionPlan p;
  if (!oracle::IsNone(s.rollout_is) && !oracle::IsNone(s.rollout_is_threshold))
    p.is = ParseIsConfig(s.rollout_is, s.rollout_is_threshold);
  p.batch_normalize = s.rollout_is_batch_normalize;
  if (!oracle::IsNone(s.rollout_rs)) {
    try {
      oracle::CheckRsThresholdGiven(s.rollout_rs, s.rollout_rs_threshold);
      p.rs = ParseRsOptions(s.rollout_rs, s.rollout_rs_threshold);
    } catch (const VerlError&) {
      p.rs_error = std::current_exception();
    }
  }
  return p;
}

}  // namespace verlconf::cuda
