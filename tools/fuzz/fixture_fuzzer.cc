// libFuzzer target for the paths that read files other programs wrote: the fixture
// reader and the candidate check. Two modes, chosen by the first input byte:
//
//  - structured (most inputs): the bytes describe a case (function, dtype, shapes,
//    values, config attributes, which fields exist); the case is written with our HDF5
//    writer, read back, and checked as a candidate against itself and through the
//    oracle. This reaches validation, the registry, the oracle and the comparator with
//    every odd shape, dtype and value, without feeding random bytes to libhdf5's parser.
//  - raw: the bytes are the HDF5 file. libhdf5 1.10's own parser is not hardened
//    against hostile files; this mode runs on demand (tools/fuzz/run.sh --raw) and is
//    not part of CI, so that a crash inside libhdf5 is not mistaken for ours.
//
// The contract under test: every input ends in a result or a BadInput/VerlError/
// Unsupported exception; never a crash, a leak, a hang or another exception.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "fixtures/h5io.h"
#include "oracle/candidate.h"
#include "oracle/check.h"
#include "oracle/errors.h"
#include "oracle/registry.h"
#include "oracle/validate.h"

namespace {

using namespace verlconf;

// Consumes the fuzz input front to back; runs out into zeros.
class Bytes {
 public:
  Bytes(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  uint8_t U8() { return i_ < n_ ? d_[i_++] : 0; }
  uint32_t U32() { return U8() | (U8() << 8) | (U8() << 16) | (static_cast<uint32_t>(U8()) << 24); }
  double Double() {
    uint64_t v = static_cast<uint64_t>(U32()) | (static_cast<uint64_t>(U32()) << 32);
    double d;
    std::memcpy(&d, &v, sizeof d);
    return d;
  }
  // Mostly ordinary numbers, sometimes anything (NaN, inf, denormals, huge).
  double Value() {
    const uint8_t kind = U8();
    if (kind < 200) return (static_cast<int>(U8()) - 128) / 16.0;
    if (kind < 230) return static_cast<double>(U8() & 1);
    return Double();
  }
  // A string config value: one of the key's choices, or a short string over the
  // characters thresholds and option lists are made of ("0.5_2.0,token_k1", "1e-3",
  // "_", ","), so the parsers see well- and ill-formed specs alike.
  std::string Text(const verlconf::ConfigKey& k) {
    const uint8_t kind = U8();
    if (!k.choices.empty() && kind < 128) return k.choices[U8() % k.choices.size()];
    static const char kAlphabet[] = "0123456789._,-e tokenseqmaxsuk";
    std::string out;
    for (int n = U8() % 16; n > 0; --n) out += kAlphabet[U8() % (sizeof kAlphabet - 1)];
    return out;
  }
  const uint8_t* rest() const { return d_ + i_; }
  size_t left() const { return i_ < n_ ? n_ - i_ : 0; }

 private:
  const uint8_t* d_;
  size_t n_, i_ = 0;
};

std::string TempPath() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/verlconf-fuzz-" + std::to_string(getpid()) + ".h5";
  }();
  return p;
}

void CheckFile(const std::string& path) {
  const fixtures::FixtureFile f = fixtures::ReadFixtureFile(path);
  for (const Case& c : f.cases) {
    const FunctionSpec* spec = SpecFor(c);
    if (!spec || !spec->oracle) continue;
    try {
      CheckCandidate(*spec, c, c);
    } catch (const BadInput&) {
    }
    try {
      CheckImplementation(*spec, c, spec->oracle);
    } catch (const BadInput&) {
    }
  }
}

