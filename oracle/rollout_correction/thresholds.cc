// The text side of rollout correction. Thresholds and option lists reach verl as Python
// values (a number or a string), so reading them means reproducing Python's float(),
// repr() and str.strip(), and verl's messages quote them back. The config checks are
// these same parsers, run before any tensor is looked at.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "oracle/rollout_correction/internal.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::oracle {
using namespace rollout_internal;
namespace {

bool IsPySpace(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v' ||
         (ch >= '\x1c' && ch <= '\x1f');
}

// Python's str.strip() for ASCII text.
std::string Strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsPySpace(s[b])) ++b;
  while (e > b && IsPySpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t k = 0; k <= s.size(); ++k)
    if (k == s.size() || s[k] == sep) {
      parts.push_back(s.substr(start, k - start));
      start = k + 1;
    }
  return parts;
}

// Python's repr of a str, for messages: 'abc'.
std::string PyQuote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

// ------------------------------------------------------------------ Python number text

std::optional<double> PyFloatFromString(const std::string& s) {
  const std::string t = Strip(s);
  if (t.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    ++i;
  }
  std::string word = t.substr(i);
  for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (word == "inf" || word == "infinity") return negative ? -kInf : kInf;
  if (word == "nan") return kNaN;
  std::string clean = negative ? "-" : "";
  // digitpart: digit (["_"] digit)*
  auto digits = [&](size_t& k) {
    if (k >= t.size() || !std::isdigit(static_cast<unsigned char>(t[k]))) return false;
    clean += t[k++];
    while (k < t.size()) {
      if (std::isdigit(static_cast<unsigned char>(t[k]))) {
        clean += t[k++];
      } else if (t[k] == '_' && k + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[k + 1]))) {
        ++k;
      } else {
        break;
      }
    }
    return true;
  };
  const bool whole = digits(i);
  bool fraction = false;
  if (i < t.size() && t[i] == '.') {
    clean += '.';
    ++i;
    fraction = digits(i);
  }
  if (!whole && !fraction) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    clean += 'e';
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
    if (!digits(i)) return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::string PyFloatRepr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0.0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s(buf);
  const bool negative = s[0] == '-';
  if (negative) s = s.substr(1);
  const size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent > -5 && exponent < 16) {  // Python: fixed notation for 1e-4 <= |x| < 1e16
    if (exponent >= 0) {
      std::string whole = digits.substr(0, std::min<size_t>(digits.size(), static_cast<size_t>(exponent) + 1));
      while (whole.size() < static_cast<size_t>(exponent) + 1) whole += '0';
      std::string frac =
          digits.size() > static_cast<size_t>(exponent) + 1 ? digits.substr(static_cast<size_t>(exponent) + 1) : "0";
      out = whole + "." + frac;
    } else {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ex;
  }
  return negative ? "-" + out : out;
}

std::string PyStr(const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "None";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return PyFloatRepr(*d);
  return std::get<std::string>(v);
}

namespace rollout_internal {
std::string DescribeValue(const ConfigValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return PyStr(v);
}
}  // namespace rollout_internal

// ------------------------------------------------------------------ threshold parsers

// verl: _parse_rollout_is_threshold.
IsThreshold ParseRolloutIsThreshold(const ConfigValue& spec) {
  IsThreshold th;
  if (const auto* i = std::get_if<int64_t>(&spec)) {
    th.upper = static_cast<double>(*i);
  } else if (const auto* d = std::get_if<double>(&spec)) {
    th.upper = *d;
  } else if (const auto* str = std::get_if<std::string>(&spec)) {
    const std::string s = Strip(*str);
    if (s.empty()) throw VerlError("ValueError", "rollout_is_threshold must not be an empty string.");
    const std::string invalid = "Invalid rollout_is_threshold " + PyQuote(*str) + ".";
    const size_t us = s.find('_');
    if (us != std::string::npos) {
      const auto lower = PyFloatFromString(s.substr(0, us));
      const auto upper = PyFloatFromString(s.substr(us + 1));
      if (!lower || !upper) throw VerlError("ValueError", invalid);
      th.lower = *lower;
      th.upper = *upper;
    } else {
      const auto upper = PyFloatFromString(s);
      if (!upper) throw VerlError("ValueError", invalid);
      th.upper = *upper;
    }
  } else {
    throw VerlError("TypeError", "rollout_is_threshold must be a float or a string threshold specification.");
  }
  if (th.upper <= 0)
    throw VerlError("ValueError",
                    "rollout_is_threshold upper bound must be positive, got " + PyFloatRepr(th.upper) + ".");
  if (th.lower) {
    if (*th.lower <= 0)
      throw VerlError("ValueError",
                      "rollout_is_threshold lower bound must be positive, got " + PyFloatRepr(*th.lower) + ".");
    if (*th.lower > th.upper) throw VerlError("ValueError", "rollout_is_threshold lower bound must be <= upper bound.");
  }
  return th;
}

