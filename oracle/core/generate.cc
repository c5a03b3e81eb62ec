#include "oracle/core/generate.h"

#include <algorithm>
#include <numeric>

namespace verlconf::oracle {

void RoundToDType(Array& a) {
  if (a.dtype != DType::kFloat32) return;
  for (double& v : a.data) v = static_cast<double>(static_cast<float>(v));
}

double InputGen::UniformScalar(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

int64_t InputGen::Int(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

bool InputGen::Coin(double p) { return std::bernoulli_distribution(p)(rng_); }

Array InputGen::ResponseMask(int64_t b, int64_t t, DType d) {
  Array m = Array::Matrix(b, t, d);
  for (int64_t i = 0; i < b; ++i) {
    int64_t len = Int(1, t);
    if (Coin(0.1)) len = 0;  // fully masked row
    if (Coin(0.1)) len = 1;  // one-token response
    for (int64_t j = 0; j < len; ++j) m.at(i, j) = 1.0;
    if (len > 4 && Coin(0.3)) {  // an observation span inside a multi-turn response
      const int64_t start = Int(1, len - 2);
      const int64_t end = std::min(len - 1, start + Int(1, std::max<int64_t>(1, len / 3)));
      for (int64_t j = start; j < end; ++j) m.at(i, j) = 0.0;
    }
  }
  return m;
}

Array InputGen::GroupIndex(int64_t b, int64_t group_size) {
  Array idx({b}, DType::kInt64);
  int64_t code = 0;
  for (int64_t i = 0; i < b;) {
    const int64_t n = Coin(0.15) ? 1 : std::min(group_size, b - i);
    for (int64_t k = 0; k < n && i < b; ++k, ++i) idx[i] = static_cast<double>(code);
    ++code;
  }
  // Interleave: verl does not promise that a group's members are adjacent.
  std::shuffle(idx.data.begin(), idx.data.end(), rng_);
  return idx;
}

Array InputGen::Normal(int64_t b, int64_t t, double mean, double stddev, DType d) {
  Array a = Array::Matrix(b, t, d);
  std::normal_distribution<double> n(mean, stddev);
  for (double& v : a.data) v = n(rng_);
  RoundToDType(a);
  return a;
}

Array InputGen::Uniform(int64_t b, int64_t t, double lo, double hi, DType d) {
  Array a = Array::Matrix(b, t, d);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& v : a.data) v = u(rng_);
  RoundToDType(a);
  return a;
}

Array InputGen::LogProbs(int64_t b, int64_t t, DType d) { return Uniform(b, t, -6.0, -1e-3, d); }

Array InputGen::Perturb(const Array& base, double stddev) {
  Array a = base;
  std::normal_distribution<double> n(0.0, stddev);
  for (double& v : a.data) v += n(rng_);
  RoundToDType(a);
  return a;
}

}  // namespace verlconf::oracle
