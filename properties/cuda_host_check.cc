#include "properties/cuda_host_check.h"

#include "oracle/core/errors.h"
#include "oracle/judge/judge.h"

namespace verlconf::testing {
namespace {
std::string Key(const FunctionSpec& s) { return s.family + "/" + s.name; }
}  // namespace

// A batch of `rows` x `cols` from the spec's generator, with some rows fully masked.
Case RandomCase(const FunctionSpec& spec, uint64_t seed, int64_t rows, int64_t cols, bool mask_rows) {
  GenParams p;
  p.seed = seed;
  p.batch = rows;
  p.tokens = cols;
  p.dtype = DType::kFloat32;
  Case c = spec.generate(p);
  if (mask_rows)
    for (const InputSpec& in : spec.inputs) {
      auto it = c.inputs.find(in.name);
      if (!in.is_mask || in.role != Role::kTokens || it == c.inputs.end()) continue;
      for (int64_t i = 0; i < it->second.rows(); i += 3)
        for (int64_t t = 0; t < it->second.cols(); ++t) it->second.at(i, t) = 0.0;
    }
  c.name = "random";
  return c;
}

// The oracle's result as the golden; an exception where the oracle raises must be
// raised by the implementation too, with verl's type. "" when the implementation
// conforms, otherwise why not.
std::string CheckCudaHostAgainstOracle(const FunctionSpec& spec, Case golden) {
  Result want;
  try {
    want = spec.oracle(golden);
  } catch (const VerlError& e) {
    try {
      spec.cuda_host(golden);
    } catch (const VerlError& got) {
      return got.kind() == e.kind() ? "" : Key(spec) + ": the oracle raises " + e.what() + ", cuda-host " + got.what();
    }
    return Key(spec) + ": the oracle raises " + e.what() + ", cuda-host returns";
  }
  golden.outputs = want.outputs;
  golden.grads = want.grads;
  golden.metrics = want.metrics;
  const CaseReport r = CheckImplementation(spec, golden, spec.cuda_host);
  return r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted ? "" : r.Describe();
}

}  // namespace verlconf::testing
