#include "oracle/core/json.h"

#include <cmath>
#include <cstdio>

#include "oracle/core/text.h"

namespace verlconf {

std::string JsonEscape(const std::string& text) {
  // Whatever the text came from, the document stays valid UTF-8 JSON (text.h).
  const std::string s = PrintableText(text);
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

void JsonWriter::Sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::Key(const std::string& k) {
  Sep();
  out_ += JsonEscape(k) + ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(const std::string& s) {
  Sep();
  out_ += JsonEscape(s);
  return *this;
}
JsonWriter& JsonWriter::Int(int64_t i) {
  Sep();
  out_ += std::to_string(i);
  return *this;
}
JsonWriter& JsonWriter::Bool(bool b) {
  Sep();
  out_ += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::Null() {
  Sep();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Raw(const std::string& json) {
  Sep();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::Number(double d) {
  Sep();
  if (!std::isfinite(d)) {
    out_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    out_ += buf;
  }
  return *this;
}

std::string PrettyJson(const std::string& json) {
  std::string o;
  int depth = 0;
  bool in_string = false;
  auto newline = [&] { o += '\n' + std::string(2 * static_cast<size_t>(depth), ' '); };
  for (size_t k = 0; k < json.size(); ++k) {
    const char c = json[k];
    if (in_string) {
      o += c;
      if (c == '\\' && k + 1 < json.size()) {
        o += json[++k];  // an escaped character, never the string's end
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        o += c;
        break;
      case '{':
      case '[': {
        const char close = c == '{' ? '}' : ']';
        if (k + 1 < json.size() && json[k + 1] == close) {  // empty: {} or []
          o += c;
          o += close;
          ++k;
          break;
        }
        o += c;
        ++depth;
        newline();
        break;
      }
      case '}':
      case ']':
        --depth;
        newline();
        o += c;
        break;
      case ',':
        o += c;
        newline();
        break;
      case ':': o += ": "; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace verlconf
