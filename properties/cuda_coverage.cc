#include "properties/cuda_coverage.h"

#include <set>

#include "oracle/registry.h"

namespace verlconf::testing {

const std::map<std::string, std::string>& CudaExceptions() {
  static const std::map<std::string, std::string> exceptions = {
      {"reward_kl/fixed",
       "FixedKLController.update: a scalar on the host, no tensor to compute on a device (apply_kl_penalty's "
       "own update runs through the oracle's)"},
      {"reward_kl/adaptive",
       "AdaptiveKLController.update: a scalar recurrence on the host, no tensor to compute on a device "
       "(apply_kl_penalty's own update runs through the oracle's)"},
  };
  return exceptions;
}

std::vector<std::string> CudaCoverageProblems(Impl impl) {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (const FunctionSpec& s : Registry()) {
    const std::string key = s.family + "/" + s.name;
    seen.insert(key);
    const bool excepted = CudaExceptions().count(key) > 0;
    const bool filled = s.Implementation(impl) != nullptr;
    if (!excepted && !filled) problems.push_back(key + ": no " + ImplName(impl) + " entry and not an exception");
    if (excepted && filled) problems.push_back(key + ": listed as an exception but has a " + ImplName(impl) + " entry");
  }
  for (const auto& [key, why] : CudaExceptions())
    if (!seen.count(key)) problems.push_back(key + ": listed as an exception but no registry entry has that name");
  return problems;
}

}  // namespace verlconf::testing
