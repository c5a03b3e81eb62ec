// libFuzzer target for what an adapter sends back to conform (explore's adapter server,
// tools/harness/serve_adapter.py): the bytes are one answer line to a token-mean request
// that is the first micro-batch of a sharded case. The line is decoded as
// AdapterProcess::Call decodes it (DecodeAnswer), and a result it yields is combined with
// the other calls' as explore combines a sharded case (sharding::Combine, which holds
// every call's result to its micro-batch first).
//
// The contract under test: every input ends in a result or a BadInput/VerlError/
// Unsupported exception; never a crash, a leak, a hang, a write outside the batch or
// another exception.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/registry.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/plan.h"
#include "oracle/sharding/shard.h"
#include "tools/explore/adapter_process.h"

namespace {

using namespace verlconf;

struct Fixture {
  const FunctionSpec& spec = *FindSpec("token-mean");
  Case full;
  sharding::ShardedCase sharded;
  std::vector<Result> others;
  Fixture() {
    GenParams p;
    p.seed = 7;
    p.batch = 4;
    p.tokens = 5;
    full = sharding::JudgedFullBatch(spec, spec.generate(p));
    sharding::ShardPlan plan;
    plan.ranks = {sharding::Rank{{{{3, 0}}, {{1}}}}, sharding::Rank{{{{2}}}}};
    sharded = sharding::ShardCase(spec, full, plan);
    for (const sharding::ShardCall& call : sharded.calls) others.push_back(spec.oracle(call.input));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture f;
  const std::string line(reinterpret_cast<const char*>(data), size);
  Case request = f.sharded.calls[0].input;
  request.family = f.spec.family;
  request.function = f.spec.name;
  request.name = "fuzz.dp2.r0.m0";
  try {
    std::map<std::string, Array> recorded;
    const Case got = explore::DecodeAnswer(request, line, 0, "fuzz", &recorded);
    if (got.declined || got.expect_error) return 0;
    std::vector<Result> results = f.others;
    results[0] = Result::Of(got);
    const Result combined = sharding::Combine(f.spec, f.full, f.sharded, results);
    for (const auto& [name, g] : combined.grads)
      if (g.shape != f.full.Input(name).shape || g.size() != f.full.Input(name).size()) std::abort();
    for (const auto& [name, o] : combined.outputs)
      if (o.size() != 1) std::abort();
  } catch (const BadInput&) {
  } catch (const VerlError&) {
  } catch (const Unsupported&) {
  }
  return 0;
}
