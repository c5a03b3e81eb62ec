// How large the sums behind a scalar loss are. Every aggregated loss is a weighted sum
// loss = sum_k W_k L_k (oracle/aggregation/agg_loss.h); rounding in a float32 sum is
// bounded by the magnitude sum_k |W_k L_k| times ~log2(n) eps, not by |loss|. Where the
// terms cancel (a loss of 0.29 out of terms whose magnitudes add to 6500), a bound
// relative to |loss| fails a correct float32 sum; the comparator asks this probe for the
// magnitude and allows for it (oracle/core/check.cc, ToleranceFor).
#pragma once

#include <cstdint>

namespace verlconf {

struct AggregateMagnitude {
  double abs_sum = 0.0;  // sum over every reported aggregation of sum_k |W_k L_k|
  int64_t terms = 0;     // the live terms those sums had, in all
};

// While one is alive on a thread, the aggregations that thread runs report into it
// (nested probes: the innermost). Not copyable.
class AggregateProbe {
 public:
  AggregateProbe();
  ~AggregateProbe();
  AggregateProbe(const AggregateProbe&) = delete;
  AggregateProbe& operator=(const AggregateProbe&) = delete;
  const AggregateMagnitude& result() const { return m_; }

 private:
  friend void ReportAggregate(double abs_sum, int64_t terms);
  AggregateMagnitude m_;
  AggregateProbe* outer_;
};

// Called by an aggregation with its sum of |W_k L_k| and its number of live terms; a
// no-op without a probe, and for a sum that is not finite (a NaN or inf loss is compared
// as such, never given an infinite allowance).
void ReportAggregate(double abs_sum, int64_t terms);

}  // namespace verlconf
