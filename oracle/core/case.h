// A fixture case as every part of verlconf sees it: what verl was called with, and
// what it returned (golden) or what an implementation returned (result).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "oracle/core/tensor.h"

namespace verlconf {

// A config value as stored in a case attribute. verl's booleans arrive as int64 0/1;
// a None is "no attribute" and reads back as std::monostate.
using ConfigValue = std::variant<std::monostate, int64_t, double, std::string>;

// Typed access to a case's config. Every getter names the case and key in its error
// so that a bad file is reported where it is, not as a crash in the oracle.
//
// Registry entries read a config that the registry has resolved against the entry's
// spec (ResolveConfig in oracle/core/function_spec.h): every key the spec declares is
// present, with verl's default (ConfigKey::verl_default) where the case has none. They
// use the one-argument getters, which know no default of their own: a key that is not
// there is a key the spec does not declare, or a read before resolution, and either is
// a spec bug (std::logic_error naming the key). A None where verl needs a value is bad
// input (BadInput).
//
// The getters with a fallback read a config as stored, outside the registry (tests that
// inspect a case, a user's implementation): an absent or None value reads as the fallback.
class Config {
 public:
  Config() = default;
  explicit Config(std::string where) : where_(std::move(where)) {}

  // Setting a key keeps a resolved config resolved, except to None: the key's default
  // (if any) then applies again, so the config is resolved anew before it is read.
  void Set(const std::string& key, ConfigValue v);
  // Removes a key (verl then uses its default); the config is resolved anew before it is read.
  void Erase(const std::string& key);
  bool Has(const std::string& key) const;  // present and not None
  const std::map<std::string, ConfigValue>& values() const { return values_; }
  void set_where(std::string w) { where_ = std::move(w); }
  // "family/name" of the spec this config was resolved against; "" when it was not.
  const std::string& resolved_for() const { return resolved_for_; }
  void set_resolved_for(std::string spec_key) { resolved_for_ = std::move(spec_key); }

  // Resolved configs (registry entries). Numbers: an int64 attribute is accepted where a
  // float is expected (h5py writes Python ints that way), never the other way round.
  double Double(const std::string& key) const;
  int64_t Int(const std::string& key) const;
  bool Bool(const std::string& key) const;
  std::string String(const std::string& key) const;
  // None reads as nullopt. On a config as stored, an absent key is None too.
  std::optional<double> OptionalDouble(const std::string& key) const;
  std::optional<int64_t> OptionalInt(const std::string& key) const;
  std::optional<bool> OptionalBool(const std::string& key) const;
  std::optional<std::string> OptionalString(const std::string& key) const;
  // The value itself; std::monostate = None. Resolved configs only.
  const ConfigValue& Value(const std::string& key) const;

  // Configs as stored (outside the registry): absent or None reads as `fallback`.
  double Double(const std::string& key, double fallback) const;
  int64_t Int(const std::string& key, int64_t fallback) const;
  bool Bool(const std::string& key, bool fallback) const;
  std::string String(const std::string& key, const std::string& fallback) const;

 private:
  // The key's value, null for None or absent (a config as stored).
  const ConfigValue* Find(const std::string& key) const;
  // The key's value, null for None. On a resolved config std::logic_error if the key is
  // not there (the spec does not declare it); on one that was not resolved, too, when
  // `need_resolved` (there is no default to use), else as Find.
  const ConfigValue* Lookup(const std::string& key, bool need_resolved) const;
  // A number as an integer (a float that is an exact integer is what some writers
  // produce for ints); BadInput otherwise.
  int64_t IntOf(const std::string& key, const ConfigValue& v) const;
  bool BoolOf(const std::string& key, const ConfigValue& v) const;
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const;
  [[noreturn]] void Required(const std::string& key, const char* what) const;

