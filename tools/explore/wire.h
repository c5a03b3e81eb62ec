// The line protocol between conform and an adapter server (tools/harness/serve_adapter.py):
// one JSON object per line each way, arrays as their raw little-endian bytes in base64 so
// that every bit (NaN payloads, -0.0, float32 values) crosses unchanged. Only what the
// protocol uses is here: a JSON value tree, its parser and the array codec.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/tensor.h"

namespace verlconf::explore {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0.0;
  bool integral = false;  // written without a fraction or exponent (a Python int)
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json* Find(const std::string& key) const;
  bool IsNull() const { return kind == Kind::kNull; }
};

// Parses one JSON document; BadInput naming `what` and the offset on malformed text.
// Python's json module writes NaN, Infinity and -Infinity; they are accepted.
Json ParseJson(const std::string& text, const std::string& what);

std::string Base64Encode(const std::string& bytes);
// BadInput on characters outside the alphabet or a bad length.
std::string Base64Decode(const std::string& text, const std::string& what);

// {"dtype": ..., "shape": [...], "b64": ...}, appended to `out`.
void AppendArray(std::string& out, const Array& a);
// The inverse; BadInput naming `what` for an unknown dtype, a byte count that does not
// match the shape, or a missing member.
Array ReadArray(const Json& j, const std::string& what);

// A config value as JSON: an int64 as an integer, a double always with a fraction or an
// exponent (so Python reads a float, never an int), None as null.
void AppendConfigValue(std::string& out, const ConfigValue& v);

}  // namespace verlconf::explore
