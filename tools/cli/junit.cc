#include "tools/cli/junit.h"

#include <map>
#include <sstream>

#include "oracle/core/text.h"
#include "tools/cli/report_file.h"
#include "tools/cli/version.h"

namespace verlconf::tools {
namespace {
std::string Xml(const std::string& text) {
  // Whatever the text came from, the document stays well-formed (text.h).
  const std::string s = PrintableText(text);
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default:
        // XML 1.0 has no way to carry other control characters, not even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          o += "?";
        else
          o += c;
    }
  }
  return o;
}
}  // namespace

void WriteJunit(const std::string& path, const std::string& prefix, const std::vector<CaseReport>& reports) {
  std::map<std::string, std::vector<const CaseReport*>> suites;
  for (const auto& r : reports) suites[r.function].push_back(&r);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const auto& [fn, rs] : suites) {
    int failures = 0, skipped = 0;
    for (const auto* r : rs) {
      failures += r->outcome == Outcome::kFailed;
      skipped += r->outcome != Outcome::kFailed && r->outcome != Outcome::kPassed;
    }
    x << "  <testsuite name=\"" << Xml(prefix + "." + fn) << "\" tests=\"" << rs.size() << "\" failures=\"" << failures
      << "\" skipped=\"" << skipped << "\">\n";
    x << "    <properties><property name=\"conform_revision\" value=\"" << Xml(Revision()) << "\"/></properties>\n";
    for (const auto* r : rs) {
      x << "    <testcase classname=\"" << Xml(prefix + "." + fn) << "\" name=\"" << Xml(r->case_name) << "\">";
      if (r->outcome == Outcome::kFailed) {
        x << "<failure message=\"" << Xml(r->detail) << "\">" << Xml(r->Describe()) << "</failure>";
      } else if (r->outcome != Outcome::kPassed) {
        // MISTRUSTED, UNSUPPORTED and SKIPPED are never passes: JUnit's <skipped>.
        x << "<skipped message=\"" << Xml(std::string(OutcomeName(r->outcome)) + ": " + r->detail) << "\"/>";
      } else if (r->partial) {
        // Passed on the fields provided: say which were not, so CI logs show it.
        x << "<system-out>" << Xml(r->detail) << "</system-out>";
      }
      x << "</testcase>\n";
    }
    x << "  </testsuite>\n";
  }
  x << "</testsuites>\n";
  WriteFileAtomically(path, x.str());
}

}  // namespace verlconf::tools
