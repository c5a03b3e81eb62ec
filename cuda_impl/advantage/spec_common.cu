#include "cuda_impl/advantage/spec_common.h"

#include <map>

namespace verlconf::cuda {
namespace {

std::map<std::string, SystemRunFn>& Table() {
  static std::map<std::string, SystemRunFn> table;
  return table;
}

}  // namespace

std::vector<int64_t> IndexCodes(const Array& index) {
  std::vector<int64_t> codes(index.data.size());
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<int64_t>(index.data[i]);
  return codes;
}

bool RegisterAdvantageEntry(const std::string& name, SystemRunFn run) {
  Table()[name] = run;
  return RegisterCudaEntry("advantage", name, std::move(run));
}

const SystemRunFn* FindAdvantageEntry(const std::string& name) {
  const auto it = Table().find(name);
  return it == Table().end() ? nullptr : &it->second;
}

}  // namespace verlconf::cuda
