// Rejection sampling (verl: compute_rollout_rejection_mask) and its metrics
// (compute_rs_metrics) on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states them. No option's statistic is stored: the rejection
// stage of the row pass (reductions.cuh) recomputes each token option's divergence from
// the log-ratio, gathers its metric terms, writes the token options' keep mask into the
// output mask and sums each divergence along the row for the sequence options. The
// sequence options are decided per row on the device as the pass finishes a row, and
// their metrics are finished on the host from the rows' values; a last pass zeroes the
// rows they reject, writing only those.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/rollout_correction/reductions.cuh"

namespace verlconf::cuda {

enum class RsKind : int { kK1, kK2, kK3 };
enum class RsLevel : int { kToken, kSeqSum, kSeqMean, kSeqMax };

// What an option keeps, compared in float32 as verl's float32 tensors compare with a
// Python float: k1 log(lower) <= stat <= log(upper); k2 / k3 stat <= upper.
struct KeepRange {
  bool two_sided = false;  // k1
  float lo = 0.0f, hi = 0.0f;
  __host__ __device__ bool Keeps(float x) const { return two_sided ? (x >= lo && x <= hi) : x <= hi; }
};

// One option of a rollout_rs chain, parsed on the host.
struct RsOption {
  std::string name;
  RsKind kind = RsKind::kK1;
  RsLevel level = RsLevel::kToken;
  KeepRange range;
};

// The divergence of a clamped log-ratio l: k1 = -l, k2 = l^2 / 2, k3 = exp(l) - 1 - l
// (through expm1, which keeps k3's few significant bits for a small l).
__host__ __device__ inline float RsDivergence(RsKind kind, float lr) {
  const float l = TorchClamp(lr, -kRolloutSafetyBoundF, kRolloutSafetyBoundF);
  if (kind == RsKind::kK1) return -l;
  if (kind == RsKind::kK2) return 0.5f * l * l;
  return expm1f(l) - l;
}

// seq_sum: the sum; seq_mean: masked_mean along the row; seq_max: the maximum over valid
// tokens, 0 for a row without any.
__host__ __device__ inline float RowValueOf(RsLevel level, float sum, float max, float mask_sum) {
  if (level == RsLevel::kSeqSum) return sum;
  if (level == RsLevel::kSeqMean) return MeanOf(sum, mask_sum);
  return max == -PosInf() ? 0.0f : max;
}

// The thresholds compute_rs_metrics compares with (float32), and the option's keep range
// (the rejection counts; unused by a direct compute_rs_metrics).
struct RsThresholds {
  float hi = 0.0f, lo = 0.0f;
  bool apply_lower = false;
  KeepRange keep;
};

inline RsThresholds ThresholdsOf(const RsOption& o) { return {o.range.hi, o.range.lo, o.range.two_sided, o.range}; }

// What a token gives compute_rs_metrics for one statistic: masked sums of it, of the
// fraction indicators, of the statistic clamped for the std (with its spread) and of the
// option's rejections; its extrema over valid tokens.
struct RsTokenTerms {
  float stat, high, low, clamped, rejected, max, min;
  Spread spread;

  __host__ __device__ static RsTokenTerms Identity() { return {0, 0, 0, 0, 0, -PosInf(), PosInf(), {0, 0}}; }
  __host__ __device__ static RsTokenTerms Merge(const RsTokenTerms& a, const RsTokenTerms& b, const MaskWeights& mw) {
    return {a.stat + b.stat,         a.high + b.high,      a.low + b.low,        a.clamped + b.clamped,
            a.rejected + b.rejected, NanMax(a.max, b.max), NanMin(a.min, b.min), MergeSpread(a.spread, b.spread, mw)};
  }
};

__host__ __device__ inline float RsClamped(float x, const RsThresholds& th) {
  return TorchClamp(x, th.apply_lower ? th.lo : 0.0f, th.hi);
}

__host__ __device__ inline RsTokenTerms RsTokenTermsOf(float x, float m, const RsThresholds& th) {
  const bool valid = m != 0.0f;
  const float c = RsClamped(x, th);
  RsTokenTerms t;
  t.stat = MaskedTerm(x, m);
  t.high = MaskedTerm(x > th.hi ? 1.0f : 0.0f, m);
  t.low = MaskedTerm(x < th.lo ? 1.0f : 0.0f, m);
  t.clamped = MaskedTerm(c, m);
  t.rejected = MaskedTerm(th.keep.Keeps(x) ? 0.0f : 1.0f, m);
  t.max = valid ? x : -PosInf();
  t.min = valid ? x : PosInf();
  t.spread = {valid ? c : 0.0f, 0.0f};
  return t;
}

// ---- the rejection stage of a row pass

// What a row gives its sequence options: its valid tokens, and each divergence's masked
// sum and maximum over valid tokens.
struct RowDivergences {
  float valid;
  float sum[3], max[3];

