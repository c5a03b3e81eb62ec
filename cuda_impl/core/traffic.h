// The traffic model: what one entry call moves through memory, counted without a GPU.
//
// Every pass a CUDA function makes goes through a template of rows.cuh, and each call
// of a template declares its footprint (the token matrices, row vectors and scalars
// its functors read and write) beside the functors that do the reading. While a
// TrafficLedger is installed on the calling thread, every template records its
// footprint and its launch there, on either system, so a host run of an entry counts the
// device's traffic. A Thrust algorithm called directly on the host system (not through
// a template) declares nothing: the host policy notices it (system.cuh) and the ledger
// marks the call as not counted, so a raw pass can never pass for a cheap one.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace verlconf::cuda {

// Bytes one pass reads and writes in the memory of its system.
struct Footprint {
  double read_bytes = 0;
  double write_bytes = 0;

  template <class T>
  Footprint& Reads(int64_t elements, int times = 1) {
    read_bytes += static_cast<double>(elements) * static_cast<double>(sizeof(T)) * times;
    return *this;
  }
  template <class T>
  Footprint& Writes(int64_t elements, int times = 1) {
    write_bytes += static_cast<double>(elements) * static_cast<double>(sizeof(T)) * times;
    return *this;
  }
};

// One entry call's passes, as the templates recorded them.
struct TrafficLedger {
  double read_bytes = 0;
  double write_bytes = 0;
  int64_t launches = 0;    // kernels the device scheduler launches
  int64_t host_syncs = 0;  // results brought back to the host mid-call (a stream wait each)
  // Thrust algorithms called outside the templates, by name: their traffic is unknown.
  std::map<std::string, int64_t> raw_passes;

  double bytes() const { return read_bytes + write_bytes; }
  bool complete() const { return raw_passes.empty(); }
};

// Installs `ledger` (nullptr removes it) for the calling thread; returns the previous one.
TrafficLedger* SetTrafficLedger(TrafficLedger* ledger);

// What the templates call: no-ops while no ledger is installed.
void RecordPass(const Footprint& f);
void RecordHostCopy(double bytes);
void RecordRawThrustPass(const char* algorithm);

}  // namespace verlconf::cuda
