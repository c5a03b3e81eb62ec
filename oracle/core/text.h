// Text that comes from files (a baseline's reasons, an adapter's messages, golden
// attributes) on its way to the outputs: checked where it is read, and made safe for a
// terminal, JSON and XML in one place where it is written.
#pragma once

#include <string>

namespace verlconf {

bool IsValidUtf8(const std::string& s);
// Valid UTF-8 without control characters (C0, DEL); `allow_line_breaks` also accepts
// \n, \r and \t (multi-line values such as verl's error messages).
bool IsCleanText(const std::string& s, bool allow_line_breaks);

// `s` as every output format can carry it: valid UTF-8 passes unchanged, except control
// characters (C0 but \n and \t, DEL, C1) and the byte-order mark U+FEFF, which are written
// as the text \xNN per byte, as is every byte of a sequence that is not UTF-8. An escape
// sequence never reaches a terminal, and JSON and XML stay well-formed.
std::string PrintableText(const std::string& s);

}  // namespace verlconf
