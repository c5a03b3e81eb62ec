// What the registry says of one function: its inputs, config keys with verl's defaults,
// outputs, tolerances, generator and implementations. Every family's registry entries
// (oracle/<family>/spec*.cc) fill these in; nothing here knows any family.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/tolerance.h"

namespace verlconf {

// How an input's shape relates to the batch: B sequences x T tokens, and K reward
// components (GDPO's per-key scores: B x K, with K weights).
// kVocabLogits: B x T x V (per-token logits over a vocabulary of V).
enum class Role { kTokens, kSequences, kGroupIndex, kScalar, kComponents, kComponentWeights, kVocabLogits };
const char* RoleName(Role r);

struct InputSpec {
  std::string name;
  Role role = Role::kTokens;
  bool is_mask = false;   // must hold 0/1 values; float by verl's convention
  bool optional = false;  // may be absent (verl's None)
  std::string doc = {};   // where verl takes it from (`conform spec --json`)
  // The input whose rounding decides the function's threshold decisions (a log-prob that
  // moves a clipped ratio, a prediction that moves a value clip): the judge pushes it
  // across a boundary to find the other decision's value there. At most one per spec is
  // needed; the first one a case has is used.
  bool decides = false;
};

struct ConfigKey {
  std::string name;
  std::string type;          // "float", "int", "bool", "str"
  ConfigValue verl_default;  // std::monostate = verl's default is None
  std::string doc;
  // For "str" keys that name something verl defines (a loss_agg_mode, a KL estimator):
  // the names verl accepts. Anything else in a fixture is bad input, not a case.
  std::vector<std::string> choices = {};
  // A fixture writes None as no attribute, so an absent key is either verl's default or
  // an explicit None. For most keys None is no value verl can run with and absent means
  // the default. Where verl gives None a meaning of its own (clip_ratio_low: None =
  // clip_ratio; rollout_is_threshold: None disables IS), an absent key is None and is not
  // filled in from verl_default. `conform spec --json`: "absent_is_none".
  bool absent_is_none = false;
  // The values verl's users set, inclusive (a discount factor in [0, 1]), where the type
  // alone says too little: generated cases draw inside it. Outside it verl neither refuses
  // nor means anything (a gamma of 1.5 makes returns overflow float32).
  std::optional<std::pair<double, double>> range = std::nullopt;
  // Values verl refuses with its own error although the type allows them (a horizon of 0
  // fails verl's assertion, a KL target of 0 divides by zero): generated cases draw them
  // now and then so that a candidate's error behaviour is judged, as the goldens do.
  std::vector<ConfigValue> refused = {};
};

enum class OutputKind { kTensor, kScalar };
struct OutputSpec {
  std::string name;
  OutputKind kind = OutputKind::kTensor;
  bool discrete = false;  // compared exactly in float64; flips reported in float32
};

// A loosening of the default tolerance for one output of one function in one dtype.
// It may only loosen (the comparator enforces that) and must say why.
struct ToleranceOverride {
  std::string field;  // "outputs/<name>", "grads/<name>", "metrics/<name>" or "*"
  DType dtype;
  double rtol;
  double atol;
  std::string reason;
};

struct GenParams {
  uint64_t seed = 0;
  int64_t batch = 8;    // B
  int64_t tokens = 16;  // T
  DType dtype = DType::kFloat64;
};

using RunFn = std::function<Result(const Case&)>;

// The implementations the suite runs against the goldens, as `--impl` names them:
// the float64 oracle, and cuda_impl on the device or through Thrust's host system.
enum class Impl { kOracle, kCuda, kCudaHost };
inline constexpr Impl kImpls[] = {Impl::kOracle, Impl::kCuda, Impl::kCudaHost};
const char* ImplName(Impl impl);
// The implementation `text` names; nullopt for any other text.
std::optional<Impl> ParseImpl(const std::string& text);
// The one dtype an implementation computes in (cuda_impl: float32), or nullopt when it
// follows each case's dtype. Cases of another dtype are SKIPPED for it, never passed.
std::optional<DType> ImplDType(Impl impl);
using GenFn = std::function<Case(const GenParams&)>;

struct FunctionSpec {
  std::string name;         // verl's registry string, exactly
  std::string family;       // advantage, policy_loss, aggregation, kl, torch_functional, reward_kl,
                            // rollout_correction
  std::string verl_symbol;  // the verl function it mirrors
  std::vector<InputSpec> inputs;
  std::vector<ConfigKey> config;
  std::vector<OutputSpec> outputs;
  std::vector<std::string> metrics;
  std::vector<std::string> grads;  // inputs the scalar loss is differentiated by
  // What verl detaches is semantics too. vjp_inputs: the inputs verl receives with
  // requires_grad in training; for every tensor output the goldens hold
  // vjps/<output>/<input>, the gradient of sum(projection * output) for a fixed random
  // projection (VjpFields() lists them). vjp_zero_outputs: tensor outputs through which
  // verl's graph does not reach those inputs (a .detach()ed tensor, a mask built from
  // comparisons), whose VJPs are exactly zero. vjp: the oracle's analytic VJPs of the
  // other tensor outputs, given the case's projections (Registry() adds the zeros and
  // attaches the result to `oracle`'s Result::vjps whenever a case carries projections).
  std::vector<std::string> vjp_inputs;
  std::vector<std::string> vjp_zero_outputs;
  std::function<std::map<std::string, Array>(const Case&, const Result&)> vjp;
  // The implementations, one slot each (Impl). `oracle` is filled by the family's entry
  // and throws Unsupported where verl has no semantics; the others are filled by their
  // libraries through RegisterImplementation, keyed by (family, name) like the registry.
  RunFn oracle;
  RunFn cuda;
  RunFn cuda_host;
  GenFn generate;  // random valid inputs + config for property tests
  std::vector<ToleranceOverride> tolerances;
  // float32 forward error grows with the problem's condition number; where it can be
  // large (GRPO's division by a small group std) the spec computes it from the case's
  // inputs and the float32 tolerance is multiplied by it. float64's atol is multiplied
  // by it too (the same rounding, amplified the same way), its rtol never.
  std::function<double(const Case&)> float32_condition;
  // A per-case bound for one field, where the case's own values say how much rounding a
  // correct implementation can show (a cancellation's condition number); nullopt for
  // fields it does not bound. It replaces the table's entry and may only loosen the
  // dtype's default (the comparator enforces both).
  std::function<std::optional<Tolerance>(const Case& golden, const std::string& field)> case_tolerance;
  // Where a field's elements are a coefficient times a quantity of order one (a KL
  // penalty beta * kld beside a score), each element's own absolute scale, from the
  // case's inputs and config (never from the result under test); the judge multiplies
  // the absolute tolerance by it, capped at 1. nullopt for fields it does not scale. An
  // aggregated loss needs none: the aggregation's weights scale it (Result::magnitude).
  std::function<std::optional<std::vector<double>>(const Case& golden, const std::string& field)> atol_scale;
  // Metrics that are fractions of tokens (clip fractions): exact in float64; in
  // float32 allowed to move by the boundary tokens' share, reported as flips.
  std::vector<std::string> discrete_metrics;
  // Which of discrete_metrics count rows in this case (a per-sequence statistic against a
  // threshold: one decision per row) rather than tokens. A decision at a boundary then
  // moves the fraction by one row over the rows, whatever the row's length; the judge
  // allows the boundary rows' share instead of their tokens'. Null: every fraction counts
  // tokens.
  std::function<bool(const Case& golden, const std::string& metric)> counts_rows;
  // Advantage estimators: the keyword arguments verl's compute_advantage dispatcher
  // (ray_trainer.compute_advantage) hands this estimator when the batch holds every
  // optional key. properties/advantage/dispatch_test.py holds them against what the capture
  // recorded from verl's own dispatcher (/_verl_dispatch in advantage.h5).
  std::vector<std::string> dispatch_kwargs;
  // Where verl's gradient is not the derivative of the loss's value (a factor under
  // .detach(): CISPO's clipped ratio, GSPO's sequence ratio, DPPO's truncated ratio and
  // mask): the loss evaluated at `at` with every detached quantity taken from `base`.
  // Its derivative at at == base is verl's gradient; gradcheck differentiates this
  // instead of the loss.
  std::function<double(const Case& base, const Case& at)> stop_gradient_objective;
  // Coverage labels of a case (rollout correction: "rollout_is=token", "icepop",
  // "chain", ...). `conform list --json` counts golden cases per label, and golden_test
  // requires at least 3 float64 and 3 float32 passing cases for every label in
  // required_variants: one registry entry can then stand for several of verl's modes
  // without any mode going untested.
  std::function<std::vector<std::string>(const Case&)> variants;
  std::vector<std::string> required_variants;
  // A reason why agreement on this golden proves little although some reference field
  // is non-zero (every token rejected: the masks agree trivially); "" when trusted.
  // A passing case with a reason is reported MISTRUSTED.
  std::function<std::string(const Case& golden)> mistrust;
  // Config values verl would reject (a malformed threshold string, an unknown RS
  // option): a case that claims verl returned a result for them is not a file verl
  // produced. Throws BadInput naming the field; not called for expect_error cases
  // (there, verl's own exception is the expected result).
  std::function<void(const Case&)> check_config;
  // Presets (RolloutCorrectionConfig factories): the config the factory returns with
  // its default arguments, as the oracle expands it. properties/rollout_correction/preset_test.py holds it
  // against what the capture recorded from verl (/_verl_presets in rollout_correction.h5).
  std::vector<std::pair<std::string, ConfigValue>> preset_expansion;
  // Config keys verl accepts and ignores, with the value it uses in their place (sapo:
  // loss_agg_mode is always seq-mean-token-mean). Tests and adapters that compute what
  // the function does take the value from here, never from the case.
  std::vector<std::pair<std::string, ConfigValue>> fixed_config;
  // Straight-through estimators (kl "k3+"): the forward value is that of the registry
  // entry `value_of` (same family) and the gradient that of `gradient_of` (verl adds
  // gradient_of - gradient_of.detach()). Gradient checks differentiate `gradient_of`.
  struct StraightThrough {
    std::string value_of;
    std::string gradient_of;
  };
  std::optional<StraightThrough> straight_through;
  std::string notes;

