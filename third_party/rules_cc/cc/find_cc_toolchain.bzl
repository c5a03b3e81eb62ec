"""Same entry points as upstream rules_cc, for Starlark code that loads them."""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", _find_cpp_toolchain = "find_cpp_toolchain")

def find_cc_toolchain(ctx):
    return _find_cpp_toolchain(ctx)

find_cpp_toolchain = _find_cpp_toolchain
