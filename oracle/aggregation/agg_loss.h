// agg_loss of verl/trainer/ppo/core_algos.py: how a B x T loss matrix becomes the
// scalar that is backpropagated, float64.
#pragma once

#include <optional>
#include <string>

#include "oracle/core/case.h"
#include "oracle/core/tensor.h"

namespace verlconf::oracle {

// verl's loss_agg_mode strings, in the order verl documents them.
inline constexpr const char* kAggModes[] = {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                                            "seq-mean-token-sum-norm"};

// The global-batch arguments verl threads through config.global_batch_info. None means
// "derive it from this micro-batch", which verl refuses when dp_size > 1. The
// initialisers are agg_loss's own keyword defaults (no data parallelism, local counts):
// what a caller that passes no global-batch arguments gets (compute_entropy_loss).
// Registry entries that take them read dp_size and the counts from the case's config.
struct GlobalBatchInfo {
  int64_t dp_size = 1;
  std::optional<double> batch_num_tokens;
  std::optional<double> global_batch_size;
  std::optional<double> loss_scale_factor;
};

// Every mode is linear in the loss matrix: loss = sum_{i,t} W_{i,t} * L_{i,t}, with
// W depending only on the mask and the global-batch arguments; W is the gradient
// d loss / d L that autograd gives:
//
//   token-mean              W = m / N_tok * dp           N_tok = sum(m) unless given
//   token-sum               W = m * dp
//   seq-mean-token-sum      W = m * [row alive] / N_seq * dp
//   seq-mean-token-mean     W = m / (sum_t m + 1e-8) * [row alive] / N_seq * dp
//   seq-mean-token-sum-norm as seq-mean-token-sum, divided by loss_scale_factor (T)
//
// A row is alive when its mask sums to > 0; N_seq counts alive rows unless given.
// Throws VerlError(ValueError) for an unknown mode, or for dp_size > 1 without the
// global count the mode needs. A zero count is not an error in verl: the loss becomes
// NaN (0/0) while the gradient stays zero; both are mirrored.
Array agg_loss_weights(const Array& loss_mask, const std::string& mode, const GlobalBatchInfo& info);

// The aggregated loss. token-* modes drop masked-out entries (NaN-safe); the seq-*
// modes sum loss * mask per live row, so a NaN under a zero mask propagates there, as
// it does in verl.
double agg_loss(const Array& loss_mat, const Array& loss_mask, const std::string& mode, const GlobalBatchInfo& info);

// The magnitude behind agg_loss's value (Result::magnitude): sum |W_k L_k| over the live
// terms, and how many there are. A float32 sum of these terms rounds against it.
AggregateMagnitude agg_loss_magnitude(const Array& loss_mat, const Array& loss_mask, const std::string& mode,
                                      const GlobalBatchInfo& info);

bool IsAggMode(const std::string& mode);

// The arguments agg_loss refuses, as verl does (VerlError ValueError): an unknown mode,
// or dp_size > 1 without the global count the mode divides by. Shared with cuda_impl.
void CheckAggArguments(const std::string& mode, const GlobalBatchInfo& info);

}  // namespace verlconf::oracle
