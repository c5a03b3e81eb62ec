#include "oracle/core/case.h"

#include <cmath>
#include <stdexcept>

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

void Config::Set(const std::string& key, ConfigValue v) {
  if (std::holds_alternative<std::monostate>(v)) resolved_for_.clear();
  values_[key] = std::move(v);
}

void Config::Erase(const std::string& key) {
  values_.erase(key);
  resolved_for_.clear();
}

const ConfigValue* Config::Find(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end() || std::holds_alternative<std::monostate>(it->second)) return nullptr;
  return &it->second;
}

const ConfigValue* Config::Lookup(const std::string& key, bool need_resolved) const {
  if (resolved_for_.empty()) {
    if (need_resolved)
      throw std::logic_error(where_ + ": cfg." + key +
                             " read from a config not resolved against its spec (no verl default to use)");
    return Find(key);
  }
  auto it = values_.find(key);
  if (it == values_.end())
    throw std::logic_error(where_ + ": cfg." + key + " is not a config key of " + resolved_for_ +
                           " (the registry entry reads a key its spec does not declare)");
  return std::holds_alternative<std::monostate>(it->second) ? nullptr : &it->second;
}

bool Config::Has(const std::string& key) const { return Find(key) != nullptr; }

void Config::Fail(const std::string& key, const std::string& what) const {
  throw BadInput(where_ + ": attribute cfg." + key + ": " + what);
}

void Config::Required(const std::string& key, const char* what) const {
  Fail(key, std::string("None where verl needs ") + what + " (verl has no default for it)");
}

namespace {

std::optional<double> AsDouble(const ConfigValue* v) {
  if (!v) return std::nullopt;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}

}  // namespace

std::optional<double> Config::OptionalDouble(const std::string& key) const {
  const ConfigValue* v = Lookup(key, false);
  if (!v) return std::nullopt;
  if (auto d = AsDouble(v)) return d;
  Fail(key, "expected a number, got a string");
}

double Config::Double(const std::string& key) const {
  const ConfigValue* v = Lookup(key, true);
  if (!v) Required(key, "a number");
  if (auto d = AsDouble(v)) return *d;
  Fail(key, "expected a number, got a string");
}

double Config::Double(const std::string& key, double fallback) const {
  const ConfigValue* v = Find(key);
  if (!v) return fallback;
  if (auto d = AsDouble(v)) return *d;
  Fail(key, "expected a number, got a string");
}

int64_t Config::IntOf(const std::string& key, const ConfigValue& v) const {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 9.0e15) return static_cast<int64_t>(*d);
    Fail(key, "expected an integer, got " + std::to_string(*d));
  }
  Fail(key, "expected an integer, got a string");
}

bool Config::BoolOf(const std::string& key, const ConfigValue& v) const {
  const int64_t i = IntOf(key, v);
  if (i != 0 && i != 1) Fail(key, "expected a boolean (0 or 1), got " + std::to_string(i));
  return i == 1;
}

std::optional<int64_t> Config::OptionalInt(const std::string& key) const {
  const ConfigValue* v = Lookup(key, false);
  if (!v) return std::nullopt;
  return IntOf(key, *v);
}

int64_t Config::Int(const std::string& key) const {
  const ConfigValue* v = Lookup(key, true);
  if (!v) Required(key, "an integer");
  return IntOf(key, *v);
}

int64_t Config::Int(const std::string& key, int64_t fallback) const {
  const ConfigValue* v = Find(key);
  return v ? IntOf(key, *v) : fallback;
}

std::optional<bool> Config::OptionalBool(const std::string& key) const {
  const ConfigValue* v = Lookup(key, false);
  if (!v) return std::nullopt;
  return BoolOf(key, *v);
}

bool Config::Bool(const std::string& key) const {
  const ConfigValue* v = Lookup(key, true);
  if (!v) Required(key, "a boolean");
  return BoolOf(key, *v);
}

bool Config::Bool(const std::string& key, bool fallback) const {
  const ConfigValue* v = Find(key);
  return v ? BoolOf(key, *v) : fallback;
}

std::optional<std::string> Config::OptionalString(const std::string& key) const {
  const ConfigValue* v = Lookup(key, false);
  if (!v) return std::nullopt;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  Fail(key, "expected a string");
}

std::string Config::String(const std::string& key) const {
  if (!Lookup(key, true)) Required(key, "a string");
  return *OptionalString(key);
}

std::string Config::String(const std::string& key, const std::string& fallback) const {
  const ConfigValue* v = Find(key);
  if (!v) return fallback;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  Fail(key, "expected a string");
}

const ConfigValue& Config::Value(const std::string& key) const {
  static const ConfigValue kNone = std::monostate{};
  const ConfigValue* v = Lookup(key, true);
  return v ? *v : kNone;
}

}  // namespace verlconf
