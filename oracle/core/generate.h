// Random inputs shaped like what verl sees in training, for property tests and for
// the registry's per-function generators. Deterministic in the seed.
#pragma once

#include <cstdint>
#include <random>

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

class InputGen {
 public:
  explicit InputGen(uint64_t seed) : rng_(seed) {}

  // Right-padded response mask; sometimes with interior zero spans (multi-turn
  // observation tokens), a fully masked row, or a one-token row.
  Array ResponseMask(int64_t b, int64_t t, DType d);
  // Group codes for b sequences in groups of about `group_size`, interleaved, with
  // occasional singleton groups.
  Array GroupIndex(int64_t b, int64_t group_size);
  Array Normal(int64_t b, int64_t t, double mean, double stddev, DType d);
  Array Uniform(int64_t b, int64_t t, double lo, double hi, DType d);
  // Log-probabilities in (-6, 0).
  Array LogProbs(int64_t b, int64_t t, DType d);
  // base + N(0, stddev), i.e. a nearby policy.
  Array Perturb(const Array& base, double stddev);
  double UniformScalar(double lo, double hi);
  int64_t Int(int64_t lo, int64_t hi);  // inclusive
  bool Coin(double p_true);
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// Rounds every element to the nearest float32 when d is float32, so that generated
// float32 cases hold exactly what a float32 tensor would.
void RoundToDType(Array& a);

}  // namespace verlconf::oracle
