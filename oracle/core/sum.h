// Accurate summation for the oracle.
//
// The oracle is the reference, so its sums should be as close to exact as cheap
// arithmetic allows: Neumaier's compensated sum is exact to ~1 ulp of the result
// regardless of order or length, where a naive loop drifts with n * eps. verl's own
// float64 sums then differ from the oracle only by verl's rounding, which keeps the
// 1e-10 bound meaningful even on 8k-token rows.
#pragma once

#include <cmath>

namespace verlconf::oracle {

class ExactSum {
 public:
  void Add(double x) {
    naive_ += x;
    const double t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x)) {
      comp_ += (sum_ - t) + x;
    } else {
      comp_ += (x - t) + sum_;
    }
    sum_ = t;
  }
  // Once an infinity or NaN enters, the compensation term is meaningless (inf - inf);
  // the plain sum then carries IEEE semantics, as verl's torch.sum does.
  double Value() const { return std::isfinite(naive_) ? sum_ + comp_ : naive_; }

 private:
  double sum_ = 0.0;
  double comp_ = 0.0;
  double naive_ = 0.0;
};

}  // namespace verlconf::oracle