  __host__ __device__ static RowDivergences Identity() {
    return {0.0f, {0.0f, 0.0f, 0.0f}, {-PosInf(), -PosInf(), -PosInf()}};
  }
  __host__ __device__ static RowDivergences Merge(const RowDivergences& a, const RowDivergences& b,
                                                  const MaskWeights&) {
    RowDivergences r;
    r.valid = a.valid + b.valid;
    for (int j = 0; j < 3; ++j) {
      r.sum[j] = a.sum[j] + b.sum[j];
      r.max[j] = NanMax(a.max[j], b.max[j]);
    }
    return r;
  }
};

template <class T, int N>
struct Slots {
  T v[N];
};
template <class T>
struct Slots<T, 0> {};

// A chain's terms: the valid tokens its token options reject (count and mask), each token
// option's terms, and the rows' divergences when it has sequence options.
template <int kTok, bool kSeq>
struct RsTerms {
  float rejected, rejected_mask;
  Slots<RsTokenTerms, kTok> tok;
  std::conditional_t<kSeq, RowDivergences, None> seq;

  __host__ __device__ static RsTerms Identity() {
    RsTerms r;
    r.rejected = 0.0f;
    r.rejected_mask = 0.0f;
    if constexpr (kTok > 0)
      for (int j = 0; j < kTok; ++j) r.tok.v[j] = RsTokenTerms::Identity();
    r.seq = decltype(r.seq)::Identity();
    return r;
  }
  __host__ __device__ static RsTerms Merge(const RsTerms& a, const RsTerms& b, const MaskWeights& mw) {
    RsTerms r;
    r.rejected = a.rejected + b.rejected;
    r.rejected_mask = a.rejected_mask + b.rejected_mask;
    if constexpr (kTok > 0)
      for (int j = 0; j < kTok; ++j) r.tok.v[j] = RsTokenTerms::Merge(a.tok.v[j], b.tok.v[j], mw);
    r.seq = decltype(r.seq)::Merge(a.seq, b.seq, mw);
    return r;
  }
};

// A token option as the device applies it.
struct RsTokenOption {
  RsKind kind;
  RsThresholds th;
};

// The chain's options on the token: out = mask where every token option keeps the
// token, else 0 (the sequence options' rows are zeroed after the pass); null `out`: the
// terms alone (a caller that derives the mask where it reads it, with Keeps).
template <int kTok, bool kSeq>
struct RejectionStage {
  RsTokenOption opt[kTok > 0 ? kTok : 1];
  bool seq_kind[3];  // the divergences the sequence options read
  float* out;
  using Terms = RsTerms<kTok, kSeq>;
  // Whether every token option keeps the token.
  __host__ __device__ bool Keeps(const TokenIn& x) const {
    bool keep = true;
    if constexpr (kTok > 0)
      for (int j = 0; j < kTok; ++j) keep = keep && opt[j].th.keep.Keeps(RsDivergence(opt[j].kind, x.lr));
    return keep;
  }
  __host__ __device__ Terms operator()(int64_t, int64_t k, const TokenIn& x, float m) const {
    Terms r;
    const bool valid = m != 0.0f;
    bool keep = true;
    if constexpr (kTok > 0)
      for (int j = 0; j < kTok; ++j) {
        const float s = RsDivergence(opt[j].kind, x.lr);
        r.tok.v[j] = RsTokenTermsOf(s, m, opt[j].th);
        keep = keep && opt[j].th.keep.Keeps(s);
      }
    if constexpr (kSeq) {
      r.seq.valid = valid ? 1.0f : 0.0f;
      for (int j = 0; j < 3; ++j) {
        const float d = seq_kind[j] ? RsDivergence(static_cast<RsKind>(j), x.lr) : 0.0f;
        r.seq.sum[j] = MaskedTerm(d, m);
        r.seq.max[j] = valid ? d : -PosInf();
      }
    }
    r.rejected = valid && !keep ? 1.0f : 0.0f;
    r.rejected_mask = valid && !keep ? m : 0.0f;
    if (out) out[k] = keep ? m : 0.0f;
    return r;
  }
  void Declare(Footprint& f, int64_t, int64_t n) const {
    if (out) f.Writes<float>(n);
  }
};

// A sequence option as the device decides it.
struct RsSequenceOption {
  RsKind kind;
  RsLevel level;
  KeepRange keep;
};
constexpr int kMaxSequenceOptions = 8;  // seq_{sum,mean}_k{1,2,3}, seq_max_k{2,3}

__host__ __device__ inline bool RowRejected(const RsSequenceOption* opt, int n, const RowDivergences& d, float m) {
  bool rejected = false;
  for (int j = 0; j < n; ++j) {
    const int kd = static_cast<int>(opt[j].kind);
    rejected = rejected || !opt[j].keep.Keeps(RowValueOf(opt[j].level, d.sum[kd], d.max[kd], m));
  }
  return rejected;
}

// As the pass finishes a row: whether a sequence option rejects it (rejected[i]).
struct FlagRejectedRows {
  RsSequenceOption opt[kMaxSequenceOptions];
  int n;
  uint8_t* rejected;  // null: no sequence option
  template <class Row>
  __host__ __device__ void operator()(int64_t i, const Row& r) const {
    if constexpr (std::is_same_v<std::decay_t<decltype(r.rs.seq)>, RowDivergences>) {
      if (rejected) rejected[i] = RowRejected(opt, n, r.rs.seq, r.m) ? 1 : 0;
    }
  }
  void Declare(Footprint& f, int64_t rows) const {
    if (rejected) f.Writes<uint8_t>(rows);
  }
};

// The chain's layout: its token options in order (the stage's slots), its sequence
// options, and the divergences they read.
struct RsChain {
  std::vector<const RsOption*> token, sequence;
  bool seq_kind[3] = {false, false, false};
};

inline RsChain ChainOf(const std::vector<RsOption>& options) {
  RsChain c;
  for (const RsOption& o : options) {
    if (o.level == RsLevel::kToken) {
      c.token.push_back(&o);
    } else {
      c.sequence.push_back(&o);
      c.seq_kind[static_cast<int>(o.kind)] = true;
    }
  }
  if (c.token.size() > 3 || c.sequence.size() > kMaxSequenceOptions)
    throw std::logic_error("rollout_rs: more options than the kinds allow (the parser drops duplicates)");
  return c;
}

template <int kTok, bool kSeq>
RejectionStage<kTok, kSeq> MakeRejectionStage(const RsChain& c, float* out) {
  RejectionStage<kTok, kSeq> s{};
  for (int j = 0; j < kTok; ++j) s.opt[j] = {c.token[static_cast<size_t>(j)]->kind, ThresholdsOf(*c.token[j])};
  for (int j = 0; j < 3; ++j) s.seq_kind[j] = c.seq_kind[j];
  s.out = out;
  return s;
}

inline FlagRejectedRows MakeRowFlags(const RsChain& c, uint8_t* rejected) {
  FlagRejectedRows f{};
  f.n = static_cast<int>(c.sequence.size());
  for (int j = 0; j < f.n; ++j) {
    const RsOption& o = *c.sequence[static_cast<size_t>(j)];
    f.opt[j] = {o.kind, o.level, o.range};
  }
  f.rejected = f.n > 0 ? rejected : nullptr;
  return f;
}

// Calls f(integral_constant<int, token options>, bool_constant<any sequence option>).
template <class F>
void WithChainShape(const RsChain& c, F&& f) {
  const bool seq = !c.sequence.empty();
  auto with_seq = [&](auto tok) {
    if (seq)
      f(tok, std::true_type{});
    else
      f(tok, std::false_type{});
  };
  switch (c.token.size()) {
    case 0: with_seq(std::integral_constant<int, 0>{}); break;
    case 1: with_seq(std::integral_constant<int, 1>{}); break;
    case 2: with_seq(std::integral_constant<int, 2>{}); break;
    default: with_seq(std::integral_constant<int, 3>{}); break;
  }
}

// ---- compute_rs_metrics on the host, from the rows' partials

// One option's token-level sums over the batch, in double.
struct RsOptionTotals {
  double m = 0, stat = 0, high = 0, low = 0, clamped = 0, rejected = 0;
  float max = -PosInf(), min = PosInf();
  SpreadTotal spread;

