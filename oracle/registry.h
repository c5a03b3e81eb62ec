// The function registry: the one place that lists functions. Golden tests, property
// tests, the CLI, `conform spec --json` and (through its committed copy) the Python
// side all iterate this list. Each family registers its entries from
// oracle/<family>/spec.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf {

const std::vector<FunctionSpec>& Registry();
// The registry key is (family, name): verl uses "gpg" both for an advantage estimator
// and for a policy loss. With an empty family the name must be unambiguous
// (std::logic_error otherwise). Null when absent.
const FunctionSpec* FindSpec(const std::string& name, const std::string& family = "");
// The spec for a case: by its family when it has one.
const FunctionSpec* SpecFor(const Case& c);

// The registry as JSON (`conform spec --json`); with `pick`, only the entries it accepts
// (the same object, its "functions" filtered).
std::string RegistryJson(const std::function<bool(const FunctionSpec&)>& pick = {});

}  // namespace verlconf
