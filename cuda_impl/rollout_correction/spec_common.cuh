// What the rollout-correction CUDA entries share on the host (spec*.cu): the config
// parsed with the oracle's own parsers into the plans the templates take, verl's checks
// of the mask, and the conversion of the case's tensors. Errors are the oracle's: the
// same VerlError class in the same order.
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

// A config value as verl's f-string shows it in a message: a string bare, else str().
inline std::string DescribeConfigValue(const ConfigValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return oracle::PyStr(v);
}

// compute_rollout_correction_weights' checks of rollout_is and its threshold
// (oracle::ParseRolloutIsThreshold), as the float32 bounds the weights use.
inline IsConfig ParseIsConfig(const ConfigValue& rollout_is, const ConfigValue& threshold) {
  const auto* level = std::get_if<std::string>(&rollout_is);
  if (!level || (*level != "token" && *level != "sequence"))
    throw VerlError("ValueError", "Invalid rollout_is: " + DescribeConfigValue(rollout_is) +
                                      ". Must be one of {'token', 'sequence'}.");
  const oracle::IsThreshold th = oracle::ParseRolloutIsThreshold(threshold);
  IsConfig cfg;
  cfg.sequence = *level == "sequence";
  cfg.upper_py = th.upper;
  cfg.metric_lower_py = th.lower ? *th.lower : 1.0 / th.upper;
  cfg.bounds.icepop = th.lower.has_value();
  cfg.bounds.upper = static_cast<float>(th.upper);
  cfg.bounds.lower = th.lower ? static_cast<float>(*th.lower) : 0.0f;
  cfg.bounds.metric_lower = static_cast<float>(cfg.metric_lower_py);
  return cfg;
}

// compute_rollout_rejection_mask's checks and parsing (oracle::ParseRolloutRsOptions,
// oracle::ParseRolloutRsThresholds): each option's statistic and keep range, the k1
// bounds math.log of the Python floats, then float32.
inline std::vector<RsOption> ParseRsOptions(const ConfigValue& rollout_rs, const ConfigValue& threshold) {
  const auto* rs = std::get_if<std::string>(&rollout_rs);
  if (!rs)
    throw VerlError("ValueError", "rollout_rs must be a non-empty string (comma separated for multiple options).");
  if (oracle::IsNone(threshold))
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  const std::vector<std::string> names = oracle::ParseRolloutRsOptions(*rs);
  std::vector<RsOption> out;
  for (const auto& [name, th] : oracle::ParseRolloutRsThresholds(names, threshold)) {
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
      if (oracle::IsNone(s.rollout_rs_threshold))
        throw VerlError("ValueError",
                        "rollout_rs_threshold must be explicitly provided when rollout_rs is enabled. Set "
                        "rollout_rs_threshold to the desired threshold value.");
      p.rs = ParseRsOptions(s.rollout_rs, s.rollout_rs_threshold);
    } catch (const VerlError&) {
      p.rs_error = std::current_exception();
    }
  }
  return p;
}

// The pipeline's checks before it computes anything: a valid token, equal shapes.
inline void CheckPipelineInputs(const Array& old_lp, const Array& rollout_lp, const Array& mask) {
  oracle::RequireValidToken(mask);
  if (old_lp.shape != rollout_lp.shape || old_lp.shape != mask.shape)
    throw VerlError("ValueError", "old_log_prob, rollout_log_prob and response_mask shapes differ.");
}

}  // namespace verlconf::cuda
