"""cuda_family: a CUDA family folder as one library of registry entries.

Every family folder holds the same kind of sources: templates over the Thrust execution
policy (*.cuh), the entries that register them into the cuda and cuda-host slots
(spec*.cu, plus what they share), and so one target serves each (nvcc's build and its
host copy, cuda_library in third_party/cuda/cuda.bzl). A new file in the folder needs no
BUILD edit; a family that starts using another family's templates or oracle library
names it here.
"""

load("//third_party/cuda:cuda.bzl", "cuda_library")

# What every entry reads: buffers and device detection, RunEntry and the registration,
# the case and the registry's types.
_ENTRY_DEPS = [
    "//cuda_impl/core:device",
    "//cuda_impl/core:system",
    "//oracle/core",
    "//oracle/core:spec",
]

def cuda_family(name, oracle_deps, cuda_deps = [], exclude = []):
    """The CUDA entries of the family folder `name`: its .cu, .cuh and .h files.

    alwayslink: nothing references the registrations by name.

    Args:
      name: the family (the folder's name, as oracle/<name>).
      oracle_deps: the oracle libraries the entries call (readers, checks, specs).
      cuda_deps: other CUDA families whose templates this one runs.
      exclude: files of the folder built by a target of their own (a hand-written kernel).
    """
    cuda_library(
        name = name,
        srcs = native.glob(["*.cu"], exclude = exclude),
        hdrs = native.glob(["*.cuh", "*.h"], exclude = exclude),
        alwayslink = True,
        cuda_deps = cuda_deps,
        deps = _ENTRY_DEPS + oracle_deps,
        visibility = ["//visibility:public"],
    )

    # The folder's sources as files, for the tests that read them (core:no_raw_thrust_test).
    native.filegroup(
        name = "sources",
        srcs = native.glob(["*.cu", "*.cuh", "*.h", "*.cc"]),
        visibility = ["//visibility:public"],
    )
