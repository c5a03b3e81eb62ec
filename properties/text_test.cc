// Text from files on its way to the outputs (oracle/core/text.h): what every format can
// carry, and nothing else, whatever bytes arrive.
#include "oracle/core/text.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "oracle/core/json.h"

namespace verlconf {
namespace {

TEST(PrintableText, KeepsUtf8AndWritesEverythingElseAsBytes) {
  EXPECT_EQ(PrintableText("caf\xC3\xA9 \xE2\x82\xAC\n\ttab"), "caf\xC3\xA9 \xE2\x82\xAC\n\ttab");
  EXPECT_EQ(PrintableText("red \x1B[31m"), "red \\x1B[31m");
  EXPECT_EQ(PrintableText("caf\xE9"), "caf\\xE9");
  EXPECT_EQ(PrintableText("\xEF\xBB\xBFhead"), "\\xEF\\xBB\\xBFhead");
  EXPECT_EQ(PrintableText("c1 \xC2\x9B"), "c1 \\xC2\\x9B");
  EXPECT_EQ(PrintableText("cr\r"), "cr\\x0D");
  EXPECT_EQ(PrintableText("del\x7F"), "del\\x7F");
  EXPECT_EQ(PrintableText(std::string("nul\0!", 5)), "nul\\x00!");
}

// Any bytes: the result is valid UTF-8 without an escape character, and JSON of it too.
RC_GTEST_PROP(PrintableText, AnyBytesGiveCleanUtf8, (const std::string& bytes)) {
  const std::string t = PrintableText(bytes);
  RC_ASSERT(IsValidUtf8(t));
  RC_ASSERT(t.find('\x1B') == std::string::npos);
  RC_ASSERT(t.find("\xEF\xBB\xBF") == std::string::npos);
  const std::string j = JsonEscape(bytes);
  RC_ASSERT(IsCleanText(j, false));
  RC_ASSERT(PrintableText(t) == t);  // already clean: unchanged
}

}  // namespace
}  // namespace verlconf
