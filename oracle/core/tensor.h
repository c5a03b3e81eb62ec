// The one array type used everywhere on the host side: a dense row-major array whose
// values are held as double whatever dtype it was stored in.
//
// Holding everything as double keeps the oracle free of templates: float32 goldens
// are exactly representable in double, int64 group codes are exact below 2^53 (the
// reader rejects larger ones), and `dtype` remembers what the file said so that the
// comparison can pick the tolerance for that dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace verlconf {

enum class DType { kFloat64, kFloat32, kInt64 };

// Machine epsilons (DBL_EPSILON, FLT_EPSILON): tolerances are written as multiples.
inline constexpr double kEps64 = 2.220446049250313e-16;
inline constexpr double kEps32 = 1.1920928955078125e-07;

const char* DTypeName(DType d);
// Parses "float64" / "float32" / "int64"; returns false on anything else.
bool ParseDType(const std::string& s, DType* out);

struct Array {
  std::vector<int64_t> shape;  // empty shape = 0-d scalar
  std::vector<double> data;
  DType dtype = DType::kFloat64;

  Array() = default;
  Array(std::vector<int64_t> s, DType d) : shape(std::move(s)), dtype(d) {
    data.assign(static_cast<size_t>(NumElements(shape)), 0.0);
  }
  static Array Scalar(double v, DType d = DType::kFloat64) {
    Array a({}, d);
    a.data = {v};
    return a;
  }
  static Array Matrix(int64_t rows, int64_t cols, DType d = DType::kFloat64) { return Array({rows, cols}, d); }

  static int64_t NumElements(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
  // Rows and columns of a 2-D array (B sequences x T tokens in verl's layout).
  int64_t rows() const { return shape.at(0); }
  int64_t cols() const { return shape.at(1); }
  double& at(int64_t i, int64_t j) { return data[static_cast<size_t>(i * shape[1] + j)]; }
  double at(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * shape[1] + j)]; }
  double& operator[](int64_t i) { return data[static_cast<size_t>(i)]; }
  double operator[](int64_t i) const { return data[static_cast<size_t>(i)]; }

  std::string ShapeString() const;
};

}  // namespace verlconf
