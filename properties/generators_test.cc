// Every registry generator makes cases its own spec accepts: the property tests, the
// gradient checks and the CLI's generated cases all rely on that. A generated case must
// pass ValidateCase (inputs, roles, shapes, dtypes, config keys), and the oracle must
// either return every output the spec declares or raise an error verl raises too.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "oracle/core/errors.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "properties/testing.h"

namespace verlconf {
namespace {

RC_GTEST_PROP(Registry, EveryGeneratorMakesValidCases, ()) {
  const DType dtype = *rc::gen::element(DType::kFloat64, DType::kFloat32);
  const GenParams p = *testing::ArbitraryParams(dtype);
  for (const FunctionSpec& spec : Registry()) {
    if (!spec.generate) continue;
    RC_LOG() << spec.family << "/" << spec.name << "\n";
    const Case c = spec.generate(p);
    RC_ASSERT(c.family == spec.family && c.function == spec.name);
    ValidateCase(spec, c);  // throws BadInput, naming the field, on a malformed case
    Result r;
    try {
      r = spec.oracle(c);
    } catch (const VerlError&) {
      continue;  // e.g. kl_penalty "full", a mask sum of 1 under masked_var
    } catch (const Unsupported&) {
      continue;
    }
    for (const OutputSpec& o : spec.outputs) RC_ASSERT(r.outputs.count(o.name) == 1);
  }
}

}  // namespace
}  // namespace verlconf
