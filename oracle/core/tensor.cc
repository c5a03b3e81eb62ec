#include "oracle/core/tensor.h"

namespace verlconf {

const char* DTypeName(DType d) {
  switch (d) {
    case DType::kFloat64: return "float64";
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

bool ParseDType(const std::string& s, DType* out) {
  if (s == "float64") {
    *out = DType::kFloat64;
    return true;
  }
  if (s == "float32") {
    *out = DType::kFloat32;
    return true;
  }
  if (s == "int64") {
    *out = DType::kInt64;
    return true;
  }
  return false;
}

std::string Array::ShapeString() const {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace verlconf
