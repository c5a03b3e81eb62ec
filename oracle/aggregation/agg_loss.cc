// Mirrors verl 0.9.1 core_algos.agg_loss.
#include "oracle/aggregation/agg_loss.h"

#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::oracle {
namespace {

// The shape every mode shares: loss = (sum_k coef_k * L_k) / divisor * dp / norm.
// coef carries the mask and per-row factors; divisor is the global token or sequence
// count (possibly 0, which verl turns into NaN or inf rather than an error).
struct Plan {
  Array coef;
  std::vector<double> alive;  // seq modes: row has a non-zero mask sum
  double divisor = 1.0;
  double norm = 1.0;
  bool seq = false;
};

double RowMaskSum(const Array& m, int64_t i) {
  ExactSum s;
  for (int64_t t = 0; t < m.cols(); ++t) s.Add(m.at(i, t));
  return s.Value();
}

Plan MakePlan(const Array& mask, const std::string& mode, const GlobalBatchInfo& info) {
  CheckAggArguments(mode, info);
  Plan p;
  p.coef = mask;
  if (mode == "token-sum") return p;
  if (mode == "token-mean") {
    if (info.batch_num_tokens) {
      p.divisor = *info.batch_num_tokens;
    } else {
      ExactSum s;
      for (double m : mask.data) s.Add(m);
      p.divisor = s.Value();
    }
    return p;
  }
  p.seq = true;
  p.alive.assign(static_cast<size_t>(mask.rows()), 0.0);
  double n_alive = 0.0;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    const double row = RowMaskSum(mask, i);
    if (row > 0.0) {
      p.alive[static_cast<size_t>(i)] = 1.0;
      n_alive += 1.0;
    }
    if (mode == "seq-mean-token-mean")
      for (int64_t t = 0; t < mask.cols(); ++t) p.coef.at(i, t) = mask.at(i, t) / (row + kMaskedMeanEps);
  }
  p.divisor = info.global_batch_size ? *info.global_batch_size : n_alive;
  if (mode == "seq-mean-token-sum-norm")
    p.norm = info.loss_scale_factor ? *info.loss_scale_factor : static_cast<double>(mask.cols());
  return p;
}

}  // namespace

void CheckAggArguments(const std::string& mode, const GlobalBatchInfo& info) {
  if (!IsAggMode(mode)) throw VerlError("ValueError", "Invalid loss_agg_mode: " + mode);
  if (info.dp_size <= 1 || mode == "token-sum") return;
  if (mode == "token-mean") {
    if (!info.batch_num_tokens) throw VerlError("ValueError", "(global) batch_num_tokens is required when dp_size > 1");
  } else if (!info.global_batch_size) {
    throw VerlError("ValueError", "global_batch_size is required when dp_size > 1");
  }
}

bool IsAggMode(const std::string& mode) {
  for (const char* m : kAggModes)
    if (mode == m) return true;
  return false;
}

double agg_loss(const Array& loss_mat, const Array& mask, const std::string& mode, const GlobalBatchInfo& info) {
  const Plan p = MakePlan(mask, mode, info);
  ExactSum total;
  if (!p.seq) {
    // masked_sum: entries under a zero mask are dropped, NaN or not.
    for (int64_t k = 0; k < mask.size(); ++k) total.Add(MaskedTerm(loss_mat[k], p.coef[k]));
  } else {
    // Per row verl sums loss * mask directly (a NaN under a zero mask propagates into
    // that row), then masked_sum over rows drops dead rows entirely.
    for (int64_t i = 0; i < mask.rows(); ++i) {
      if (p.alive[static_cast<size_t>(i)] == 0.0) continue;
      ExactSum row;
      for (int64_t t = 0; t < mask.cols(); ++t) row.Add(loss_mat.at(i, t) * p.coef.at(i, t));
      total.Add(row.Value());
    }
  }
  return total.Value() / p.divisor * static_cast<double>(info.dp_size) / p.norm;
}

AggregateMagnitude agg_loss_magnitude(const Array& loss_mat, const Array& mask, const std::string& mode,
                                      const GlobalBatchInfo& info) {
  const Plan p = MakePlan(mask, mode, info);
  ExactSum magnitude, weights;
  double weight_max = 0.0;
  int64_t terms = 0;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    if (p.seq && p.alive[static_cast<size_t>(i)] == 0.0) continue;
    for (int64_t t = 0; t < mask.cols(); ++t) {
      const double w = p.coef.at(i, t);
      if (w == 0.0 || mask.at(i, t) == 0.0) continue;
      magnitude.Add(std::fabs(loss_mat.at(i, t) * w));
      weights.Add(std::fabs(w));
      weight_max = std::max(weight_max, std::fabs(w));
      ++terms;
    }
  }
  const double scale = static_cast<double>(info.dp_size) / p.divisor / p.norm;
  const double abs_sum = magnitude.Value() * scale;
  // A sum that is not finite gets no allowance: a NaN or inf loss is compared as such.
  if (!std::isfinite(abs_sum) || !std::isfinite(scale)) return {};
  return {abs_sum, terms, weights.Value() * std::fabs(scale), weight_max * std::fabs(scale)};
}

Array agg_loss_weights(const Array& mask, const std::string& mode, const GlobalBatchInfo& info) {
  const Plan p = MakePlan(mask, mode, info);
  const double scale = static_cast<double>(info.dp_size) / p.divisor / p.norm;
  Array w(mask.shape, mask.dtype);
  for (int64_t i = 0; i < mask.rows(); ++i) {
    const bool row_alive = !p.seq || p.alive[static_cast<size_t>(i)] != 0.0;
    for (int64_t t = 0; t < mask.cols(); ++t) {
      // Autograd routes nothing through a zero mask or a dead row, so a zero divisor
      // (all rows dead) gives zero gradient, not 0 * inf.
      const bool live = row_alive && mask.at(i, t) != 0.0;
      w.at(i, t) = live ? p.coef.at(i, t) * scale : 0.0;
    }
  }
  return w;
}

}  // namespace verlconf::oracle
