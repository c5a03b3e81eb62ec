// One adapter, loaded once in its own Python process (tools/harness/serve_adapter.py), called
// case by case over the line protocol of wire.h: the same key resolution and contract as
// the candidate harness, without a process or a file per case.
#pragma once

#include <cstdio>
#include <map>
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
};

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
  Case Call(const Case& c, std::map<std::string, Array>* recorded = nullptr);

 private:
  std::string ReadLine();
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
