// Registry entries for verl's masked statistics (family "torch_functional").
#include "oracle/torch_functional/spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf {
std::optional<int64_t> oracle::ReadMaskedMeanAxis(const Case& c) {
  if (!c.config.Has("axis")) return std::nullopt;
  const int64_t axis = c.config.Int("axis");
  if (axis != -1 && axis != 1) throw BadInput(c.Where() + ": attribute cfg.axis: only -1 (per row) or None");
  return axis;
}

namespace {

Result RunMaskedMean(const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  Result r;
  if (oracle::ReadMaskedMeanAxis(c)) {
    r.outputs["output"] = oracle::masked_mean_rows(v, m);
    r.grads["values"] = oracle::masked_mean_rows_grad(v, m);
  } else {
    r.outputs["output"] = Array::Scalar(oracle::masked_mean(v, m), c.dtype);
    r.grads["values"] = oracle::masked_mean_grad(v, m);
  }
  return r;
}

// VJPs of the tensor-valued statistics: a mean's is the projection (one per row, or
// the one scalar) times the mean's own derivative, which does not depend on values;
// the whitening's couples every element through the mean and the variance.
std::map<std::string, Array> MaskedMeanVjp(const Case& c, const Result&) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const Array& p = c.projections.at("output");
  Array g = c.config.Has("axis") ? oracle::masked_mean_rows_grad(v, m) : oracle::masked_mean_grad(v, m);
  for (int64_t k = 0; k < g.size(); ++k) g[k] *= p.rank() == 0 ? p[0] : p[k / v.cols()];
  return {{"output/values", std::move(g)}};
}

std::map<std::string, Array> MaskedWhitenVjp(const Case& c, const Result&) {
  return {{"output/values", oracle::masked_whiten_vjp(c.Input("values"), c.Input("mask"), c.config.Bool("shift_mean"),
                                                      c.projections.at("output"))}};
}

Result RunMaskedVar(const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const bool unbiased = c.config.Bool("unbiased");
  Result r;
  r.outputs["output"] = Array::Scalar(oracle::masked_var(v, m, unbiased), c.dtype);
  r.grads["values"] = oracle::masked_var_grad(v, m, unbiased);
  return r;
}

Result RunMaskedWhiten(const Case& c) {
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  const bool shift = c.config.Bool("shift_mean");
  Result r;
  r.outputs["output"] = oracle::masked_whiten(v, m, shift);
  r.grads["values"] = oracle::masked_whiten_grad(v, m, shift);
  return r;
}

// masked_whiten's rounding, in either dtype, as the case's own values bound it. Every
// element is (v - mean) * r with r = (var + 1e-8)^-1/2, and its gradient holds
// r * (p_k - P / M): differences of O(|v|) and O(|p|) terms, scaled by r. Rounding of
// eps * A (A = the largest |v| or |mean|) in v - mean becomes eps * r * A in the output;
// a constant valid set (variance 0, r = 1e4) turns the 1e-8 offsets of masked_mean into
// results of order 1e-4 whose last digits are verl's autograd rounding (values [-1, -1]:
// verl's gradient is 1.3e-8 relative from the exact one, the oracle's 1e-9). So:
// outputs: atol times r A; gradients and VJPs (cotangent p: ones for grads/values, the
// projection for vjps/output/values): atol times r (max|p| + sum|p| / M) for the
// cancelling mean term plus sum|p| A r^3 max|v - mean| 2 / (M - 1) for the variance term;
// rtol times r A in float32, whose 2^8-ulp default has less room than float64's 2^18 for
// the relative error r inherits from a variance of cancelling differences.
std::optional<Tolerance> MaskedWhitenTolerance(const Case& c, const std::string& field) {
  const bool out = field == "outputs/output";
  if (!out && field != "grads/values" && field != "vjps/output/values") return std::nullopt;
  const Array& v = c.Input("values");
  const Array& m = c.Input("mask");
  double mask_sum = 0.0;
  for (double x : m.data) mask_sum += x;
  if (mask_sum < 2.0) return std::nullopt;  // verl raises; nothing is compared
  const double mean = oracle::masked_mean(v, m);
  const double r = 1.0 / std::sqrt(oracle::masked_var(v, m, /*unbiased=*/true) + oracle::kWhitenVarEps);
  double a = std::fabs(mean), dev = 0.0;
  for (int64_t k = 0; k < v.size(); ++k) {
    a = std::max(a, std::fabs(v[k]));
    if (m[k] != 0.0) dev = std::max(dev, std::fabs(v[k] - mean));
  }
  const double cond = std::max(1.0, r * a);
  double scale = cond;
  if (!out) {
    double pmax = 1.0, psum = static_cast<double>(v.size());
    if (field != "grads/values") {
      auto it = c.projections.find("output");
      if (it == c.projections.end()) return std::nullopt;
      pmax = psum = 0.0;
      for (double p : it->second.data) pmax = std::max(pmax, std::fabs(p)), psum += std::fabs(p);
    }
    scale = std::max(1.0, r * (pmax + psum / mask_sum) + 2.0 * psum * a * r * r * r * dev / (mask_sum - 1.0));
  }
  if (scale <= 1.0 && cond <= 1.0) return std::nullopt;
  const Tolerance d = DefaultTolerance(c.dtype);
  char why[200];
  std::snprintf(why, sizeof why,
                "default tolerance times masked_whiten's condition (rsqrt(var + 1e-8) = %.3g, largest |value| %.3g): "
                "atol x %.3g%s",
                r, a, scale, c.dtype == DType::kFloat32 ? ", rtol x r |value|" : "");
  return Tolerance{c.dtype == DType::kFloat32 ? d.rtol * cond : d.rtol, d.atol * scale, why};
}

FunctionSpec Masked(const std::string& name, RunFn run, std::vector<ConfigKey> config, OutputKind kind) {
  FunctionSpec s;
  s.name = name;
  s.family = "torch_functional";
  s.verl_symbol = "verl.utils.torch_functional." + name;
  s.inputs = {{"values", Role::kTokens}, {"mask", Role::kTokens, /*is_mask=*/true}};
  s.config = std::move(config);
  s.outputs = {{"output", kind}};
  s.grads = {"values"};
  s.oracle = std::move(run);
  s.generate = [name](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewGeneratedCase(p);
    c.inputs["values"] = g.Normal(p.batch, p.tokens, g.UniformScalar(-2, 2), g.UniformScalar(0.1, 3), p.dtype);
    c.inputs["mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
    return c;
  };
  return s;
}

}  // namespace

void AddTorchFunctionalSpecs(std::vector<FunctionSpec>& out) {
  out.push_back(Masked("masked_mean", RunMaskedMean,
                       {{"axis", "int", std::monostate{}, "None = all elements; -1 = per row"}}, OutputKind::kTensor));
  out.back().vjp_inputs = {"values"};
  out.back().vjp = MaskedMeanVjp;
  out.push_back(
      Masked("masked_var", RunMaskedVar, {{"unbiased", "bool", int64_t{1}, "Bessel-corrected"}}, OutputKind::kScalar));
  out.push_back(Masked("masked_whiten", RunMaskedWhiten,
                       {{"shift_mean", "bool", int64_t{1}, "false = add the mean back after scaling"}},
                       OutputKind::kTensor));
  out.back().vjp_inputs = {"values"};
  out.back().vjp = MaskedWhitenVjp;
  out.back().case_tolerance = MaskedWhitenTolerance;
  out.back().notes = "statistics from masked_mean/masked_var(unbiased); rsqrt(var + 1e-8)";
}

}  // namespace verlconf
