#include "oracle/explore/golden.h"

#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/judge/validate.h"

namespace verlconf::explore {

Case InputsOnly(const Case& c) {
  Case in = c;
  in.outputs.clear();
  in.grads.clear();
  in.metrics.clear();
  in.metric_dtypes.clear();
  in.vjps.clear();
  in.expect_error.reset();
  in.declined.reset();
  return in;
}

std::optional<Case> OracleGolden(const FunctionSpec& spec, const Case& c, std::string* refused) {
  Case g = InputsOnly(c);
  try {
    ValidateStructure(spec, g);
    const Result r = spec.oracle(g);
    g.outputs = r.outputs;
    g.grads = r.grads;
    g.metrics = r.metrics;
    g.vjps = r.vjps;
    // A float32 case's golden holds float32 values, as verl's tensors do: a value beyond
    // float32's range is the infinity verl's arithmetic gives there, not a finite double.
    if (g.dtype == DType::kFloat32)
      for (auto* fields : {&g.outputs, &g.grads, &g.vjps})
        for (auto& [name, a] : *fields)
          if (a.dtype == DType::kFloat32) oracle::RoundToDType(a);
    for (const auto& [name, v] : g.metrics) g.metric_dtypes[name] = DType::kFloat64;
  } catch (const VerlError& e) {
    g.expect_error = e.what();
  } catch (const BadInput& e) {
    if (refused) *refused = e.what();
    return std::nullopt;
  } catch (const Unsupported& e) {
    if (refused) *refused = e.what();
    return std::nullopt;
  }
  return g;
}

}  // namespace verlconf::explore
