// torch's autograd conventions at the kinks, which verl's gradients inherit and the
// oracle's analytic gradients must reproduce (checked against torch 2.15; Debian's
// LibTorch 1.13 differs on clamp, see docs/verl-quirks.md):
//  - torch.clamp with scalar bounds passes the gradient only strictly inside (lo, hi):
//    a value sitting exactly on a bound gets none;
//  - torch.maximum / torch.minimum (and binary torch.max / torch.min) split the
//    gradient equally between tied arguments;
//  - abs and sign have gradient 0 at 0.
#pragma once

#include <algorithm>

namespace verlconf::oracle {

inline double Clamp(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }
// d clamp(x, lo, hi) / dx.
inline double ClampPasses(double x, double lo, double hi) { return (x > lo && x < hi) ? 1.0 : 0.0; }
// Share of the gradient that torch.maximum(a, b) sends to `a`.
inline double MaxShareA(double a, double b) { return a > b ? 1.0 : (a == b ? 0.5 : 0.0); }
// Share that torch.minimum(a, b) sends to `a`.
inline double MinShareA(double a, double b) { return a < b ? 1.0 : (a == b ? 0.5 : 0.0); }
inline double Sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

// A value within this many ulps (of the case's dtype, scaled by the magnitudes that
// fed it) of a threshold may be decided either way by a correct implementation: the
// policy losses mark such tokens in Result::boundary.
inline constexpr double kDecisionUlps = 16.0;

}  // namespace verlconf::oracle