  // A row's token terms.
  void AddTokens(float row_mask, const RsTokenTerms& t) {
    m += row_mask;
    stat += t.stat;
    high += t.high;
    low += t.low;
    clamped += t.clamped;
    rejected += t.rejected;
    max = NanMax(max, t.max);
    min = NanMin(min, t.min);
    spread.Add(row_mask, t.spread);
  }
  // A sequence option's row: its value on each of its valid tokens (a row without any
  // adds nothing, NaN or not).
  void AddRow(float value, float row_mask, float valid_tokens, const RsThresholds& th) {
    m += row_mask;
    if (valid_tokens == 0.0f) return;
    const float c = RsClamped(value, th);
    stat += static_cast<double>(value) * row_mask;
    high += value > th.hi ? row_mask : 0.0f;
    low += value < th.lo ? row_mask : 0.0f;
    clamped += static_cast<double>(c) * row_mask;
    rejected += th.keep.Keeps(value) ? 0.0f : row_mask;
    max = NanMax(max, value);
    min = NanMin(min, value);
    spread.Add(row_mask, Spread{c, 0.0f});
  }
};

// verl: compute_rs_metrics from the option's token-level totals and its per-row values,
// counting the rows `valid` selects. `sequence`: level "sequence". With `dropped` (rows
// the option rejected a valid token of), also the option's own rejected fractions
// (compute_rollout_rejection_mask).
inline std::map<std::string, double> RsMetricsOf(const std::string& option, const RsOptionTotals& t,
                                                 const std::vector<float>& values, const std::vector<char>& valid,
                                                 const std::vector<char>* dropped, bool sequence,
                                                 const RsThresholds& th) {
  double nvalid = 0, sum = 0, high = 0, low = 0, n_dropped = 0;
  float max = -PosInf(), min = PosInf(), max_abs = -PosInf();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!valid[i]) continue;
    const float x = values[i];
    nvalid += 1;
    sum += x;
    max = NanMax(max, x);
    min = NanMin(min, x);
    max_abs = NanMax(max_abs, fabsf(x));
    high += x > th.hi ? 1 : 0;
    low += x < th.lo ? 1 : 0;
    if (dropped) n_dropped += (*dropped)[i] ? 1 : 0;
  }

  std::map<std::string, double> m;
  const std::string p = "rollout_rs_" + option;
  m[p + "_mean"] = MeanOfSums(t.stat, t.m);
  if (sequence && nvalid > 0) {
    m[p + "_max"] = max;
    m[p + "_min"] = min;
    m[p + "_fraction_high"] = Float32Fraction(high, nvalid);
    m[p + "_fraction_low"] = th.apply_lower ? Float32Fraction(low, nvalid) : 0.0;
  } else {
    m[p + "_max"] = t.max;
    m[p + "_min"] = t.min;
    m[p + "_fraction_high"] = MeanOfSums(t.high, t.m);
    m[p + "_fraction_low"] = th.apply_lower ? MeanOfSums(t.low, t.m) : 0.0f;
  }
  m[p + "_std"] = static_cast<float>(t.m) > 1.0f ? MaskedStdOf(t.clamped, t.m, t.spread) : 0.0;
  if (nvalid > 0) {
    const double seq_mean = sum / nvalid;
    m[p + "_seq_mean"] = seq_mean;
    double ss = 0;
    for (size_t i = 0; i < values.size(); ++i)
      if (valid[i]) ss += (values[i] - seq_mean) * (values[i] - seq_mean);
    m[p + "_seq_std"] = nvalid > 1 ? std::sqrt(ss / (nvalid - 1.0)) : 0.0;
    m[p + "_seq_max"] = max;
    m[p + "_seq_min"] = min;
    m[p + "_seq_max_deviation"] = max_abs;
    m[p + "_seq_fraction_high"] = Float32Fraction(high, nvalid);
    if (th.apply_lower) m[p + "_seq_fraction_low"] = Float32Fraction(low, nvalid);
  } else {
    for (const char* k : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation", "_seq_fraction_high",
                          "_seq_fraction_low"})
      m[p + k] = 0.0;
  }
  if (dropped) {
    m[p + "_masked_fraction"] = MeanOfSums(t.rejected, t.m);
    // Over the rows with a valid token, as a Python float division.
    m[p + "_seq_masked_fraction"] = nvalid > 0 ? n_dropped / nvalid : 0.0;
  }
  return m;
}

