#include "oracle/core/case.h"

#include <cmath>

#include "oracle/core/errors.h"

namespace verlconf {

std::string Case::Where() const {
  std::string w = file.empty() ? std::string("<memory>") : file;
  return w + ":/" + function + "/" + name;
}

const Array& Case::Input(const std::string& n) const {
  auto it = inputs.find(n);
  if (it == inputs.end()) throw BadInput(Where() + ": missing dataset inputs/" + n);
  return it->second;
}

const Array* Case::OptionalInput(const std::string& n) const {
  auto it = inputs.find(n);
  return it == inputs.end() ? nullptr : &it->second;
}

const ConfigValue* Config::Find(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end() || std::holds_alternative<std::monostate>(it->second)) return nullptr;
  return &it->second;
}

bool Config::Has(const std::string& key) const { return Find(key) != nullptr; }

void Config::Fail(const std::string& key, const std::string& what) const {
  throw BadInput(where_ + ": attribute cfg." + key + ": " + what);
}

std::optional<double> Config::OptionalDouble(const std::string& key) const {
  const ConfigValue* v = Find(key);
  if (!v) return std::nullopt;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  Fail(key, "expected a number, got a string");
}

double Config::Double(const std::string& key, double fallback) const {
  return OptionalDouble(key).value_or(fallback);
}

std::optional<int64_t> Config::OptionalInt(const std::string& key) const {
  const ConfigValue* v = Find(key);
  if (!v) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(v)) return *i;
  // A float that is an exact integer is what some writers produce for ints.
  if (auto* d = std::get_if<double>(v)) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 9.0e15)
      return static_cast<int64_t>(*d);
    Fail(key, "expected an integer, got " + std::to_string(*d));
  }
  Fail(key, "expected an integer, got a string");
}

int64_t Config::Int(const std::string& key, int64_t fallback) const {
  return OptionalInt(key).value_or(fallback);
}

bool Config::Bool(const std::string& key, bool fallback) const {
  auto i = OptionalInt(key);
  if (!i) return fallback;
  if (*i != 0 && *i != 1) Fail(key, "expected a boolean (0 or 1), got " + std::to_string(*i));
  return *i == 1;
}

std::string Config::String(const std::string& key, const std::string& fallback) const {
  const ConfigValue* v = Find(key);
  if (!v) return fallback;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  Fail(key, "expected a string");
}

}  // namespace verlconf
