// Mirrors verl.utils.torch_functional.{masked_sum, masked_mean, masked_var,
// masked_whiten} (verl 0.9.1).
#include "oracle/torch_functional/masked.h"

#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/sum.h"

namespace verlconf::oracle {

double masked_sum(const Array& values, const Array& mask) {
  ExactSum s;
  for (int64_t k = 0; k < values.size(); ++k) s.Add(MaskedTerm(values[k], mask[k]));
  return s.Value();
}

static double MaskTotal(const Array& mask) {
  ExactSum s;
  for (double m : mask.data) s.Add(m);
  return s.Value();
}

double masked_mean(const Array& values, const Array& mask) {
  return masked_sum(values, mask) / (MaskTotal(mask) + kMaskedMeanEps);
}

Array masked_mean_rows(const Array& values, const Array& mask) {
  Array out({values.rows()}, values.dtype);
  for (int64_t i = 0; i < values.rows(); ++i) {
    ExactSum s, m;
    for (int64_t t = 0; t < values.cols(); ++t) {
      s.Add(MaskedTerm(values.at(i, t), mask.at(i, t)));
      m.Add(mask.at(i, t));
    }
    out[i] = s.Value() / (m.Value() + kMaskedMeanEps);
  }
  return out;
}

void CheckBesselMaskSum(double mask_sum) {
  if (mask_sum == 0.0) throw VerlError("ValueError", "At least one element in the mask has to be 1.");
  if (mask_sum == 1.0) throw VerlError("ValueError", "The sum of the mask is one, which can cause a division by zero.");
}

// Sum of squared deviations about verl's (biased) masked mean, and the Bessel factor.
namespace {
struct VarParts {
  double mean, variance, mask_total, bessel;
};
VarParts Var(const Array& v, const Array& m, bool unbiased) {
  VarParts p{};
  p.mean = masked_mean(v, m);
  p.mask_total = MaskTotal(m);
  ExactSum sq;
  for (int64_t k = 0; k < v.size(); ++k) {
    const double c = v[k] - p.mean;
    sq.Add(MaskedTerm(c * c, m[k]));
  }
  p.variance = sq.Value() / (p.mask_total + kMaskedMeanEps);
  p.bessel = 1.0;
  if (unbiased) {
    CheckBesselMaskSum(p.mask_total);
    p.bessel = p.mask_total / (p.mask_total - 1.0);
    p.variance *= p.bessel;
  }
  return p;
}
}  // namespace

double masked_var(const Array& values, const Array& mask, bool unbiased) {
  return Var(values, mask, unbiased).variance;
}

Array masked_whiten(const Array& values, const Array& mask, bool shift_mean) {
  const VarParts p = Var(values, mask, /*unbiased=*/true);
  const double r = 1.0 / std::sqrt(p.variance + kWhitenVarEps);
  Array out(values.shape, values.dtype);
  for (int64_t k = 0; k < values.size(); ++k) {
    out[k] = (values[k] - p.mean) * r;
    if (!shift_mean) out[k] += p.mean;
  }
  return out;
}

Array masked_mean_grad(const Array& values, const Array& mask) {
  const double denom = MaskTotal(mask) + kMaskedMeanEps;
  Array g(values.shape, values.dtype);
  for (int64_t k = 0; k < values.size(); ++k) g[k] = mask[k] != 0.0 ? mask[k] / denom : 0.0;
  return g;
}

Array masked_mean_rows_grad(const Array& values, const Array& mask) {
  Array g(values.shape, values.dtype);
  for (int64_t i = 0; i < values.rows(); ++i) {
    ExactSum m;
    for (int64_t t = 0; t < values.cols(); ++t) m.Add(mask.at(i, t));
    const double denom = m.Value() + kMaskedMeanEps;
    for (int64_t t = 0; t < values.cols(); ++t) g.at(i, t) = mask.at(i, t) != 0.0 ? mask.at(i, t) / denom : 0.0;
  }
  return g;
}

// d var / d v_k, where var = b/M' * sum_j m_j (v_j - mean)^2 and mean = sum_j m_j v_j / M'
// (M' = sum(mask) + 1e-8). The mean's dependence on v contributes the second term.
Array masked_var_grad(const Array& values, const Array& mask, bool unbiased) {
  const VarParts p = Var(values, mask, unbiased);
  const double denom = p.mask_total + kMaskedMeanEps;
  ExactSum centered_total;  // sum_j m_j (v_j - mean), zero up to the 1e-8 bias
  for (int64_t k = 0; k < values.size(); ++k) centered_total.Add(MaskedTerm(values[k] - p.mean, mask[k]));
  Array g(values.shape, values.dtype);
  for (int64_t k = 0; k < values.size(); ++k) {
    if (mask[k] == 0.0) continue;
    const double direct = 2.0 * mask[k] * (values[k] - p.mean) / denom;
    const double via_mean = 2.0 * centered_total.Value() / denom * (mask[k] / denom);
    g[k] = p.bessel * (direct - via_mean);
  }
  return g;
}

// d/dv_k of sum_j p_j out_j with out_j = (v_j - mean) * r (+ mean), r = (var + 1e-8)^-1/2:
// r (p_k - P dmean_k) + S dr/dvar dvar_k (+ P dmean_k), with P = sum_j p_j and
// S = sum_j p_j (v_j - mean) over every element, masked or not (whiten returns all).
Array masked_whiten_vjp(const Array& values, const Array& mask, bool shift_mean, const Array& cotangent) {
  const VarParts p = Var(values, mask, /*unbiased=*/true);
  const double r = 1.0 / std::sqrt(p.variance + kWhitenVarEps);
  ExactSum total, centered;
  for (int64_t k = 0; k < values.size(); ++k) {
    total.Add(cotangent[k]);
    centered.Add(cotangent[k] * (values[k] - p.mean));
  }
  const double P = total.Value(), S = centered.Value();
  const Array dmean = masked_mean_grad(values, mask);
  const Array dvar = masked_var_grad(values, mask, /*unbiased=*/true);
  const double dr_dvar = -0.5 * r * r * r;
  Array g(values.shape, values.dtype);
  for (int64_t k = 0; k < values.size(); ++k) {
    double d = r * (cotangent[k] - P * dmean[k]) + S * dr_dvar * dvar[k];
    if (!shift_mean) d += P * dmean[k];
    g[k] = d;
  }
  return g;
}

Array masked_whiten_grad(const Array& values, const Array& mask, bool shift_mean) {
  Array ones(values.shape, values.dtype);
  for (double& x : ones.data) x = 1.0;
  return masked_whiten_vjp(values, mask, shift_mean, ones);
}

}  // namespace verlconf::oracle
