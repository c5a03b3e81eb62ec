#include "cuda_impl/core/system.h"

#include "oracle/core/implementations.h"

namespace verlconf::cuda {
namespace {
thread_local BenchProbe* current_probe = nullptr;
}  // namespace

BenchProbe* SetBenchProbe(BenchProbe* probe) {
  BenchProbe* previous = current_probe;
  current_probe = probe;
  return previous;
}

BenchProbe* CurrentBenchProbe() { return current_probe; }

bool RegisterCudaEntryIn(bool with_device, const std::string& family, const std::string& name, SystemRunFn run) {
  if (with_device)
    RegisterImplementation(Impl::kCuda, family, name, [run](const Case& c) { return run(System::kDevice, c); });
  RegisterImplementation(Impl::kCudaHost, family, name, [run](const Case& c) { return run(System::kHost, c); });
  return true;
}

}  // namespace verlconf::cuda
