// libFuzzer target for the paths that read files other programs wrote: the fixture
// reader and the candidate check. Two modes, chosen by the first input byte:
//
//  - structured (most inputs): the bytes describe a case (function, dtype, shapes,
//    values, config attributes, which fields exist); the case is written with our HDF5
//    writer, read back, and checked as a candidate against itself and through the
//    oracle. This reaches validation, the registry, the oracle and the comparator with
//    every odd shape, dtype and value, without feeding random bytes to libhdf5's parser.
//  - raw: the bytes are the HDF5 file (an input that starts with HDF5's signature, or
//    every input under VERLCONF_FUZZ_RAW, tools/fuzz/run.sh --raw). libhdf5 1.10's own
//    parser is not hardened against hostile files, so such a file is read as conform
//    reads every file, in a child process (tools/h5/h5child.h): libhdf5 crashing there
//    is the ReaderCrashed refusal, not a finding; this process crashing is one.
//
// A structured input that ends in the marker byte 0xA5 and a kind byte also has its file
// damaged at the HDF5 level after writing (Damage below): the classes the writer
// cannot produce (declared sizes without data, link cycles, soft and external links,
// names outside the schema's sets, non-finite config, unavailable filters, a lock held
// elsewhere, one flipped bit anywhere). tools/fuzz/seeds/ holds one such input per
// class, and raw files with the single flipped bits that crash libhdf5 (one per kind
// of crash).
//
// The contract under test: every input ends in a result or a BadInput/VerlError/
// Unsupported exception; never a crash, a leak, a hang or another exception.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <sanitizer/common_interface_defs.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/judge/candidate.h"
#include "oracle/judge/judge.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/h5/h5child.h"
#include "tools/h5/h5io.h"

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

