// verlconf for C++ frameworks: hand LibTorch tensors in, get the conformance outcome
// per output back.
//
// Two ways to check an implementation:
//  - CheckAgainstOracle: on inputs you choose, the oracle (float64, mirrors verl) is the
//    reference; you pass what your implementation returned.
//  - CheckAgainstGolden / CheckAgainstGoldenSet: your function is called on the inputs
//    of verl's golden cases and compared with what verl returned (the bundled goldens:
//    tools::BundledGoldenDir, or any GoldenSet).
// Both return the same CaseReport as `conform check`: one outcome per case (PASSED,
// FAILED, MISTRUSTED, UNSUPPORTED, SKIPPED) and one FieldReport per output, gradient
// and metric ("outputs/pg_loss", "grads/log_prob", "metrics/actor/pg_clipfrac"), with
// the same tolerances.
//
// Tensors: float32 or float64 (the case's dtype; all float inputs of one case share it),
// int64 for group indices (verl's uid codes). Any device, any layout, requires_grad or
// not: they are copied to the host. Registry names, input names, config keys, outputs
// and gradients are those of `conform spec --json`.
//
// Errors: an unknown function, a wrong dtype or shape, a missing input or an unknown
// config key throw verlconf::BadInput with a message naming the field. Where verl raises
// (e.g. clip_ratio_c <= 1 is an AssertionError), an implementation signals it by
// throwing verlconf::VerlError(kind, message) from the candidate function or by setting
// TorchResult::raised; the kind must match verl's. Throwing verlconf::Unsupported makes
// the case UNSUPPORTED. Any other exception propagates.
//
// This header needs only <ATen/core/Tensor.h>; the conversions are compiled in
// verlconf_torch.cc. Link @libtorch//:libtorch (Debian's libtorch-dev).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/tensor.h"
#include "oracle/judge/judge.h"
#include "tools/h5/golden_set.h"

namespace verlconf::torch_api {

using TensorMap = std::map<std::string, at::Tensor>;

// What an implementation returned for one call.
struct TorchResult {
  TensorMap outputs;  // by output name; scalar outputs (losses) as 0-d tensors
  TensorMap grads;    // d loss / d input, by input name (e.g. "log_prob")
  std::map<std::string, double> metrics;
  // Stop-gradient semantics: the tensors your outputs were computed from, by input name
  // (the `requires_grad` leaves you made of e.g. "logprob"). Leave those outputs attached
  // to their graph (not .detach()ed) and CheckAgainstGolden takes, for each projection P
  // of the golden, d sum(P * output) / d leaf with torch's autograd (zero where an output
  // is not attached), compared with verl's vjps/<output>/<input>. Empty: those fields are
  // UNSUPPORTED.
  TensorMap vjp_leaves;
  // "<Kind>: <message>" where the implementation raises as verl does (instead of
  // throwing VerlError). Outputs are ignored then.
  std::optional<std::string> raised;
};

// A candidate implementation: golden inputs as tensors (in the case's dtype, on the
// CPU, not requiring grad) and the case's config completed with verl's defaults
// (WithVerlDefaults: every key the function takes, None where verl's is None), so that
// an implementation reads each key (Config::Double etc.) and never restates a default.
using CandidateFn = std::function<TorchResult(const TensorMap& inputs, const Config& config)>;

// `config` completed with verl's defaults for `function` (the registry's, as the judge
// completes a golden's): every key the function takes, None where verl's default is None
// or where verl receives an absent key as None. BadInput for an unknown function or a key
// the function does not take.
Config WithVerlDefaults(const std::string& function, const Config& config, const std::string& family = "");

// ---- conversions (dtype preserved: float64 <-> kDouble, float32 <-> kFloat,
// int64 <-> kLong). `what` names the tensor in error messages.
at::Tensor ToTensor(const Array& a);
Array FromTensor(const at::Tensor& t, const std::string& what);
TensorMap InputsAsTensors(const Case& c);

// A case for `function` (verl's registry name; `family` only where the name is
// ambiguous, e.g. "gpg") from tensors and config values, validated against the
// registry: every input known, shapes consistent (B x T, B, ...), one float dtype,
// masks 0/1, config keys known. Config values: double, int64_t (verl's bools as 0/1),
// std::string, std::monostate for None. The case is named "from_tensors".
Case CaseFromTensors(const std::string& function, const TensorMap& inputs,
                     const std::map<std::string, ConfigValue>& config = {}, const std::string& family = "");

// A candidate's result as the comparator sees it; BadInput for an unsupported dtype.
Result ResultFromTorch(const TorchResult& r, const std::string& where);

// Runs the oracle on the inputs and compares `candidate` with it: every output,
// gradient and metric the oracle produces must be there and within the dtype's
// tolerance (float32 inputs: the candidate's float32 result against the oracle's
// float64 on the same inputs, as for verl's float32 goldens). Where the oracle raises
// a verl error the candidate must raise the same kind. UNSUPPORTED where the oracle has
// no semantics for these inputs.
CaseReport CheckAgainstOracle(const std::string& function, const TensorMap& inputs,
                              const std::map<std::string, ConfigValue>& config, const TorchResult& candidate,
                              const std::string& family = "");

// Calls `candidate` on one golden case's inputs and compares with verl's golden.
CaseReport CheckAgainstGolden(const Case& golden, const CandidateFn& candidate);

// Every golden case of `function` in `set` (sorted by case name, both dtypes).
// BadInput for an unknown function, or one with no cases in the set.
std::vector<CaseReport> CheckAgainstGoldenSet(const fixtures::GoldenSet& set, const std::string& function,
                                              const CandidateFn& candidate, const std::string& family = "");

// One line per case ("PASSED  vanilla/sym_4x8_f64  [float64]  worst rel 1.2e-16"),
// then the Describe() of every case that did not pass, then a count line.
std::string FormatReports(const std::vector<CaseReport>& reports);

}  // namespace verlconf::torch_api