bool IsRolloutRsOption(const std::string& name) {
  for (const char* o : kRolloutRsOptions)
    if (name == o) return true;
  return false;
}

std::vector<std::string> ParseRolloutRsOptions(const std::string& rollout_rs) {
  std::vector<std::string> modes;
  for (const std::string& part : Split(rollout_rs, ',')) {
    const std::string opt = Strip(part);
    if (!opt.empty()) modes.push_back(opt);
  }
  if (modes.empty()) throw VerlError("ValueError", "rollout_rs must contain at least one valid option.");
  std::vector<std::string> options;
  std::set<std::string> seen;
  for (const std::string& opt : modes) {
    if (!IsRolloutRsOption(opt)) {
      std::vector<std::string> sorted(std::begin(kRolloutRsOptions), std::end(kRolloutRsOptions));
      std::sort(sorted.begin(), sorted.end());
      std::string all;
      for (const auto& o : sorted) all += (all.empty() ? "" : ", ") + PyQuote(o);
      throw VerlError("ValueError", "Invalid rollout_rs option: " + opt + ". Must be one of [" + all + "].");
    }
    if (seen.insert(opt).second) options.push_back(opt);
  }
  return options;
}

namespace {
// The entries verl splits a spec into: str() of a number, or a string's stripped
// non-empty comma-separated parts.
std::vector<std::string> RsThresholdEntries(const ConfigValue& spec) {
  std::vector<std::string> raw;
  if (std::holds_alternative<int64_t>(spec) || std::holds_alternative<double>(spec)) {
    raw.push_back(PyStr(spec));  // str(threshold_spec)
  } else if (const auto* s = std::get_if<std::string>(&spec)) {
    for (const std::string& part : Split(*s, ',')) {
      const std::string p = Strip(part);
      if (!p.empty()) raw.push_back(p);
    }
  }
  return raw;
}
}  // namespace

int CountRsThresholdEntries(const ConfigValue& spec) { return static_cast<int>(RsThresholdEntries(spec).size()); }

// verl: _parse_rollout_rs_thresholds.
std::vector<std::pair<std::string, RsThreshold>> ParseRolloutRsThresholds(const std::vector<std::string>& options,
                                                                          const ConfigValue& spec) {
  if (std::holds_alternative<std::monostate>(spec))
    throw VerlError("ValueError", "rollout_rs_threshold must be provided for rejection sampling.");
  std::vector<std::string> raw = RsThresholdEntries(spec);
  if (raw.empty()) throw VerlError("ValueError", "rollout_rs_threshold must contain at least one threshold value.");
  if (raw.size() != 1 && raw.size() != options.size())
    throw VerlError("ValueError",
                    "rollout_rs_threshold expects either one threshold shared by all options or exactly " +
                        std::to_string(options.size()) + " thresholds to match the provided rollout_rs options.");
  if (raw.size() == 1 && options.size() > 1) raw.assign(options.size(), raw[0]);

  std::vector<std::pair<std::string, RsThreshold>> out;
  for (size_t k = 0; k < options.size(); ++k) {
    const std::string& option = options[k];
    const std::string& entry = raw[k];
    const std::string invalid = "Invalid numeric threshold " + PyQuote(entry) + " for option " + PyQuote(option) + ".";
    RsThreshold th;
    if (EndsWith(option, "k1")) {
      std::optional<double> lower, upper;
      const size_t us = entry.find('_');
      if (us != std::string::npos) {
        lower = PyFloatFromString(entry.substr(0, us));
        upper = PyFloatFromString(entry.substr(us + 1));
      } else {
        // lower_str = str(1.0 / float(upper_str)), outside verl's try block: Python's own
        // errors surface (ValueError for text, ZeroDivisionError for a zero bound).
        upper = PyFloatFromString(entry);
        if (!upper) throw VerlError("ValueError", "could not convert string to float: " + PyQuote(entry));
        lower = PyFloatDivide(1.0, *upper);  // repr round-trips exactly
      }
      if (!lower || !upper) throw VerlError("ValueError", invalid);
      if (*lower <= 0 || *upper <= 0)
        throw VerlError("ValueError",
                        "Thresholds for option " + PyQuote(option) + " must be positive, got " + entry + ".");
      if (*lower > *upper)
        throw VerlError("ValueError",
                        "Thresholds for option " + PyQuote(option) + " must be lower <= upper, got " + entry + ".");
      th.lower = *lower;
      th.upper = *upper;
    } else {
      if (entry.find('_') != std::string::npos)
        throw VerlError("ValueError", "rollout_rs_threshold for option " + PyQuote(option) +
                                          " must provide a single upper bound without '_'. Received " + PyQuote(entry) +
                                          ".");
      const auto upper = PyFloatFromString(entry);
      if (!upper) throw VerlError("ValueError", invalid);
      if (*upper <= 0)
        throw VerlError("ValueError",
                        "Threshold for option " + PyQuote(option) + " must be positive, got " + entry + ".");
      th.upper = *upper;
    }
    out.emplace_back(option, th);
  }
  return out;
}