  // The slot for one implementation; null when that implementation lacks this function.
  const RunFn* Implementation(Impl impl) const;

  const InputSpec* FindInput(const std::string& n) const;
  const ConfigKey* FindConfigKey(const std::string& n) const;
  // The value verl uses for a key it ignores (fixed_config); null when the key counts.
  const ConfigValue* FixedConfig(const std::string& key) const;
  const OutputSpec* FindOutput(const std::string& n) const;
  // "<output>/<input>" for every tensor output x vjp input, in declaration order.
  std::vector<std::string> VjpFields() const;
  bool VjpIsZero(const std::string& output) const;
};

// Completes a case's config from the spec's ConfigKey defaults, as verl does with an
// argument it is not given: every declared key absent or None gets verl_default, except
// absent_is_none keys, which stay None; the config is then marked resolved against
// `spec`, and its one-argument getters serve registry entries (oracle/core/case.h).
// Keys the spec does not declare are kept as they are (schema checks reject them in a
// file before anything runs).
void ResolveConfig(const FunctionSpec& spec, Config& config);
// `c` itself when its config is already resolved against `spec`, else a resolved copy
// in `storage`.
const Case& Resolved(const FunctionSpec& spec, const Case& c, Case& storage);

// The registry's rules for a spec's tolerance table: every override loosens the dtype's
// default and says why, and no field is given twice. std::logic_error otherwise (the
// registry refuses to build).
void ValidateTolerances(const FunctionSpec& spec);

}  // namespace verlconf