// `untrusted`: the bytes may be anything (a raw input, a flipped bit), so they are read
// in a child as conform reads them; otherwise (our writer's output, damaged through
// libhdf5's own API) in this process, where libFuzzer sees the reader's coverage.
void CheckFile(const std::string& path, bool untrusted) {
  const fixtures::FixtureFile f =
      untrusted ? fixtures::ReadFixtureFile(path) : fixtures::ReadFixtureFileInProcess(path);
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
    for (double& v : a.data)
      v = in.role == Role::kGroupIndex ? static_cast<double>(b.U8() % 5) - (how == 255) : b.Value();
    if (a.dtype == DType::kFloat32)
      for (double& v : a.data) v = static_cast<double>(static_cast<float>(v));
    c.inputs[in.name] = std::move(a);
  }
  for (const ConfigKey& k : spec.config) {
    const uint8_t how = b.U8();
    if (how < 64) continue;  // None
    if (how < 128)
      c.config.Set(k.name, static_cast<int64_t>(static_cast<int8_t>(b.U8())));
    else if (how < 224)
      c.config.Set(k.name, b.Value());
    else
      c.config.Set(k.name, b.Text(k));
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

// --- damage at the HDF5 level ---------------------------------------------------

struct Owned {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Owned() {
    if (id >= 0) close(id);
  }
};

// A FIFO beside the temporary file: an external link to it blocks whoever follows it.
std::string FifoPath() {
  static const std::string p = [] {
    const std::string f = TempPath() + ".fifo";
    ::unlink(f.c_str());
    ::mkfifo(f.c_str(), 0600);
    return f;
  }();
  return p;
}

// Creates `name` under `group` with dims of any size (overflowing products included),
// chunked one element at a time, and never writes it.
void DeclareUnwritten(hid_t group, const char* name, std::vector<hsize_t> dims, bool contiguous) {
  std::vector<hsize_t> maxdims(dims.size(), H5S_UNLIMITED), chunk(dims.size(), 1);
  Owned space{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), contiguous ? nullptr : maxdims.data()),
              H5Sclose};
  Owned dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  if (!contiguous) H5Pset_chunk(dcpl.id, static_cast<int>(chunk.size()), chunk.data());
  Owned ds{H5Dcreate2(group, name, H5T_IEEE_F64LE, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
}

constexpr uint8_t kDamageKinds = 11;
constexpr uint8_t kLocked = 9, kFlippedBit = 10;

// One bit of the file flipped, wherever it falls: header, heap, B-tree or data.
void FlipBit(const std::string& path, Bytes& b) {
  FILE* f = std::fopen(path.c_str(), "r+b");
  if (!f) return;
  struct Close {
    FILE* f;
    ~Close() { std::fclose(f); }
  } close{f};
  if (std::fseek(f, 0, SEEK_END) != 0) return;
  const long size = std::ftell(f);
  if (size <= 0) return;
  const long at = static_cast<long>(b.U32() % static_cast<uint32_t>(size));
  const int bit = b.U8() % 8;
  if (std::fseek(f, at, SEEK_SET) != 0) return;
  const int c = std::fgetc(f);
  if (c == EOF || std::fseek(f, at, SEEK_SET) != 0) return;
  std::fputc(c ^ (1 << bit), f);
}

// Applies damage `kind` to the one case of the file at `path` (function fn, case cn).
void Damage(const std::string& path, const std::string& fn, const std::string& cn, uint8_t kind, Bytes& b) {
  if (kind % kDamageKinds == kFlippedBit) return FlipBit(path, b);
  Owned file{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) return;
  const std::string casepath = "/" + fn + "/" + cn;
  Owned c{H5Gopen2(file.id, casepath.c_str(), H5P_DEFAULT), H5Gclose};
  if (c.id < 0) return;
  if (H5Lexists(c.id, "inputs", H5P_DEFAULT) <= 0)
    H5Gclose(H5Gcreate2(c.id, "inputs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  Owned in{H5Gopen2(c.id, "inputs", H5P_DEFAULT), H5Gclose};
  switch (kind % kDamageKinds) {
    case 0: {  // a hard link back up: to the case, the function or the root
      const std::string targets[] = {casepath, "/" + fn, "/", casepath + "/inputs"};
      H5Lcreate_hard(file.id, targets[b.U8() % 4].c_str(), in.id, "loop", H5P_DEFAULT, H5P_DEFAULT);
      break;
    }
    case 1: H5Lcreate_soft(casepath.c_str(), in.id, "soft", H5P_DEFAULT, H5P_DEFAULT); break;
    case 2: H5Lcreate_external(FifoPath().c_str(), "/", in.id, "external", H5P_DEFAULT, H5P_DEFAULT); break;
    case 3: {  // declared dimensions of any size, nothing stored
      std::vector<hsize_t> dims(1 + b.U8() % 3);
      for (hsize_t& d : dims) d = (b.U8() & 1) ? hsize_t{1} << (b.U8() % 64) : b.U8();
      DeclareUnwritten(in.id, "huge", dims, false);
      break;
    }
    case 4: DeclareUnwritten(in.id, "unwritten", {1 + b.U8() % 64u, 1000}, true); break;
    case 5: {  // the case renamed outside the schema's character set
      std::string bad = "x";
      for (int n = 1 + b.U8() % 4; n > 0; --n) bad += static_cast<char>(b.U8() | (b.U8() & 1 ? 0x80 : 0));
      const std::string fnpath = "/" + fn;
      H5Lmove(file.id, casepath.c_str(), file.id,
              (fnpath + "/" + (bad.find('/') == std::string::npos ? bad : "x\n")).c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    }
    case 6: {  // a non-finite config value
      const double values[] = {std::nan(""), HUGE_VAL, -HUGE_VAL};
      const double v = values[b.U8() % 3];
      const char* key = "cfg.clip_ratio";
      if (H5Aexists(c.id, key) > 0) H5Adelete(c.id, key);
      Owned space{H5Screate(H5S_SCALAR), H5Sclose};
      Owned a{H5Acreate2(c.id, key, H5T_IEEE_F64LE, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
      if (a.id >= 0) H5Awrite(a.id, H5T_NATIVE_DOUBLE, &v);
      break;
    }
    case 7: {  // a filter no build registers
      hsize_t dims[1] = {8}, chunk[1] = {8};
      Owned space{H5Screate_simple(1, dims, nullptr), H5Sclose};
      Owned dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
      H5Pset_chunk(dcpl.id, 1, chunk);
      H5Pset_filter(dcpl.id, static_cast<H5Z_filter_t>(40000 + b.U8()), H5Z_FLAG_OPTIONAL, 0, nullptr);
      Owned ds{H5Dcreate2(in.id, "filtered", H5T_IEEE_F64LE, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
      const double zeros[8] = {0};
      if (ds.id >= 0) H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros);
      break;
    }
    case 8: {  // one dataset linked many times: the budget counts every link
      hsize_t dims[1] = {hsize_t{1} << 20};
      Owned space{H5Screate_simple(1, dims, nullptr), H5Sclose};
      Owned dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
      H5Pset_chunk(dcpl.id, 1, dims);
      H5Pset_deflate(dcpl.id, 9);
      Owned ds{H5Dcreate2(in.id, "big", H5T_IEEE_F64LE, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
      std::vector<double> zeros(dims[0], 0.0);
      if (ds.id >= 0) H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
      for (int k = 0; k < 40; ++k)
        H5Lcreate_hard(in.id, "big", in.id, ("big" + std::to_string(k)).c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    }
    case kLocked: break;  // held while the file is checked, below
  }
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
      case 0:
        if (auto it = pick(c.outputs); it != c.outputs.end()) c.outputs.erase(it);
        break;
      case 1:
        if (auto it = pick(c.metrics); it != c.metrics.end()) c.metrics.erase(it);
        break;
      case 2:
        if (auto it = pick(c.outputs); it != c.outputs.end()) it->second.dtype = static_cast<DType>(b.U8() % 3);
        break;
      case 3:
        if (auto it = pick(c.grads); it != c.grads.end()) it->second.dtype = static_cast<DType>(b.U8() % 3);
        break;
      case 4: c.outputs["not_an_output"] = Array::Scalar(b.Value()); break;
      case 5: c.metrics["actor/not_a_metric"] = b.Value(); break;
      case 6: c.inputs["extra"] = Array::Scalar(1.0); break;
      default: c.declined = "fuzz"; break;
    }
  }
  return c;
}

bool HasHdf5Signature(const uint8_t* data, size_t size) {
  static const uint8_t kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  return size >= sizeof kSignature && std::memcmp(data, kSignature, sizeof kSignature) == 0;
}

}  // namespace

// A reader child that libhdf5 crashes must die as itself: libFuzzer's death callback
// would write a crash-* reproducer for a crash the parent handles.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pthread_atfork(nullptr, nullptr, [] { __sanitizer_set_death_callback(nullptr); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes b(data, size);
  const bool raw = std::getenv("VERLCONF_FUZZ_RAW") != nullptr || HasHdf5Signature(data, size);
  const bool damage = !raw && size >= 2 && data[size - 2] == 0xA5;
  const uint8_t kind = damage ? data[size - 1] : 0;
  const bool untrusted = raw || (damage && kind % kDamageKinds == kFlippedBit);
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
      if (damage) {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        Damage(path, file.cases[0].function, file.cases[0].name, kind, b);
      }
    }
    if (damage && kind % kDamageKinds == kLocked) {
      // What a writer elsewhere holds; flock locks are per open file, so this one
      // conflicts with the reader's own.
      const int fd = ::open(path.c_str(), O_RDONLY);
      if (fd >= 0 && ::flock(fd, LOCK_EX) == 0) {
        struct Unlock {
          int fd;
          ~Unlock() { ::close(fd); }
        } unlock{fd};
        CheckFile(path, untrusted);
        return 0;
      }
      if (fd >= 0) ::close(fd);
    }
    CheckFile(path, untrusted);
    if (!raw && !damage) {
      const fixtures::FixtureFile back = fixtures::ReadFixtureFileInProcess(path);
      for (const Case& golden : back.cases)
        if (const FunctionSpec* spec = SpecFor(golden)) CheckCandidate(*spec, golden, MutateCandidate(golden, b));
    }
  } catch (const BadInput& e) {
    // VERLCONF_FUZZ_VERBOSE: show what each input ended in (checking the seeds).
    if (std::getenv("VERLCONF_FUZZ_VERBOSE")) std::fprintf(stderr, "BadInput: %s\n", e.what());
  } catch (const VerlError&) {
  } catch (const Unsupported&) {
  }
  // Anything else escapes and libFuzzer reports it as a crash: that is the point.
  return 0;
}