// ------------------------------------------------------------------ config checks

ConfigRefusal CheckIsConfig(const ConfigValue& rollout_is, const ConfigValue& threshold) {
  const auto* level = std::get_if<std::string>(&rollout_is);
  if (!level || (*level != "token" && *level != "sequence"))
    return {"rollout_is",
            "ValueError: Invalid rollout_is: " + DescribeValue(rollout_is) + ". Must be one of {'token', 'sequence'}."};
  try {
    ParseRolloutIsThreshold(threshold);
  } catch (const VerlError& e) {
    return {"rollout_is_threshold", e.what()};
  }
  return {};
}

ConfigRefusal CheckRsConfig(const ConfigValue& rollout_rs, const ConfigValue& threshold) {
  const auto* rs = std::get_if<std::string>(&rollout_rs);
  if (!rs)
    return {"rollout_rs", "ValueError: rollout_rs must be a non-empty string (comma separated for multiple options)."};
  if (std::holds_alternative<std::monostate>(threshold))
    return {"rollout_rs_threshold", "ValueError: rollout_rs_threshold must be provided for rejection sampling."};
  std::vector<std::string> options;
  try {
    options = ParseRolloutRsOptions(*rs);
  } catch (const VerlError& e) {
    return {"rollout_rs", e.what()};
  }
  try {
    ParseRolloutRsThresholds(options, threshold);
  } catch (const VerlError& e) {
    return {"rollout_rs_threshold", e.what()};
  }
  return {};
}

ConfigRefusal CheckPipelineConfig(const RolloutCorrectionSettings& s) {
  if (!std::holds_alternative<std::monostate>(s.rollout_is) &&
      !std::holds_alternative<std::monostate>(s.rollout_is_threshold)) {
    ConfigRefusal r = CheckIsConfig(s.rollout_is, s.rollout_is_threshold);
    if (!r.key.empty()) return r;
  }
  if (!std::holds_alternative<std::monostate>(s.rollout_rs)) {
    if (std::holds_alternative<std::monostate>(s.rollout_rs_threshold))
      return {"rollout_rs_threshold",
              "ValueError: rollout_rs_threshold must be explicitly provided when rollout_rs is "
              "enabled."};
    return CheckRsConfig(s.rollout_rs, s.rollout_rs_threshold);
  }
  return {};
}

void ThrowIfRefused(const Case& c, const ConfigRefusal& r, const std::string& case_key) {
  if (r.key.empty()) return;
  const std::string key = case_key.empty() ? r.key : case_key;
  const std::string noun = r.key == "rollout_is"   ? "an IS level"
                           : r.key == "rollout_rs" ? "an RS option list"
                           : r.key == "loss_type"  ? "a loss_type"
                                                   : "a threshold";
  const ConfigValue v = RawConfig(c.config, key, std::monostate{});
  const std::string text = std::holds_alternative<std::string>(v) ? PyQuote(std::get<std::string>(v)) : PyStr(v);
  throw BadInput(c.Where() + ": cfg." + key + ": " + text + " is not " + noun + " verl accepts (" + r.error +
                 "): verl raises for it, so the file did not come from verl");
}

ConfigValue RawConfig(const Config& c, const std::string& key, const ConfigValue& verl_default) {
  auto it = c.values().find(key);
  if (it == c.values().end() || std::holds_alternative<std::monostate>(it->second)) return verl_default;
  return it->second;
}

}  // namespace verlconf::oracle
