// Masked statistics of verl/utils/torch_functional.py (masked_sum, masked_mean,
// masked_var, masked_whiten), float64, with their gradients.
//
// verl's conventions that matter here:
//  - masked_sum zeroes values where mask == 0 *before* multiplying by the mask, so a
//    NaN under a zero mask does not poison the sum; a mask entry m != 0 weights by m.
//  - masked_mean divides by (sum(mask) + 1e-8), not by sum(mask): an all-zero mask
//    gives 0, not NaN, and every mean is biased by that 1e-8.
//  - masked_var (unbiased) raises ValueError for mask sums 0 and 1, otherwise applies
//    the Bessel factor M / (M - 1) to a variance computed about the biased mean.
#pragma once

#include <optional>

#include "oracle/core/tensor.h"

namespace verlconf::oracle {

inline constexpr double kMaskedMeanEps = 1e-8;  // masked_mean's denominator offset
inline constexpr double kWhitenVarEps = 1e-8;   // masked_whiten's rsqrt offset

double masked_sum(const Array& values, const Array& mask);
double masked_mean(const Array& values, const Array& mask);
// Mean along the last axis of a 2-D array: one value per row.
Array masked_mean_rows(const Array& values, const Array& mask);
double masked_var(const Array& values, const Array& mask, bool unbiased);
Array masked_whiten(const Array& values, const Array& mask, bool shift_mean);

// Gradients (of the scalar result, or of the sum of the array result) w.r.t. values.
Array masked_mean_grad(const Array& values, const Array& mask);
Array masked_mean_rows_grad(const Array& values, const Array& mask);
Array masked_var_grad(const Array& values, const Array& mask, bool unbiased);
Array masked_whiten_grad(const Array& values, const Array& mask, bool shift_mean);
// d sum(cotangent * masked_whiten(values)) / d values (masked_whiten_grad is the
// all-ones cotangent).
Array masked_whiten_vjp(const Array& values, const Array& mask, bool shift_mean, const Array& cotangent);

// verl's masked_sum keeps an element only where the mask is non-zero.
inline double MaskedTerm(double v, double m) { return m != 0.0 ? v * m : 0.0; }

// Throws VerlError(ValueError) exactly where verl's masked_var(unbiased=True) does.
void CheckBesselMaskSum(double mask_sum);

}  // namespace verlconf::oracle
