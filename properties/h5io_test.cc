// Round trip through the fixture writer and reader, and the reader's errors: each
// names the file, case and field, and none crashes.
#include "tools/h5/h5io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

#include "oracle/core/errors.h"
#include "tools/h5/h5child.h"
#include "tools/h5/h5limits.h"
#include "tools/h5/h5names.h"

namespace verlconf::fixtures {
namespace {

std::string TmpPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

FixtureFile Sample() {
  FixtureFile f;
  f.family = "kl";
  f.provenance["verl_version"] = "0.9.1";
  f.verl_registry["kl_penalty_names"] = {"k1", "k3"};
  Case c;
  c.function = "k3";
  c.name = "small_f32";
  c.dtype = DType::kFloat32;
  c.seed = 7;
  c.why = "round trip";
  c.config.Set("dp_size", int64_t{2});
  c.config.Set("epsilon", 1e-6);
  c.config.Set("mode", std::string("token-mean"));
  Array a = Array::Matrix(2, 3, DType::kFloat32);
  for (int64_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(0.1 * static_cast<double>(k));
  c.inputs["logprob"] = a;
  c.inputs["index"] = Array({2}, DType::kInt64);
  c.inputs["index"][1] = 5;
  c.outputs["kl"] = a;
  c.metrics["actor/pg_clipfrac"] = 0.25;
  f.cases.push_back(c);
  return f;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadFixtureFile(path);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(H5io, RoundTrip) {
  const std::string path = TmpPath("roundtrip.h5");
  WriteFixtureFile(path, Sample());
  const FixtureFile f = ReadFixtureFile(path);
  EXPECT_EQ(f.family, "kl");
  EXPECT_EQ(f.Provenance("verl_version"), "0.9.1");
  ASSERT_EQ(f.verl_registry.at("kl_penalty_names").size(), 2u);
  ASSERT_EQ(f.cases.size(), 1u);
  const Case& c = f.cases[0];
  EXPECT_EQ(c.function, "k3");
  EXPECT_EQ(c.dtype, DType::kFloat32);
  EXPECT_EQ(c.seed, 7);
  EXPECT_EQ(c.config.Int("dp_size", 0), 2);
  EXPECT_EQ(c.config.Double("epsilon", 0), 1e-6);
  EXPECT_EQ(c.config.String("mode", ""), "token-mean");
  EXPECT_EQ(c.inputs.at("logprob").dtype, DType::kFloat32);
  EXPECT_EQ(c.inputs.at("logprob").data, Sample().cases[0].inputs.at("logprob").data);
  EXPECT_EQ(c.inputs.at("index").dtype, DType::kInt64);
  EXPECT_EQ(c.inputs.at("index")[1], 5);
  EXPECT_EQ(c.metrics.at("actor/pg_clipfrac"), 0.25);  // nested group joined back
}

TEST(H5io, TruncatedFileIsBadInputNamingTheFile) {
  const std::string good = TmpPath("good.h5"), cut = TmpPath("truncated.h5");
  WriteFixtureFile(good, Sample());
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t keep : {bytes.size() / 2, size_t{100}, size_t{0}}) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(keep));
    const std::string e = ErrorOf(cut);
    EXPECT_NE(e.find(cut), std::string::npos) << "kept " << keep << " bytes: '" << e << "'";
  }
}

TEST(H5io, NotHdf5IsBadInput) {
  const std::string p = TmpPath("text.h5");
  std::ofstream(p) << "hello";
  EXPECT_NE(ErrorOf(p).find("not an HDF5 file"), std::string::npos);
  EXPECT_NE(ErrorOf(TmpPath("does-not-exist.h5")).find("cannot open"), std::string::npos);
}

TEST(H5io, FutureSchemaIsRefused) {
  FixtureFile f = Sample();
  f.schema_version = kSchemaVersion + 1;
  const std::string p = TmpPath("future.h5");
  WriteFixtureFile(p, f);
  EXPECT_NE(ErrorOf(p).find("schema_version"), std::string::npos);
}

TEST(H5io, FailedWriteLeavesNoFile) {
  const std::string p = TmpPath("no-such-dir/x.h5");
  EXPECT_THROW(WriteFixtureFile(p, Sample()), BadInput);
  EXPECT_FALSE(std::ifstream(p).good());
}

// --- the reader's limits (tools/h5/h5limits.h) ----------------------------------

// The element count is exact where it is allowed and refused otherwise, for products
// near and far beyond 2^63 and 2^64 (checked against 128-bit arithmetic).
TEST(H5Limits, ElementCountNeverWraps) {
  std::mt19937_64 rng(12);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<hsize_t> dims;
    unsigned __int128 bounded = 1, exact = 1;
    for (int i = 0; i < rank; ++i) {
      const int bits = static_cast<int>(rng() % 65);  // 0 .. 64 bits: zero, small, 2^63, 2^64 - 1
      hsize_t d = bits == 0 ? 0 : bits == 64 ? rng() : rng() & ((hsize_t{1} << bits) - 1);
      if (rng() % 5 == 0) d = hsize_t{1} << (rng() % 64);
      dims.push_back(d);
      exact *= d;
      if (bounded <= (static_cast<unsigned __int128>(1) << 64)) bounded *= d == 0 ? 1 : d;
    }
    const bool allowed = bounded <= static_cast<unsigned __int128>(kMaxCaseElements);
    if (allowed) {
      ++accepted;
      EXPECT_EQ(CheckedElementCount(dims, "f:/k1/c/inputs/x"), static_cast<int64_t>(exact));
    } else {
      ++refused;
      try {
        CheckedElementCount(dims, "f:/k1/c/inputs/x");
        ADD_FAILURE() << "accepted a shape of " << static_cast<double>(bounded) << " elements";
      } catch (const BadInput& e) {
        EXPECT_NE(std::string(e.what()).find("f:/k1/c/inputs/x: declared shape ("), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(accepted, 1000);  // both sides of the cap were exercised
  EXPECT_GT(refused, 1000);
}

TEST(H5Limits, BudgetCapsEachCaseAndTheWholeFile) {
  ElementBudget b;
  b.Charge(kMaxCaseElements, "f:/k1/a/inputs/x");  // exactly the cap is allowed
  EXPECT_THROW(b.Charge(1, "f:/k1/a/inputs/y"), BadInput);
  int64_t cases = 1;
  try {
    for (;; ++cases) {
      b.case_used = 0;  // the reader resets it per case
      b.Charge(kMaxCaseElements, "f:/k1/case" + std::to_string(cases) + "/inputs/x");
    }
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("the file would hold more than"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cases, kMaxFileElements / kMaxCaseElements);
}

// --- names (tools/h5/h5names.h) ---------------------------------------------------

// Every byte value, in every position, against the documented set of each kind.
TEST(H5Names, EachKindAcceptsExactlyItsCharacterSet) {
  auto in = [](const char* set, unsigned char c) {
    return std::string(set).find(static_cast<char>(c)) != std::string::npos;
  };
  const std::string lower = "abcdefghijklmnopqrstuvwxyz0123456789", upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const std::string alnum = lower + upper;
  for (int b = 1; b < 256; ++b) {
    const auto c = static_cast<unsigned char>(b);
    const std::string ch(1, static_cast<char>(c));
    EXPECT_EQ(IsValidName(NameKind::kCase, "a" + ch), in((lower + "_.-").c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kCase, ch + "a"), in(lower.c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kFunction, "a" + ch), in((alnum + "_+-").c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kFunction, ch + "a"), in((alnum + "_").c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kMember, "a" + ch), in((alnum + "_.-").c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kMember, ch + "a"), in((alnum + "_").c_str(), c)) << b;
    EXPECT_EQ(IsValidName(NameKind::kAttribute, ch + ch), in((alnum + "_.+-").c_str(), c)) << b;
    // File names: printable ASCII; bytes >= 0x80 only inside valid UTF-8.
    EXPECT_EQ(IsValidName(NameKind::kFileName, "f" + ch), c >= 0x20 && c < 0x7F) << b;
    const std::string escaped = Escaped("x" + ch + "y");
    for (char e : escaped) EXPECT_TRUE(e >= 0x20 && e < 0x7F) << b;
  }
  for (NameKind k :
       {NameKind::kCase, NameKind::kFunction, NameKind::kMember, NameKind::kAttribute, NameKind::kFileName})
    EXPECT_FALSE(IsValidName(k, ""));
}

TEST(H5Names, Utf8IsValidatedStrictly) {
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  for (const char* bad : {"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                          "\xF5\x80\x80\x80", "\xC3", "\xE2\x82", "\x80", "\xFF"})
    EXPECT_FALSE(IsValidUtf8(bad)) << Escaped(bad);
  EXPECT_FALSE(IsCleanText("a\nb", false));
  EXPECT_TRUE(IsCleanText("a\nb\tc", true));
  EXPECT_FALSE(IsCleanText("a\x1B[31m", true));
  EXPECT_FALSE(IsCleanText("a\x7F", true));
  EXPECT_EQ(Escaped("a\nb'\\"), "a\\x0Ab\\x27\\x5C");
}

// --- what the reader refuses in files our own writer can produce --------------------

TEST(H5io, NonFiniteConfigIsBadInputNamingTheKey) {
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    FixtureFile f = Sample();
    f.cases[0].config.Set("epsilon", v);
    const std::string p = TmpPath("nonfinite.h5");
    WriteFixtureFile(p, f);
    const std::string e = ErrorOf(p);
    EXPECT_NE(e.find(p + ":/k3/small_f32: attribute 'cfg.epsilon': non-finite value"), std::string::npos) << e;
  }
}

TEST(H5io, NestingBeyondTheSchemaIsRefused) {
  FixtureFile f = Sample();
  f.cases[0].metrics["a/b/c/d"] = 1.0;  // metrics/a/b/c: 4 levels of groups, allowed
  const std::string p = TmpPath("nested.h5");
  WriteFixtureFile(p, f);
  EXPECT_EQ(ErrorOf(p), "");
  f = Sample();
  f.cases[0].metrics["a/b/c/d/e"] = 1.0;
  WriteFixtureFile(p, f);
  EXPECT_NE(ErrorOf(p).find("nested more than 4 levels"), std::string::npos) << ErrorOf(p);
}

TEST(H5io, DirectoryEntriesMustBeRegularFiles) {
  const std::string dir = TmpPath("dir_with_subdir");
  std::remove((dir + "/a.h5").c_str());
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/a.h5").c_str(), 0755);
  try {
    ReadFixtureDir(dir);
    ADD_FAILURE() << "a directory named a.h5 was accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/a.h5: is a directory, not a regular file");
  }
}

// --- reading in a child process (tools/h5/h5child.h) --------------------------------

std::string BundledGoldens() {
  const char* dir = std::getenv("TEST_SRCDIR");
  return std::string(dir ? dir : ".") + "/verlconf/fixtures/verl-0.9.1";
}

std::string CopyOf(const std::string& from, const std::string& name) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string to = TmpPath(name);
  std::ofstream(to, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return to;
}

void FlipBit(const std::string& path, long offset, int bit) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(offset);
  const char c = static_cast<char>(f.get() ^ (1 << bit));
  f.seekp(offset);
  f.put(c);
}

// The attack's flipped bits in kl.h5 (OFFSET:BIT per line, located by
// properties/h5_structure.py attack-flips, the :kl_attack_flips genrule).
std::vector<std::pair<long, int>> KlAttackFlips() {
  const char* dir = std::getenv("TEST_SRCDIR");
  std::ifstream in(std::string(dir ? dir : ".") + "/verlconf/properties/kl_attack_flips.txt");
  std::vector<std::pair<long, int>> flips;
  long offset = 0;
  char colon = 0;
  int bit = 0;
  while (in >> offset >> colon >> bit) flips.emplace_back(offset, bit);
  return flips;
}

// Every member the reader fills, and the ones it leaves alone, with values of each kind.
FixtureFile EveryMember() {
  FixtureFile f = Sample();
  f.path = "x.h5";
  f.schema_version = 1;
  f.verl_registry["empty"] = {};
  Case c = f.cases[0];
  c.file = "x.h5";
  c.family = "kl";
  c.name = "other_f64";
  c.dtype = DType::kFloat64;
  c.seed = -3;
  c.config.Set("none", std::monostate{});
  c.config.Set("text", std::string("a\0b", 3));
  c.config.set_resolved_for("kl/k3");
  c.grads["logprob"] = Array::Scalar(-0.0, DType::kFloat32);
  c.outputs["empty"] = Array({0, 4}, DType::kFloat64);
  c.metric_dtypes["actor/pg_clipfrac"] = DType::kInt64;
  c.projections["kl"] = Array::Matrix(1, 2);
  c.vjps["kl/logprob"] = Array::Matrix(2, 1);
  c.vjps["kl/logprob"][1] = std::nan("");
  c.expect_error = "ValueError: two\nlines";
  c.declined = "";
  f.cases.push_back(c);
  return f;
}

TEST(H5Child, EncodingRoundTripsEveryMember) {
  const FixtureFile f = EveryMember();
  const std::string bytes = EncodeFixtureFile(f);
  const FixtureFile back = DecodeFixtureFile(bytes);
  EXPECT_EQ(EncodeFixtureFile(back), bytes);
  const Case& c = back.cases.at(1);
  EXPECT_EQ(c.config.resolved_for(), "kl/k3");
  EXPECT_EQ(c.config.values().at("text"), ConfigValue(std::string("a\0b", 3)));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(c.config.values().at("none")));
  EXPECT_EQ(c.outputs.at("empty").shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(std::signbit(c.grads.at("logprob")[0]));
  EXPECT_TRUE(std::isnan(c.vjps.at("kl/logprob")[1]));
  EXPECT_EQ(c.expect_error, "ValueError: two\nlines");
  EXPECT_EQ(c.declined, "");
  EXPECT_FALSE(back.cases.at(0).declined.has_value());
  EXPECT_EQ(back.verl_registry.at("empty").size(), 0u);
}

// What a child whose memory libhdf5 damaged might hand back: every prefix and many
// single-byte changes of a real result are refused or decoded, never a crash or a
// huge allocation.
TEST(H5Child, DecodingSurvivesAnyDamage) {
  const std::string bytes = EncodeFixtureFile(EveryMember());
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_THROW(DecodeFixtureFile(bytes.substr(0, n)), std::runtime_error);
  std::mt19937 rng(7);
  for (int k = 0; k < 2000; ++k) {
    std::string b = bytes;
    b[rng() % b.size()] = static_cast<char>(rng());
    try {
      DecodeFixtureFile(b);
    } catch (const std::runtime_error&) {
    }
  }
}

TEST(H5Child, AChildReadsWhatThisProcessReads) {
  for (const char* name : {"kl.h5", "policy_loss.h5", "torch_functional.h5"}) {
    const std::string path = BundledGoldens() + "/" + name;
    EXPECT_EQ(EncodeFixtureFile(ReadFixtureFile(path)), EncodeFixtureFile(ReadFixtureFileInProcess(path))) << path;
  }
}

// The children of a directory run side by side; the error reported is still the one of
// the first file (in name order) that has one, as when the files were read in turn.
TEST(H5Child, TheFirstBadFileOfADirectoryIsTheOneReported) {
  const std::string dir = TmpPath("two_bad");
  ::mkdir(dir.c_str(), 0755);
  WriteFixtureFile(dir + "/a.h5", Sample());
  std::ofstream(dir + "/b.h5") << "not hdf5";
  std::ofstream(dir + "/c.h5") << "not hdf5 either";
  try {
    ReadFixtureDir(dir);
    ADD_FAILURE() << "a directory with two bad files was read";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/b.h5: not an HDF5 file (or truncated before its superblock)");
  }
  std::remove((dir + "/b.h5").c_str());
  std::remove((dir + "/c.h5").c_str());
  EXPECT_EQ(ReadFixtureDir(dir).at(0).cases.size(), 1u);
}

// kl.h5 with the attack's third flip (h5_structure.attack_flips, as in
// reader_bad_input_test): a string's size in a global heap gains 2^19 and libhdf5 1.10
// copies that many bytes into the string's buffer. This process goes on.
TEST(H5Child, ACrashInsideLibhdf5IsBadInputNamingTheFile) {
  const auto flips = KlAttackFlips();
  ASSERT_GE(flips.size(), 3u) << "no attack flips for kl.h5 in the runfiles";
  const std::string path = CopyOf(BundledGoldens() + "/kl.h5", "kl_flipped.h5");
  FlipBit(path, flips[2].first, flips[2].second);
  try {
    ReadFixtureFile(path);
    ADD_FAILURE() << "the damaged file was read";
  } catch (const ReaderCrashed& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": the HDF5 library crashed reading this file (", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("damaged or not written by h5py/HDF5"), std::string::npos) << e.what();
  }
  // The same file once more, now through a directory beside a good one.
  const std::string dir = TmpPath("with_crash");
  ::mkdir(dir.c_str(), 0755);
  WriteFixtureFile(dir + "/a.h5", Sample());
  std::rename(path.c_str(), (dir + "/kl.h5").c_str());
  EXPECT_THROW(ReadFixtureDir(dir), ReaderCrashed);
}

}  // namespace
}  // namespace verlconf::fixtures