// ---- compute_rollout_rejection_mask

// Zeroes the rows a sequence option rejected.
struct ZeroRejectedRows {
  const uint8_t* rejected;
  float* out;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    if (rejected[i]) out[i * cols + t] = 0.0f;
  }
};

// After the row pass whose rejection stage (parts[i].rs) wrote the token options' keep
// mask into `out` and flagged the rows the sequence options reject (`rejected`, policy
// memory): every option's metrics and the chain's, then those rows zeroed in `out`
// (null: no mask was written).
template <class Policy, class Is, int kTok, bool kSeq, class Off>
std::map<std::string, double> RejectionAfterPass(Policy&& policy,
                                                 const std::vector<FusedRow<Is, RsTerms<kTok, kSeq>, Off>>& parts,
                                                 const std::vector<RsOption>& options, int64_t rows, int64_t cols,
                                                 const uint8_t* rejected, float* out) {
  const size_t b = parts.size();
  std::vector<char> valid(b), row_rejected(b, 0), dropped(b);
  for (size_t i = 0; i < b; ++i) valid[i] = parts[i].m > 0.0f;
  std::vector<float> values(b);
  std::map<std::string, double> metrics;
  int slot = 0;
  for (const RsOption& o : options) {
    const RsThresholds th = ThresholdsOf(o);
    RsOptionTotals t;
    if (o.level == RsLevel::kToken) {
      if constexpr (kTok > 0) {
        const int j = slot++;
        for (size_t i = 0; i < b; ++i) {
          const RsTokenTerms& tt = parts[i].rs.tok.v[j];
          t.AddTokens(parts[i].m, tt);
          values[i] = MeanOf(tt.stat, parts[i].m);  // compute_rs_metrics' default: the row means
          dropped[i] = valid[i] && tt.rejected != 0.0f;
        }
      }
    } else {
      if constexpr (kSeq) {
        const int kd = static_cast<int>(o.kind);
        for (size_t i = 0; i < b; ++i) {
          const RowDivergences& d = parts[i].rs.seq;
          const float v = RowValueOf(o.level, d.sum[kd], d.max[kd], parts[i].m);
          const bool keep = o.range.Keeps(v);
          values[i] = v;
          t.AddRow(v, parts[i].m, d.valid, th);
          dropped[i] = valid[i] && !keep;
          if (!keep) row_rejected[i] = 1;
        }
      }
    }
    for (auto& [k, v] : RsMetricsOf(o.name, t, values, valid, &dropped, o.level != RsLevel::kToken, th)) metrics[k] = v;
  }

  // The chain: a valid token is rejected where a token option rejects it or a sequence
  // option its row.
  double mass = 0, mask = 0, hit = 0;
  int64_t zeroed = 0;
  for (size_t i = 0; i < b; ++i) {
    mask += parts[i].m;
    if (row_rejected[i]) {
      ++zeroed;
      if constexpr (kSeq) {
        mass += parts[i].m;
        hit += parts[i].rs.seq.valid > 0.0f ? 1 : 0;
      }
    } else {
      mass += parts[i].rs.rejected_mask;
      hit += parts[i].rs.rejected > 0.0f ? 1 : 0;
    }
  }
  metrics["rollout_rs_masked_fraction"] = MeanOfSums(mass, mask);
  // Rows with a rejected valid token over every row, padding-only ones included.
  metrics["rollout_rs_seq_masked_fraction"] = Float32Fraction(hit, static_cast<double>(b));
  if (zeroed > 0 && out)
    RowMap(policy, rows, cols, ZeroRejectedRows{rejected, out, cols},
           Footprint().Reads<uint8_t>(rows).Writes<float>(zeroed * cols));
  return metrics;
}

