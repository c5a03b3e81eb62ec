#include "properties/testing.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace verlconf::testing {

rc::Gen<GenParams> ArbitraryParams(DType dtype, int64_t max_batch, int64_t max_tokens) {
  return rc::gen::map(rc::gen::tuple(rc::gen::arbitrary<uint64_t>(), rc::gen::inRange<int64_t>(1, max_batch + 1),
                                     rc::gen::inRange<int64_t>(1, max_tokens + 1)),
                      [dtype](const std::tuple<uint64_t, int64_t, int64_t>& t) {
                        GenParams p;
                        p.seed = std::get<0>(t);
                        p.batch = std::get<1>(t);
                        p.tokens = std::get<2>(t);
                        p.dtype = dtype;
                        return p;
                      });
}

Case Generate(const std::string& name, const GenParams& p) {
  const FunctionSpec* s = FindSpec(name);
  if (!s || !s->generate) throw std::logic_error("no generator for " + name);
  return s->generate(p);
}

Case WithResult(Case c, const Result& r) {
  c.outputs = r.outputs;
  c.grads = r.grads;
  c.metrics = r.metrics;
  return c;
}

Result RunOracle(const Case& c) {
  const FunctionSpec* s = SpecFor(c);
  if (!s || !s->oracle) throw std::logic_error("no oracle for " + c.function);
  return s->oracle(c);
}

bool Close(double got, double want, Tol tol, NanPolicy nan) {
  if (std::isnan(got) || std::isnan(want))
    return nan == NanPolicy::kNanEqualsNan && std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

std::ostream& operator<<(std::ostream& os, const Closeness& c) {
  return os << (c ? "close" : "not close: " + c.message());
}

Closeness Close(const Array& got, const Array& want, Tol tol, NanPolicy nan) {
  if (got.shape != want.shape) return Closeness::Fail("shape " + got.ShapeString() + " vs " + want.ShapeString());
  for (int64_t k = 0; k < got.size(); ++k) {
    if (Close(got[k], want[k], tol, nan)) continue;
    std::ostringstream o;
    o.precision(17);
    o << "index " << k << ": got " << got[k] << ", want " << want[k] << " (rtol " << tol.rtol << ", atol " << tol.atol
      << (nan == NanPolicy::kNanEqualsNan ? ", NaN equals NaN)" : ", NaN fails)");
    return Closeness::Fail(o.str());
  }
  return Closeness::Pass();
}

Case PadTokens(const Case& c, int64_t extra) {
  Case out = c;
  for (auto& [name, a] : out.inputs) {
    if (a.rank() != 2) continue;
    Array p = Array::Matrix(a.rows(), a.cols() + extra, a.dtype);
    for (int64_t i = 0; i < a.rows(); ++i)
      for (int64_t t = 0; t < a.cols(); ++t) p.at(i, t) = a.at(i, t);
    a = std::move(p);
  }
  return out;
}

}  // namespace verlconf::testing
