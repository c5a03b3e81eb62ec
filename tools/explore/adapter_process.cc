#include "tools/explore/adapter_process.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sys/wait.h>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/core/text.h"
#include "oracle/explore/golden.h"
#include "tools/explore/wire.h"

namespace verlconf::explore {
namespace {

// How long past --call-timeout a server that has not answered is given before it is ended.
constexpr double kGrace = 10.0;

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

// A text the adapter sent (its name, an exception's message, a decline's reason), as every
// output can carry it (text.h).
std::string Text(const Json& j, const char* key) {
  const Json* v = j.Find(key);
  return v && v->kind == Json::Kind::kString ? PrintableText(v->text) : "";
}

}  // namespace

AdapterProcess::AdapterProcess(const AdapterOptions& o) : options_(o) { Start(); }

void AdapterProcess::Start() {
  const AdapterOptions& o = options_;
  int in[2], out[2];
  // Close-on-exec: a second server must not inherit this one's stdin, or this one never
  // sees the end of its input and the run waits for it forever.
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw BadInput(std::string("cannot start the adapter: ") + std::strerror(errno));
  const std::string limit = std::to_string(o.call_timeout);
  pid_ = fork();
  if (pid_ < 0) throw BadInput(std::string("cannot start the adapter: ") + std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);  // its own group: a server that is ended takes what it started with it
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    setenv("VERLCONF_CALL_TIMEOUT", limit.c_str(), 1);  // adapter_call.CALL_TIMEOUT_ENV
    std::vector<std::string> argv = {o.python, o.script, "--adapter", o.adapter, "--conform", o.conform};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid_, pid_);
  close(in[0]);
  close(out[1]);
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
  // A server that dies must be an error on our side, not a SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const Json hello = ParseJson(*ReadLine(), "the adapter server's greeting");
  const Json* ok = hello.Find("ok");
  if (!ok || !ok->boolean) {
    std::string why;
    if (const Json* p = hello.Find("problems"))
      for (const Json& line : p->items) why += (why.empty() ? "" : "; ") + line.text;
    throw BadInput("adapter " + o.adapter + " cannot be used: " + (why.empty() ? "no reason given" : why));
  }
  name_ = Text(hello, "adapter");
  functions_.clear();
  if (const Json* f = hello.Find("functions"))
    for (const Json& n : f->items) functions_.insert(n.text);
  versions_.clear();
  if (const Json* v = hello.Find("versions"))
    for (const auto& [k, val] : v->members)
      if (val.kind == Json::Kind::kString) versions_[PrintableText(k)] = PrintableText(val.text);
}

void AdapterProcess::Stop() {
  if (to_) std::fclose(to_);  // EOF: the server exits
  if (from_) std::fclose(from_);
  to_ = from_ = nullptr;
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    kill(-pid_, SIGKILL);  // what it started and left behind
  }
  pid_ = -1;
}

AdapterProcess::~AdapterProcess() { Stop(); }

std::optional<std::string> AdapterProcess::ReadLine(double seconds) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    // Wait only where stdio holds nothing already read (glibc's FILE read buffer).
    if (seconds > 0 && from_->_IO_read_ptr >= from_->_IO_read_end) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      struct pollfd p = {fileno(from_), POLLIN, 0};
      const int ready = left > 0 ? poll(&p, 1, static_cast<int>(std::min(left * 1000.0, 1e9)) + 1) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) return std::nullopt;
    }
    const int c = std::fgetc(from_);
    if (c == EOF) break;
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

Case DecodeAnswer(const Case& c, const std::string& line, int64_t id, const std::string& adapter,
                  std::map<std::string, Array>* recorded) {
  const std::string where = c.Where();
  const Json r = ParseJson(line, where + ": the adapter server's answer");
  if (const Json* p = r.Find("problems"); p && !p->items.empty()) {
    std::string why;
    for (const Json& problem : p->items) why += (why.empty() ? "" : "; ") + problem.text;
    throw BadInput("adapter " + adapter + " broke the contract (docs/adapter-contract.md): " + why);
  }
  const Json* rid = r.Find("id");
  if (!rid || rid->number != static_cast<double>(id))
    throw BadInput(where + ": the adapter server answered another request");
  Case out = InputsOnly(c);
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
  const double wait = options_.call_timeout > 0 ? options_.call_timeout + kGrace : 0;
  const std::optional<std::string> answer = ReadLine(wait);
  if (!answer) {
    // Stuck where the server's own timer cannot reach (native code): ended with its group
    // and started again; the case is the adapter's error, and the run goes on.
    kill(-pid_, SIGKILL);
    Stop();
    Start();
    Case out = InputsOnly(c);
    out.expect_error = "AdapterError: " + key + " case " + c.name + ": the call did not return within " +
                       std::to_string(static_cast<long long>(options_.call_timeout)) +
                       " s (--call-timeout); the adapter's process was ended and restarted";
    return out;
  }
  return DecodeAnswer(c, *answer, id, options_.adapter, recorded);
}

}  // namespace verlconf::explore
