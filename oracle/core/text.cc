#include "oracle/core/text.h"

#include <cstdio>

namespace verlconf {
namespace {

// Length of the UTF-8 sequence starting at s[i], 0 if it is not well-formed (overlong
// forms, surrogates and code points beyond U+10FFFF included).
size_t Utf8Length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

void AppendBytes(std::string& out, const std::string& s, size_t at, size_t n) {
  for (size_t k = at; k < at + n; ++k) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[k]));
    out += buf;
  }
}

}  // namespace

bool IsValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool IsCleanText(const std::string& s, bool allow_line_breaks) {
  if (!IsValidUtf8(s)) return false;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7F) continue;
    if (allow_line_breaks && (c == '\n' || c == '\r' || c == '\t')) continue;
    return false;
  }
  return true;
}

std::string PrintableText(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    const bool control = n == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F);
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    const bool bom = n == 3 && s.compare(i, 3, "\xEF\xBB\xBF") == 0;
    if (n == 0) {
      AppendBytes(out, s, i, 1);
      ++i;
      continue;
    }
    if (control || c1 || bom)
      AppendBytes(out, s, i, n);
    else
      out.append(s, i, n);
    i += n;
  }
  return out;
}

}  // namespace verlconf
