// Error types shared by the oracle, the fixture reader and the CLI.
//
// Three different things can go wrong and callers must tell them apart:
//  - VerlError: the oracle reproduces an exception that verl itself raises for this
//    input (a golden case may *expect* it); its kind is verl's Python exception type.
//  - BadInput: the file, case or argument we were given is malformed. The CLI maps it
//    to exit code 2 and prints the message, which names file, case and field.
//  - Unsupported: the function exists in verl but has no oracle semantics here (e.g.
//    kl_penalty "full"); reported as UNSUPPORTED, never as a pass.
#pragma once

#include <stdexcept>
#include <string>

namespace verlconf {

class VerlError : public std::runtime_error {
 public:
  // kind is the Python exception type verl raises: "ValueError", "AssertionError",
  // "NotImplementedError".
  VerlError(std::string kind, const std::string& message)
      : std::runtime_error(kind + ": " + message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

// Python's float division a / b, where verl divides Python floats (or a tensor's
// .item()): ZeroDivisionError for b == 0, where torch would give inf.
inline double PyFloatDivide(double a, double b) {
  if (b == 0.0) throw VerlError("ZeroDivisionError", "float division by zero");
  return a / b;
}

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace verlconf