// verl: compute_rollout_rejection_mask on log-ratios `lr` and the mask (rows x cols):
// writes the modified response mask into `out` and returns the metrics. The caller has
// checked the configuration (oracle's parsers) and that the mask has a valid token.
template <class Policy>
std::map<std::string, double> compute_rollout_rejection_mask(Policy&& policy, const float* lr, const float* mask,
                                                             int64_t rows, int64_t cols,
                                                             const std::vector<RsOption>& options, float* out) {
  const RsChain chain = ChainOf(options);
  PolicyScratch<uint8_t, std::remove_reference_t<Policy>> rejected(policy, rows);
  std::map<std::string, double> metrics;
  WithChainShape(chain, [&](auto tok, auto seq) {
    constexpr int kTok = decltype(tok)::value;
    constexpr bool kSeq = decltype(seq)::value;
    const auto parts =
        FusedRowPass(policy, rows, cols, LogRatioMatrix{lr}, mask, NoStage{},
                     MakeRejectionStage<kTok, kSeq>(chain, out), NoStage{}, MakeRowFlags(chain, rejected.get()));
    metrics = RejectionAfterPass(policy, parts, options, rows, cols, rejected.get(), out);
  });
  return metrics;
}

// The given statistic of compute_rs_metrics called directly.
struct RsGivenStage {
  const float* stat;
  RsThresholds th;
  using Terms = RsTokenTerms;
  __host__ __device__ RsTokenTerms operator()(int64_t, int64_t k, const TokenIn&, float m) const {
    return RsTokenTermsOf(stat[k], m, th);
  }
  void Declare(Footprint& f, int64_t, int64_t n) const { f.Reads<float>(n); }
};

