// Round trip through the fixture writer and reader, and the reader's errors: each
// names the file, case and field, and none crashes.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "fixtures/h5io.h"
#include "oracle/errors.h"

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

}  // namespace
}  // namespace verlconf::fixtures
