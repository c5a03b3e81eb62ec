#include "cuda_impl/core/system.h"

#include "cuda_impl/core/traffic.h"
#include "oracle/core/implementations.h"

namespace verlconf::cuda {
namespace {
thread_local BenchProbe* current_probe = nullptr;
thread_local TrafficLedger* current_ledger = nullptr;
}  // namespace

TrafficLedger* SetTrafficLedger(TrafficLedger* ledger) {
  TrafficLedger* previous = current_ledger;
  current_ledger = ledger;
  return previous;
}

void RecordPass(const Footprint& f) {
  if (!current_ledger) return;
  current_ledger->read_bytes += f.read_bytes;
  current_ledger->write_bytes += f.write_bytes;
  ++current_ledger->launches;
}

void RecordHostCopy(double bytes) {
  if (!current_ledger) return;
  current_ledger->read_bytes += bytes;
  ++current_ledger->host_syncs;
}

void RecordRawThrustPass(const char* algorithm) {
  if (current_ledger) ++current_ledger->raw_passes[algorithm];
}

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
