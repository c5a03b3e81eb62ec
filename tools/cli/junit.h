// JUnit XML for CI: one testsuite per function, one testcase per case.
#pragma once

#include <string>
#include <vector>

#include "oracle/judge/judge.h"

namespace verlconf::tools {

// Written with WriteFileAtomically (tools/cli/report_file.h).
void WriteJunit(const std::string& path, const std::string& suite_prefix, const std::vector<CaseReport>& reports);

}  // namespace verlconf::tools
