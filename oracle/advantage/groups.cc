#include "oracle/advantage/groups.h"

#include <cmath>

#include "oracle/core/sum.h"

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

Array RowsTimesMask(const std::vector<double>& per_seq, const Array& mask) {
  Array out(mask.shape, mask.dtype);
  for (int64_t i = 0; i < mask.rows(); ++i)
    for (int64_t t = 0; t < mask.cols(); ++t) out.at(i, t) = per_seq[static_cast<size_t>(i)] * mask.at(i, t);
  return out;
}

double GroupMean(const std::vector<double>& s, const std::vector<int64_t>& members) {
  ExactSum sum;
  for (int64_t i : members) sum.Add(s[static_cast<size_t>(i)]);
  return sum.Value() / static_cast<double>(members.size());
}

double GroupStd(const std::vector<double>& s, const std::vector<int64_t>& members) {
  return GroupStdAbout(s, members, GroupMean(s, members));
}

double GroupStdAbout(const std::vector<double>& s, const std::vector<int64_t>& members, double center) {
  ExactSum sq;
  for (int64_t i : members) {
    const double c = s[static_cast<size_t>(i)] - center;
    sq.Add(c * c);
  }
  return std::sqrt(sq.Value() / static_cast<double>(members.size() - 1));
}

}  // namespace verlconf::oracle
