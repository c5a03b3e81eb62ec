#include "tools/explore/adapter_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/wait.h>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "tools/explore/wire.h"

namespace verlconf::explore {
namespace {

void AppendArrays(std::string& out, const char* key, const std::map<std::string, Array>& arrays) {
  out += ",\"";
  out += key;
  out += "\":{";
  bool first = true;
  for (const auto& [name, a] : arrays) {
    out += first ? "\"" : ",\"";
    first = false;
    out += name + "\":";
    AppendArray(out, a);
  }
  out += "}";
}

void AppendRows(std::string& out, const char* key, const std::vector<int64_t>& rows) {
  out += ",\"";
  out += key;
  out += "\":[";
  for (size_t i = 0; i < rows.size(); ++i) out += (i ? "," : "") + std::to_string(rows[i]);
  out += "]";
}

// ,"shard":{...}: the request's sharding context (serve.py _shard_context).
void AppendShard(std::string& out, const ShardContext& s) {
  out += ",\"shard\":{\"rank\":" + std::to_string(s.rank) + ",\"dp_size\":" + std::to_string(s.dp_size) +
         ",\"micro_batch\":" + std::to_string(s.micro_batch) + ",\"micro_batches\":" + std::to_string(s.micro_batches) +
         ",\"horizon\":" + std::to_string(s.horizon) + ",\"batch_size\":" + std::to_string(s.batch_size) +
         ",\"batch_num_tokens\":" + std::to_string(s.batch_num_tokens) +
         ",\"global_batch_size\":" + std::to_string(s.global_batch_size);
  AppendRows(out, "rows", s.rows);
  AppendRows(out, "rank_rows", s.rank_rows);
  AppendArrays(out, "rank_inputs", s.rank_inputs);
  out += "}";
}

std::map<std::string, Array> Arrays(const Json& response, const char* key, const std::string& where) {
  std::map<std::string, Array> out;
  if (const Json* j = response.Find(key))
    for (const auto& [name, a] : j->members) out[name] = ReadArray(a, where + ": " + key + "/" + name);
  return out;
}

std::string Text(const Json& j, const char* key) {
  const Json* v = j.Find(key);
  return v && v->kind == Json::Kind::kString ? v->text : "";
}

}  // namespace

AdapterProcess::AdapterProcess(const AdapterOptions& o) : options_(o) {
  int in[2], out[2];
  // Close-on-exec: a second server must not inherit this one's stdin, or this one never
  // sees the end of its input and the run waits for it forever.
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw BadInput(std::string("cannot start the adapter: ") + std::strerror(errno));
  pid_ = fork();
  if (pid_ < 0) throw BadInput(std::string("cannot start the adapter: ") + std::strerror(errno));
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    std::vector<std::string> argv = {o.python, o.script, "--adapter", o.adapter, "--conform", o.conform};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
  // A server that dies must be an error on our side, not a SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const Json hello = ParseJson(ReadLine(), "the adapter server's greeting");
  const Json* ok = hello.Find("ok");
  if (!ok || !ok->boolean) {
    std::string why;
    if (const Json* p = hello.Find("problems"))
      for (const Json& line : p->items) why += (why.empty() ? "" : "; ") + line.text;
    throw BadInput("adapter " + o.adapter + " cannot be used: " + (why.empty() ? "no reason given" : why));
  }
  name_ = Text(hello, "adapter");
  if (const Json* f = hello.Find("functions"))
    for (const Json& n : f->items) functions_.insert(n.text);
  if (const Json* v = hello.Find("versions"))
    for (const auto& [k, val] : v->members)
      if (val.kind == Json::Kind::kString) versions_[k] = val.text;
}

AdapterProcess::~AdapterProcess() {
  if (to_) std::fclose(to_);  // EOF: the server exits
  if (from_) std::fclose(from_);
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string AdapterProcess::ReadLine() {
  std::string line;
  for (int c; (c = std::fgetc(from_)) != EOF;) {
    if (c == '\n') return line;
    line += static_cast<char>(c);
  }
  throw BadInput("the adapter server (" + options_.python + " " + options_.script + " --adapter " + options_.adapter +
                 ") exited" + (line.empty() ? "" : " mid-line") + "; its messages are above");
}

void AdapterProcess::WriteLine(const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), to_) != line.size() || std::fputc('\n', to_) == EOF ||
      std::fflush(to_) != 0)
    throw BadInput("the adapter server (" + options_.adapter + ") stopped reading its input; its messages are above");
}

Case AdapterProcess::Call(const Case& c, std::map<std::string, Array>* recorded, const ShardContext* shard) {
  const std::string key = c.family + "/" + c.function;
  const int64_t id = next_id_++;
  std::string req = "{\"id\":" + std::to_string(id) + ",\"function\":" + JsonEscape(key) +
                    ",\"case\":" + JsonEscape(c.name) + ",\"dtype\":\"" + DTypeName(c.dtype) + "\"";
  AppendArrays(req, "inputs", c.inputs);
  req += ",\"config\":{";
  bool first = true;
  for (const auto& [k, v] : c.config.values()) {
    req += (first ? "" : ",") + JsonEscape(k) + ":";
    first = false;
    AppendConfigValue(req, v);
  }
  req += "}";
  if (!c.projections.empty()) AppendArrays(req, "projections", c.projections);
  if (shard) AppendShard(req, *shard);
  req += "}";
  WriteLine(req);
  const std::string where = c.Where();
  const Json r = ParseJson(ReadLine(), where + ": the adapter server's answer");
  if (const Json* p = r.Find("problems"); p && !p->items.empty()) {
    std::string why;
    for (const Json& line : p->items) why += (why.empty() ? "" : "; ") + line.text;
    throw BadInput("adapter " + options_.adapter + " broke the contract (docs/adapter-contract.md): " + why);
  }
  const Json* rid = r.Find("id");
  if (!rid || rid->number != static_cast<double>(id))
    throw BadInput(where + ": the adapter server answered another request");
  Case out = c;
  out.outputs.clear();
  out.grads.clear();
  out.metrics.clear();
  out.metric_dtypes.clear();
  out.vjps.clear();
  out.expect_error.reset();
  out.declined.reset();
  if (recorded) recorded->clear();
  const std::string kind = Text(r, "kind");
  if (kind == "declined") {
    out.declined = Text(r, "declined");
  } else if (kind == "raised" || kind == "adapter") {
    out.expect_error = Text(r, "error");
  } else if (kind == "result") {
    out.outputs = Arrays(r, "outputs", where);
    out.grads = Arrays(r, "grads", where);
    out.vjps = Arrays(r, "vjps", where);
    if (recorded) *recorded = Arrays(r, "recorded_inputs", where);
    for (const auto& [name, a] : Arrays(r, "metrics", where)) {
      if (a.size() != 1) throw BadInput(where + ": metrics/" + name + ": not a single number");
      out.metrics[name] = a.data[0];
      out.metric_dtypes[name] = a.dtype;
    }
  } else {
    throw BadInput(where + ": the adapter server answered an unknown kind '" + kind + "'");
  }
  return out;
}

}  // namespace verlconf::explore
