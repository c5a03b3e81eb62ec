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

Result RunOracle(const Case& c) {
  const FunctionSpec* s = SpecFor(c);
  if (!s || !s->oracle) throw std::logic_error("no oracle for " + c.function);
  return s->oracle(c);
}

bool AllClose(const Array& a, const Array& b, double rtol, double atol, std::string* why) {
  if (a.shape != b.shape) {
    if (why) *why = "shape " + a.ShapeString() + " vs " + b.ShapeString();
    return false;
  }
  for (int64_t k = 0; k < a.size(); ++k) {
    const bool both_nan = std::isnan(a[k]) && std::isnan(b[k]);
    if (!both_nan && !(std::fabs(a[k] - b[k]) <= atol + rtol * std::fabs(b[k]))) {
      if (why) {
        std::ostringstream o;
        o.precision(17);
        o << "index " << k << ": " << a[k] << " vs " << b[k];
        *why = o.str();
      }
      return false;
    }
  }
  return true;
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
