#include "oracle/core/implementations.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace verlconf {
namespace {

struct Pending {
  std::vector<ImplementationRegistration> list;
  bool closed = false;
};

// A function-local static: registrations run during static initialisation, in an
// order across translation units that nothing fixes.
Pending& State() {
  static Pending p;
  return p;
}

}  // namespace

bool RegisterImplementation(Impl impl, std::string family, std::string name, RunFn run) {
  Pending& p = State();
  if (p.closed) {
    // Too late to reach the registry: the slot would silently stay empty.
    std::fprintf(stderr, "verlconf: %s implementation of %s/%s registered after the registry was built\n",
                 ImplName(impl), family.c_str(), name.c_str());
    std::abort();
  }
  p.list.push_back({impl, std::move(family), std::move(name), std::move(run)});
  return true;
}

std::vector<ImplementationRegistration> TakeImplementationRegistrations() {
  Pending& p = State();
  p.closed = true;
  return std::move(p.list);
}

void FillImplementationSlots(std::vector<FunctionSpec>& entries, std::vector<ImplementationRegistration> regs) {
  for (ImplementationRegistration& r : regs) {
    const std::string key = std::string(ImplName(r.impl)) + " implementation of " + r.family + "/" + r.name;
    FunctionSpec* spec = nullptr;
    for (auto& s : entries)
      if (s.family == r.family && s.name == r.name) spec = &s;
    if (!spec) throw std::logic_error(key + ": no such registry entry");
    RunFn* slot = r.impl == Impl::kCuda ? &spec->cuda : r.impl == Impl::kCudaHost ? &spec->cuda_host : nullptr;
    if (!slot) throw std::logic_error(key + ": the oracle slot is the family's own");
    if (*slot) throw std::logic_error(key + ": registered twice");
    *slot = std::move(r.run);
  }
}

}  // namespace verlconf
