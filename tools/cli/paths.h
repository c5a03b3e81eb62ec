// Where files are: user-given paths and the bundled goldens, under `bazel run`,
// `bazel test` and a plain binary alike.
#pragma once

#include <string>

namespace verlconf::tools {

inline constexpr const char* kBundledGoldens = "fixtures/verl-0.9.1";

// `bazel run` starts the tool inside its runfiles tree; a relative path the user typed
// means relative to where they typed it, which Bazel passes as BUILD_WORKING_DIRECTORY.
std::string ResolveUserPath(const std::string& path);

bool IsDirectory(const std::string& path);
// Why `p` is no regular file to read ("no such file", "a directory, not a regular file",
// "a FIFO (named pipe), not a regular file", ...); "" when it is one (through links).
std::string NotARegularFile(const std::string& p);
bool IsRegularFile(const std::string& path);  // through links

// The bundled primary golden set, found beside the binary (the wheel's layout: the binary at
// ROOT/conform, the goldens at ROOT/fixtures/verl-0.9.1), through the runfiles (bazel run /
// test) or next to the source tree (a binary run from the repository root).
std::string BundledGoldenDir(const char* argv0);

// A file or directory of this workspace (`rel`, from its root) found the same way, in that
// order; "" when none of the places has it.
std::string RunfilePath(const char* argv0, const std::string& rel);

// This binary's own path (/proc/self/exe), which `who` (a harness, the adapter server) runs
// for the registry; BadInput naming `who` when it cannot be read.
std::string SelfExecutable(const std::string& who);

}  // namespace verlconf::tools