Case Structured(Bytes& b) {
  const auto& reg = Registry();
  const FunctionSpec& spec = reg[b.U8() % reg.size()];
  Case c;
  c.family = spec.family;
  c.function = spec.name;
  c.name = "fuzz_f64";
  c.dtype = (b.U8() & 1) ? DType::kFloat32 : DType::kFloat64;
  const int64_t rows = b.U8() % 6, cols = b.U8() % 9;  // zero sizes included on purpose
  for (const InputSpec& in : spec.inputs) {
    const uint8_t how = b.U8();
    if (how < 16) continue;  // missing input
    std::vector<int64_t> shape;
    switch (how % 8) {
      case 0: shape = {}; break;  // wrong rank
      case 1: shape = {rows}; break;
      case 2: shape = {rows, cols + 1}; break;  // inconsistent T
      default: shape = in.role == Role::kTokens ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
    }
    Array a(shape, in.role == Role::kGroupIndex && how % 5 != 0 ? DType::kInt64 : c.dtype);
    for (double& v : a.data) v = in.role == Role::kGroupIndex ? static_cast<double>(b.U8() % 5) - (how == 255) : b.Value();
    if (a.dtype == DType::kFloat32)
      for (double& v : a.data) v = static_cast<double>(static_cast<float>(v));
    c.inputs[in.name] = std::move(a);
  }
  for (const ConfigKey& k : spec.config) {
    const uint8_t how = b.U8();
    if (how < 64) continue;  // None
    if (how < 128) c.config.Set(k.name, static_cast<int64_t>(static_cast<int8_t>(b.U8())));
    else if (how < 224) c.config.Set(k.name, b.Value());
    else c.config.Set(k.name, b.Text(k));
  }
  if (b.U8() < 8) c.config.Set("not_a_key", 1.0);
  // Outputs: sometimes the oracle's own (so the comparison has work), sometimes junk.
  if (b.U8() & 1) {
    try {
      ValidateCase(spec, c);
      const Result r = spec.oracle(c);
      c.outputs = r.outputs;
      c.grads = r.grads;
      c.metrics = r.metrics;
      for (auto& [name, a] : c.outputs)
        if (b.U8() < 32 && a.size()) a[b.U8() % a.size()] = b.Value();
    } catch (const std::exception&) {
      c.expect_error = "ValueError: fuzz";
    }
  }
  return c;
}

// A candidate made from a case the way adapters and hand edits go wrong: fields left
// out, stored in another dtype (float32/float64/int64), names the function lacks, an
// extra input, a decline beside or instead of a result.
Case MutateCandidate(Case c, Bytes& b) {
  auto pick = [&](auto& m) {
    if (m.empty()) return m.end();
    auto it = m.begin();
    std::advance(it, b.U8() % m.size());
    return it;
  };
  for (int n = b.U8() % 4; n > 0; --n) {
    switch (b.U8() % 8) {
      case 0: if (auto it = pick(c.outputs); it != c.outputs.end()) c.outputs.erase(it); break;
      case 1: if (auto it = pick(c.metrics); it != c.metrics.end()) c.metrics.erase(it); break;
      case 2:
        if (auto it = pick(c.outputs); it != c.outputs.end())
          it->second.dtype = static_cast<DType>(b.U8() % 3);
        break;
      case 3: if (auto it = pick(c.grads); it != c.grads.end()) it->second.dtype = static_cast<DType>(b.U8() % 3); break;
      case 4: c.outputs["not_an_output"] = Array::Scalar(b.Value()); break;
      case 5: c.metrics["actor/not_a_metric"] = b.Value(); break;
      case 6: c.inputs["extra"] = Array::Scalar(1.0); break;
      default: c.declined = "fuzz"; break;
    }
  }
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes b(data, size);
  const bool raw = std::getenv("VERLCONF_FUZZ_RAW") != nullptr;
  try {
    const std::string path = TempPath();
    if (raw) {
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) return 0;
      std::fwrite(data, 1, size, f);
      std::fclose(f);
    } else {
      fixtures::FixtureFile file;
      file.cases.push_back(Structured(b));
      file.family = file.cases[0].family;  // the reader takes a case's family from its file
      file.provenance["verl_version"] = "0.0";
      fixtures::WriteFixtureFile(path, file);
    }
    CheckFile(path);
    if (!raw) {
      const fixtures::FixtureFile back = fixtures::ReadFixtureFile(path);
      for (const Case& golden : back.cases)
        if (const FunctionSpec* spec = SpecFor(golden)) CheckCandidate(*spec, golden, MutateCandidate(golden, b));
    }
  } catch (const BadInput&) {
  } catch (const VerlError&) {
  } catch (const Unsupported&) {
  }
  // Anything else escapes and libFuzzer reports it as a crash: that is the point.
  return 0;
}
