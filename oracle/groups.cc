#include "oracle/groups.h"

#include "oracle/sum.h"

namespace verlconf::oracle {

Groups GroupBy(const Array& index) {
  Groups g;
  std::map<int64_t, int64_t> slot;
  g.group_of.resize(static_cast<size_t>(index.size()));
  for (int64_t i = 0; i < index.size(); ++i) {
    const auto code = static_cast<int64_t>(index[i]);
    auto [it, fresh] = slot.emplace(code, static_cast<int64_t>(g.members.size()));
    if (fresh) g.members.emplace_back();
    g.members[static_cast<size_t>(it->second)].push_back(i);
    g.group_of[static_cast<size_t>(i)] = it->second;
  }
  return g;
}

std::vector<double> RowSums(const Array& m) {
  std::vector<double> s(static_cast<size_t>(m.rows()));
  for (int64_t i = 0; i < m.rows(); ++i) {
    ExactSum acc;
    for (int64_t t = 0; t < m.cols(); ++t) acc.Add(m.at(i, t));
    s[static_cast<size_t>(i)] = acc.Value();
  }
  return s;
}

}  // namespace verlconf::oracle
