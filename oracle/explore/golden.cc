#include "oracle/explore/golden.h"

#include "oracle/core/errors.h"
#include "oracle/judge/validate.h"

namespace verlconf::explore {

std::optional<Case> OracleGolden(const FunctionSpec& spec, const Case& c, std::string* refused) {
  Case g = c;
  g.outputs.clear();
  g.grads.clear();
  g.metrics.clear();
  g.metric_dtypes.clear();
  g.vjps.clear();
  g.expect_error.reset();
  try {
    ValidateStructure(spec, g);
    const Result r = spec.oracle(g);
    g.outputs = r.outputs;
    g.grads = r.grads;
    g.metrics = r.metrics;
    g.vjps = r.vjps;
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
