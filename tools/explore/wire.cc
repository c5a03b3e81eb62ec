#include "tools/explore/wire.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"

namespace verlconf::explore {
namespace {

class Parser {
 public:
  Parser(const std::string& t, const std::string& what) : t_(t), what_(what) {}

  Json Document() {
    Json j = Value();
    Space();
    if (p_ != t_.size()) Fail("text after the JSON value");
    return j;
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const {
    throw BadInput(what_ + ": malformed JSON at offset " + std::to_string(p_) + ": " + why);
  }
  void Space() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }
  bool Literal(const char* word) {
    const size_t n = std::strlen(word);
    if (t_.compare(p_, n, word) != 0) return false;
    p_ += n;
    return true;
  }
  Json Value() {
    Space();
    if (p_ >= t_.size()) Fail("unexpected end");
    Json j;
    const char c = t_[p_];
    if (c == '{') return Object();
    if (c == '[') return Array();
    if (c == '"') {
      j.kind = Json::Kind::kString;
      j.text = String();
      return j;
    }
    if (Literal("null")) return j;
    j.kind = Json::Kind::kBool;
    if (Literal("true")) return j.boolean = true, j;
    if (Literal("false")) return j;
    j.kind = Json::Kind::kNumber;
    if (Literal("NaN")) return j.number = std::nan(""), j;
    if (Literal("Infinity")) return j.number = HUGE_VAL, j;
    if (Literal("-Infinity")) return j.number = -HUGE_VAL, j;
    const size_t start = p_;
    while (p_ < t_.size() && std::strchr("+-0123456789.eE", t_[p_])) ++p_;
    if (p_ == start) Fail(std::string("unexpected character '") + c + "'");
    const std::string num = t_.substr(start, p_ - start);
    j.integral = num.find_first_of(".eE") == std::string::npos;
    const auto r = std::from_chars(num.data(), num.data() + num.size(), j.number);
    if (r.ec != std::errc() || r.ptr != num.data() + num.size()) Fail("bad number '" + num + "'");
    return j;
  }
  Json Array() {
    Json j;
    j.kind = Json::Kind::kArray;
    ++p_;
    Space();
    if (p_ < t_.size() && t_[p_] == ']') return ++p_, j;
    for (;;) {
      j.items.push_back(Value());
      Space();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') return ++p_, j;
      Fail("expected ',' or ']'");
    }
  }
  Json Object() {
    Json j;
    j.kind = Json::Kind::kObject;
    ++p_;
    Space();
    if (p_ < t_.size() && t_[p_] == '}') return ++p_, j;
    for (;;) {
      Space();
      if (p_ >= t_.size() || t_[p_] != '"') Fail("expected a member name");
      std::string key = String();
      Space();
      if (p_ >= t_.size() || t_[p_] != ':') Fail("expected ':'");
      ++p_;
      j.members[key] = Value();
      Space();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') return ++p_, j;
      Fail("expected ',' or '}'");
    }
  }
  static void Utf8(std::string& o, unsigned cp) {
    if (cp < 0x80) {
      o += static_cast<char>(cp);
    } else if (cp < 0x800) {
      o += static_cast<char>(0xC0 | (cp >> 6));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      o += static_cast<char>(0xE0 | (cp >> 12));
      o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      o += static_cast<char>(0xF0 | (cp >> 18));
      o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      o += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  unsigned Hex4() {
    if (p_ + 4 > t_.size()) Fail("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = t_[p_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<unsigned>(h - 'A' + 10);
      else
        Fail("bad \\u escape");
    }
    return v;
  }
  std::string String() {
    ++p_;  // the opening quote
    std::string o;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (c != '\\') {
        o += c;
        continue;
      }
      if (p_ >= t_.size()) Fail("unterminated escape");
      c = t_[p_++];
      switch (c) {
        case 'n': o += '\n'; break;
        case 't': o += '\t'; break;
        case 'r': o += '\r'; break;
        case 'b': o += '\b'; break;
        case 'f': o += '\f'; break;
        case 'u': {
          unsigned cp = Hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(p_, 2, "\\u") == 0) {
            p_ += 2;
            const unsigned lo = Hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          Utf8(o, cp);
          break;
        }
        default: o += c;  // \" \\ \/
      }
    }
    if (p_ >= t_.size()) Fail("unterminated string");
    ++p_;
    return o;
  }

  const std::string& t_;
  const std::string& what_;
  size_t p_ = 0;
};

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

const Json* Json::Find(const std::string& key) const {
  const auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

Json ParseJson(const std::string& text, const std::string& what) { return Parser(text, what).Document(); }

std::string Base64Encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string Base64Decode(const std::string& text, const std::string& what) {
  static const auto table = [] {
    std::vector<int> t(256, -1);
    for (int k = 0; k < 64; ++k) t[static_cast<unsigned char>(kAlphabet[k])] = k;
    return t;
  }();
  if (text.size() % 4 != 0) throw BadInput(what + ": base64 text of a length that is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + static_cast<size_t>(k)];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      v[k] = table[static_cast<unsigned char>(c)];
      if (v[k] < 0 || pad) throw BadInput(what + ": a character outside base64's alphabet");
    }
    const unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                       (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    out += static_cast<char>((n >> 16) & 255);
    if (pad < 2) out += static_cast<char>((n >> 8) & 255);
    if (pad < 1) out += static_cast<char>(n & 255);
  }
  return out;
}

void AppendArray(std::string& out, const Array& a) {
  std::string bytes;
  for (double v : a.data) {
    if (a.dtype == DType::kFloat32) {
      const float f = static_cast<float>(v);
      bytes.append(reinterpret_cast<const char*>(&f), sizeof f);
    } else if (a.dtype == DType::kInt64) {
      const auto i = static_cast<int64_t>(v);
      bytes.append(reinterpret_cast<const char*>(&i), sizeof i);
    } else {
      bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  out += "{\"dtype\":\"";
  out += DTypeName(a.dtype);
  out += "\",\"shape\":[";
  for (size_t k = 0; k < a.shape.size(); ++k) out += (k ? "," : "") + std::to_string(a.shape[k]);
  out += "],\"b64\":\"" + Base64Encode(bytes) + "\"}";
}

Array ReadArray(const Json& j, const std::string& what) {
  const Json* dtype = j.Find("dtype");
  const Json* shape = j.Find("shape");
  const Json* b64 = j.Find("b64");
  if (j.kind != Json::Kind::kObject || !dtype || !shape || !b64 || shape->kind != Json::Kind::kArray)
    throw BadInput(what + ": not an array object {dtype, shape, b64}");
  Array a;
  if (!ParseDType(dtype->text, &a.dtype)) throw BadInput(what + ": unknown dtype '" + dtype->text + "'");
  for (const Json& d : shape->items) {
    if (!d.integral || d.number < 0) throw BadInput(what + ": a shape entry that is not a non-negative integer");
    a.shape.push_back(static_cast<int64_t>(d.number));
  }
  const std::string bytes = Base64Decode(b64->text, what);
  const size_t width = a.dtype == DType::kFloat32 ? 4 : 8;
  const auto n = static_cast<size_t>(Array::NumElements(a.shape));
  if (bytes.size() != n * width)
    throw BadInput(what + ": " + std::to_string(bytes.size()) + " bytes for shape " + a.ShapeString() + " of " +
                   DTypeName(a.dtype));
  a.data.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const char* p = bytes.data() + k * width;
    if (a.dtype == DType::kFloat32) {
      float f;
      std::memcpy(&f, p, sizeof f);
      a.data[k] = f;
    } else if (a.dtype == DType::kInt64) {
      int64_t i;
      std::memcpy(&i, p, sizeof i);
      a.data[k] = static_cast<double>(i);
    } else {
      std::memcpy(&a.data[k], p, sizeof(double));
    }
  }
  return a;
}

void AppendConfigValue(std::string& out, const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v)) {
    out += "null";
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) {
      out += std::isnan(*d) ? "NaN" : (*d > 0 ? "Infinity" : "-Infinity");
      return;
    }
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, *d);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    out += s;
  } else {
    out += JsonEscape(std::get<std::string>(v));
  }
}

}  // namespace verlconf::explore
