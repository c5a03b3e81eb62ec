// One adapter, loaded once in its own Python process (tools/harness/serve_adapter.py), called
// case by case over the line protocol of wire.h: the same key resolution and contract as
// the candidate harness, without a process or a file per case.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "oracle/core/case.h"

namespace verlconf::explore {

struct AdapterOptions {
  std::string python;   // the interpreter that has the framework
  std::string script;   // serve_adapter.py
  std::string adapter;  // a module path or a bundled adapter name
  std::string conform;  // this binary: the server reads the registry from its `spec --json`
  // Seconds one call may take (0: none). The server ends a call past it as an adapter
  // error; one that does not answer within kGrace more (stuck in native code) is killed,
  // with whatever it started, and restarted, and the call is an adapter error here.
  double call_timeout = 0;
};

// Where a call sits in a sharded batch, as the server hands it to an adapter's SHARD hook
// (docs/adapter-contract.md, "Sharded calls"; tools/python/verlconf/sharding.py
// ShardContext has the same fields).
struct ShardContext {
  int64_t rank = 0, dp_size = 1, micro_batch = 0, micro_batches = 1, horizon = 1, batch_size = 0;
  int64_t batch_num_tokens = 0, global_batch_size = 0;
  std::vector<int64_t> rows, rank_rows;
  std::map<std::string, Array> rank_inputs;  // the rank's rows, at its widest micro-batch's width
};

// One answer line of the server to request `id` on `c`, read as AdapterProcess::Call
// returns it: every field checked before anything uses it (an array's dtype and byte
// count, a metric a single number, the answer's id and kind); BadInput naming the case
// otherwise. Apart from the process so that a fuzzer can throw any bytes at it.
Case DecodeAnswer(const Case& c, const std::string& line, int64_t id, const std::string& adapter,
                  std::map<std::string, Array>* recorded = nullptr);

class AdapterProcess {
 public:
  // Starts the server and reads its greeting. BadInput with the server's problems when the
  // adapter cannot be loaded, or when the interpreter cannot run the server at all.
  explicit AdapterProcess(const AdapterOptions& o);
  ~AdapterProcess();
  AdapterProcess(const AdapterProcess&) = delete;
  AdapterProcess& operator=(const AdapterProcess&) = delete;

  const std::string& name() const { return name_; }
  // "family/name" of every registry function the adapter provides.
  const std::set<std::string>& functions() const { return functions_; }
  const std::map<std::string, std::string>& versions() const { return versions_; }

  // The adapter's answer on `c` (inputs, resolved config, dtype, projections) as a
  // candidate case: its result, or expect_error for an exception (an error of the adapter
  // file itself as "AdapterError: ..."), or declined. BadInput when the adapter breaks the
  // contract (the server's problems, naming function, case and field) or the server dies.
  // `recorded`, when given, receives the inputs the adapter recorded of a choice its
  // function made itself (clip_cov's random draw, kl_cov's top-k): a reference's choice
  // that the golden must carry as an input, as the capture writes it.
  // `shard`, when given, makes the call one micro-batch of a sharded batch.
  Case Call(const Case& c, std::map<std::string, Array>* recorded = nullptr, const ShardContext* shard = nullptr);

 private:
  void Start();
  void Stop();
  // The next line; nullopt when the server has said nothing for `seconds` (> 0).
  std::optional<std::string> ReadLine(double seconds = 0);
  void WriteLine(const std::string& line);

  AdapterOptions options_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  int64_t next_id_ = 0;
  std::string name_;
  std::set<std::string> functions_;
  std::map<std::string, std::string> versions_;
};

}  // namespace verlconf::explore
