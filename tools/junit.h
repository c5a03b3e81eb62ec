// JUnit XML for CI: one testsuite per function, one testcase per case.
#pragma once

#include <string>
#include <vector>

#include "oracle/check.h"

namespace verlconf::tools {

// Written atomically (temporary file, then rename).
void WriteJunit(const std::string& path, const std::string& suite_prefix, const std::vector<CaseReport>& reports);

// Writes `content` to `path` through a temporary file and rename, so that an
// interrupted run never leaves a half-written file behind.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace verlconf::tools
