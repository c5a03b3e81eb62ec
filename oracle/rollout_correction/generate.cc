// Random inputs for rollout correction's property tests: log-ratios and thresholds
// that look like training and land on the decisions' edges often enough to test them.
#include <random>

#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::oracle {
using rollout_internal::EndsWith;

Array RandomLogRatio(InputGen& g, int64_t b, int64_t t, DType d) {
  Array lr = Array::Matrix(b, t, d);
  const int regime = static_cast<int>(g.Int(0, 2));
  for (int64_t i = 0; i < b; ++i) {
    const bool stale = regime == 1 || (regime == 2 && g.Coin(0.5));
    const double sd = stale ? g.UniformScalar(0.5, 3.0) : g.UniformScalar(0.003, 0.03);
    std::normal_distribution<double> n(0.0, sd);
    const bool identical_row = g.Coin(0.1);
    for (int64_t j = 0; j < t; ++j) {
      const double v = n(g.rng());
      lr.at(i, j) = (identical_row || g.Coin(0.1)) ? 0.0 : v;
    }
  }
  RoundToDType(lr);
  return lr;
}

ConfigValue RandomIsThreshold(InputGen& g, bool icepop) {
  if (icepop) {
    static const char* const bands[] = {"0.5_2.0", "0.8_1.25",    "1.0_2.0", "0.5_1.0",
                                        "0.5_5.0", "0.999_1.001", " 0.2_3 "};
    return std::string(bands[g.Int(0, 6)]);
  }
  switch (g.Int(0, 3)) {
    case 0: {
      static const double values[] = {1.0, 1.5, 2.0, 5.0, 10.0};
      return values[g.Int(0, 4)];
    }
    case 1: return g.UniformScalar(1.01, 4.0);
    case 2: {
      static const char* const texts[] = {"2.0", "1.5", "1", " 3.0 ", "1e1"};
      return std::string(texts[g.Int(0, 4)]);
    }
    default: return int64_t{2};
  }
}

std::string RandomRsThresholdEntry(InputGen& g, const std::string& option) {
  if (EndsWith(option, "k1")) {
    static const char* const k1[] = {"0.5_2.0", "0.999_1.001", "1.0_2.0", "0.5_1.0",  "2.0",
                                     "1.5",     "0.8_1.25",    "0.9_1.1", "0.01_100", "1"};
    return k1[g.Int(0, 9)];
  }
  static const char* const upper[] = {"0.01", "0.001", "0.1", "0.5", "2.0", "5e-05", "1.0", "10"};
  return upper[g.Int(0, 7)];
}

}  // namespace verlconf::oracle