// verl: compute_rs_metrics on given tensors: `stat` and the mask B x T, `seq_valid` B,
// `per_sequence_values` B or null (the rows' masked means). Thresholds are the Python
// floats.
template <class Policy>
std::map<std::string, double> compute_rs_metrics(Policy&& policy, const std::string& option_name, const float* stat,
                                                 const float* mask, const float* seq_valid,
                                                 const float* per_sequence_values, int64_t rows, int64_t cols,
                                                 bool sequence, double threshold, double threshold_lower,
                                                 bool apply_lower) {
  RsThresholds th;
  th.hi = static_cast<float>(threshold);
  th.lo = static_cast<float>(threshold_lower);
  th.apply_lower = apply_lower;
  const auto parts = FusedRowPass(policy, rows, cols, NoSource{}, mask, NoStage{}, RsGivenStage{stat, th}, NoStage{});
  const std::vector<float> valid_in = ToHostVector(policy, seq_valid, rows);
  std::vector<float> values =
      per_sequence_values ? ToHostVector(policy, per_sequence_values, rows) : std::vector<float>(parts.size());
  std::vector<char> valid(parts.size());
  RsOptionTotals t;
  for (size_t i = 0; i < parts.size(); ++i) {
    t.AddTokens(parts[i].m, parts[i].rs);
    if (!per_sequence_values) values[i] = MeanOf(parts[i].rs.stat, parts[i].m);
    valid[i] = valid_in[i] != 0.0f;
  }
  return RsMetricsOf(option_name, t, values, valid, nullptr, sequence, th);
}

}  // namespace verlconf::cuda
