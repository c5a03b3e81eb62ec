// Which conform this is: the source revision it was built from (Bazel stamping), for
// `conform --version` and for every check report.
#pragma once

#include <string>

namespace verlconf::tools {

// Reads the revision runfile once, found from argv[0] as the bundled goldens are; call
// from main before anything asks for Revision().
void InitRevision(const char* argv0);

// `git describe --always --dirty` of the tree conform was built from; "unknown" where that
// was not a git checkout or the runfile cannot be found.
const std::string& Revision();

// How repro lines name this command, the way the user ran it: $VERLCONF_PROG where a
// wrapper sets it (the wheel's `verlconf` entry point sets "verlconf"), `bazel run
// //tools:conform --` under `bazel run` (BUILD_WORKSPACE_DIRECTORY set), else argv[0] as
// invoked. Call from main before anything asks for CommandName().
void InitCommandName(const char* argv0);
const std::string& CommandName();

}  // namespace verlconf::tools
