// Shrinking a failing explored case to a minimal one that fails the same way: fewest rows,
// then fewest tokens, then the simplest values (0, +-1, small integers, few digits), then
// config keys back at verl's defaults. Deterministic: the same start and predicate give
// the same minimal case.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf::explore {

struct ShrinkBudget {
  int64_t max_trials = 20000;
  std::chrono::steady_clock::duration max_time = std::chrono::seconds(25);
};

struct Shrunk {
  Case c;
  int64_t trials = 0;      // predicate calls
  bool exhausted = false;  // the budget ran out before no step made progress
};

// `fails(c)`: whether `c` still fails the same field the same way. `start` must.
Shrunk Shrink(const FunctionSpec& spec, const Case& start, const std::function<bool(const Case&)>& fails,
              const ShrinkBudget& budget = {});

// The fewest significant decimal digits (1 to 17) that write `x` back exactly: how round
// a number is, and how Python's str() would write it.
int SignificantDigits(double x);

// Whether inputs of this role are laid out batch-first (B rows).
bool Batched(Role r);

// The case's batch (B) and token (T) extents as its inputs give them (0 when none).
int64_t BatchRows(const FunctionSpec& spec, const Case& c);
int64_t TokenColumns(const FunctionSpec& spec, const Case& c);

}  // namespace verlconf::explore
