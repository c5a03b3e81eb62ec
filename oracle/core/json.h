// A minimal streaming JSON writer: the CLI's machine-readable outputs (`list --json`,
// `spec --json`) need nothing more, and a dependency would be one more system library
// to wrap offline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace verlconf {

class JsonWriter {
 public:
  JsonWriter& BeginObject() {
    Sep();
    out_ += '{';
    first_.push_back(true);
    return *this;
  }
  JsonWriter& EndObject() {
    out_ += '}';
    first_.pop_back();
    return *this;
  }
  JsonWriter& BeginArray() {
    Sep();
    out_ += '[';
    first_.push_back(true);
    return *this;
  }
  JsonWriter& EndArray() {
    out_ += ']';
    first_.pop_back();
    return *this;
  }
  JsonWriter& Key(const std::string& k);
  JsonWriter& String(const std::string& s);
  JsonWriter& Number(double d);  // non-finite values become null (JSON has no NaN)
  JsonWriter& Int(int64_t i);
  JsonWriter& Bool(bool b);
  JsonWriter& Null();
  // A value written elsewhere (a nested document), inserted as it is.
  JsonWriter& Raw(const std::string& json);
  const std::string& str() const { return out_; }

 private:
  void Sep();
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

std::string JsonEscape(const std::string& s);

// `json` (as JsonWriter writes it: no whitespace outside strings) indented by two spaces
// per level, one member or element a line; the same document.
std::string PrettyJson(const std::string& json);

}  // namespace verlconf
