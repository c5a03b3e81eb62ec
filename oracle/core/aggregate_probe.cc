#include "oracle/core/aggregate_probe.h"

#include <cmath>

namespace verlconf {
namespace {

thread_local AggregateProbe* current = nullptr;

}  // namespace

AggregateProbe::AggregateProbe() : outer_(current) { current = this; }

AggregateProbe::~AggregateProbe() { current = outer_; }

void ReportAggregate(double abs_sum, int64_t terms) {
  if (!current || !std::isfinite(abs_sum)) return;
  current->m_.abs_sum += abs_sum;
  current->m_.terms += terms;
}

}  // namespace verlconf