  std::string where_;
  std::map<std::string, ConfigValue> values_;
  std::string resolved_for_;
};

struct Case {
  std::string file;      // path it was read from ("" when built in memory)
  std::string family;    // the file's family; with `function`, the registry key
  std::string function;  // verl's name, exactly as verl spells it
  std::string name;      // case name, unique within the function
  DType dtype = DType::kFloat64;
  int64_t seed = 0;
  std::string why;
  Config config;
  std::map<std::string, Array> inputs, outputs, grads;
  std::map<std::string, double> metrics;
  // The stored dtype of each metric dataset (goldens: float64), so that a candidate's
  // int64 or float32 metric is seen as such rather than silently widened.
  std::map<std::string, DType> metric_dtypes;
  // Stop-gradient semantics (schema 2): a fixed random projection per tensor output
  // ("<output>"), and the gradient of sum(projection * output) with respect to each
  // differentiable input ("<output>/<input>"), from verl's autograd in a golden.
  std::map<std::string, Array> projections, vjps;
  // "<ExceptionType>: <message>" when verl raised on these inputs.
  std::optional<std::string> expect_error;
  // Candidates only: the adapter declined this case, with its reason (UNSUPPORTED).
  std::optional<std::string> declined;

  // "file:/function/case", the prefix of every message about this case.
  std::string Where() const;
  // Input by name; BadInput naming the case if it is missing.
  const Array& Input(const std::string& name) const;
  const Array* OptionalInput(const std::string& name) const;
};

// What one implementation returns for a case.
// How large the sums behind an aggregated loss are. Every aggregated loss is a weighted
// sum loss = sum_k W_k L_k (oracle/aggregation/agg_loss.h); rounding in a float32 sum is
// bounded by the magnitude sum_k |W_k L_k| times ~log2(n) eps, not by |loss|: where the
// terms cancel (a loss of 0.29 out of terms whose magnitudes add to 6500), a bound
// relative to |loss| fails a correct float32 sum. The judge allows for it
// (oracle/judge/tolerance.h).
struct AggregateMagnitude {
  double abs_sum = 0.0;  // sum over the result's aggregations of sum_k |W_k L_k|
  int64_t terms = 0;     // the live terms those sums had, in all
  // sum_k |W_k| and max_k |W_k| over the live terms: how much the aggregation (and any
  // coefficient applied after it) scales a per-term error into the scalar and into each
  // element of its gradient. A mean has sum |W| = 1; a loss times kl_loss_coef 1e-3,
  // or a local micro-batch over a global token count, has much less.
  double weight_sum = 0.0;
  double weight_max = 0.0;

  // The same aggregation multiplied by `coef` (a loss coefficient applied after it).
  AggregateMagnitude Scaled(double coef) const {
    const double c = coef < 0 ? -coef : coef;
    return {abs_sum * c, terms, weight_sum * c, weight_max * c};
  }
};

struct Result {
  // The stored results of a case (a golden, or a candidate's file).
  static Result Of(const Case& c) {
    Result r;
    r.outputs = c.outputs;
    r.grads = c.grads;
    r.metrics = c.metrics;
    r.vjps = c.vjps;
    return r;
  }

  std::map<std::string, Array> outputs, grads;
  // "<output>/<input>" -> d sum(projection * output) / d input, for the case's
  // projections (Case::projections); zero where verl detaches the output.
  std::map<std::string, Array> vjps;
  std::map<std::string, double> metrics;
  // Optional, token-shaped: 1 where the input sits so close to a discrete decision
  // (a clip bound, a clamp) that rounding in the case's dtype (the log-ratio's, or
  // an exp's last bit) may decide it the other way. The comparison reports
  // disagreements there as boundary flips instead of hiding them or failing on them.
  Array boundary;
  // metric -> the token-shaped mask that fraction counts over, where it is not the case's
  // mask input (bypass_mode counts its clip fractions over the tokens rejection sampling
  // kept). A boundary's allowance on a fraction is a share of its own mask's tokens.
  std::map<std::string, Array> fraction_masks;
  // The oracle's aggregations behind its scalar outputs; none for an implementation
  // under test (the judge reads it from the reference side only).
  AggregateMagnitude magnitude;
  // The results of the other choices the reference may equally make where it chooses
  // among options it cannot rank (kl_cov's top-k pick among covariances tied within
  // rounding): a candidate that matches one of them as a whole passes. With
  // more_alternatives there are more than are listed, and a candidate that matches none
  // of them can be neither cleared nor failed.
  std::vector<Result> alternatives;
  bool more_alternatives = false;
};

}  // namespace verlconf
