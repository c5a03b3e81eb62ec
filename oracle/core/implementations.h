// How an implementation other than the oracle fills its slot of the registry: its
// library registers a RunFn per (family, name) before main, and the registry, built on
// first use, moves each registration into the slot of that entry. Keying by
// (family, name) keeps verl's two "gpg"s apart; a registration that names no entry,
// fills a slot twice or arrives after the registry was built is a build defect and
// stops the program with its key.
#pragma once

#include <string>
#include <vector>

#include "oracle/core/function_spec.h"

namespace verlconf {

struct ImplementationRegistration {
  Impl impl;
  std::string family;
  std::string name;
  RunFn run;
};

// Call from a static initialiser of an `alwayslink` library; returns true so that
// the call can initialise a namespace-scope constant.
bool RegisterImplementation(Impl impl, std::string family, std::string name, RunFn run);

// Every registration so far; the registry takes them once, when it is built (and marks
// the list closed: a later RegisterImplementation is a defect).
std::vector<ImplementationRegistration> TakeImplementationRegistrations();

// Moves each registration into the slot of the entry with its (family, name);
// std::logic_error naming the key when there is no such entry or the slot is taken.
void FillImplementationSlots(std::vector<FunctionSpec>& entries, std::vector<ImplementationRegistration> regs);

}  // namespace verlconf
