// Proves @hdf5 (statically linked C API) can write and read back a dataset.
#include <hdf5.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

TEST(Hdf5Smoke, WriteThenReadDataset) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  const std::string path = std::string(tmp) + "/smoke.h5";
  const std::vector<double> want = {1.0, -2.5, 3.25, 1e-300};

  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  hsize_t dims[1] = {want.size()};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  // Deflate-compressed and chunked, so the static zlib link is exercised too.
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ASSERT_GE(H5Pset_chunk(dcpl, 1, dims), 0);
  ASSERT_GE(H5Pset_deflate(dcpl, 6), 0);
  hid_t dset = H5Dcreate2(file, "/x", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl,
                          H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  ASSERT_GE(H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                     want.data()),
            0);
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);

  file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  dset = H5Dopen2(file, "/x", H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  std::vector<double> got(want.size());
  ASSERT_GE(H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                    got.data()),
            0);
  H5Dclose(dset);
  H5Fclose(file);
  EXPECT_EQ(got, want);
}
