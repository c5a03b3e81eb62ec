// Implementation slots: a registration reaches the entry with its (family, name) and no
// other, and every way a registration can go wrong stops with its key instead of
// leaving a slot silently empty.
#include "oracle/core/implementations.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/registry.h"

namespace verlconf {
namespace {

std::vector<FunctionSpec> TwoGpgs() {
  std::vector<FunctionSpec> v(2);
  v[0].family = "advantage";
  v[1].family = "policy_loss";
  v[0].name = v[1].name = "gpg";
  return v;
}

RunFn Marker(double value) {
  return [value](const Case&) {
    Result r;
    r.outputs["x"] = Array::Scalar(value, DType::kFloat64);
    return r;
  };
}

std::string LogicError(std::vector<FunctionSpec>& v, std::vector<ImplementationRegistration> regs) {
  try {
    FillImplementationSlots(v, std::move(regs));
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

TEST(ImplementationSlots, KeyedByFamilyAndName) {
  std::vector<FunctionSpec> v = TwoGpgs();
  FillImplementationSlots(v, {{Impl::kCuda, "policy_loss", "gpg", Marker(7)}});
  EXPECT_EQ(v[0].Implementation(Impl::kCuda), nullptr);
  ASSERT_NE(v[1].Implementation(Impl::kCuda), nullptr);
  EXPECT_EQ((*v[1].Implementation(Impl::kCuda))(Case{}).outputs.at("x").data[0], 7.0);
}

TEST(ImplementationSlots, UnknownEntryNamesTheKey) {
  std::vector<FunctionSpec> v = TwoGpgs();
  EXPECT_EQ(LogicError(v, {{Impl::kCuda, "kl", "gpg", Marker(1)}}),
            "cuda implementation of kl/gpg: no such registry entry");
}

TEST(ImplementationSlots, SecondRegistrationIsRefused) {
  std::vector<FunctionSpec> v = TwoGpgs();
  EXPECT_EQ(LogicError(v, {{Impl::kCuda, "advantage", "gpg", Marker(1)}, {Impl::kCuda, "advantage", "gpg", Marker(2)}}),
            "cuda implementation of advantage/gpg: registered twice");
}

TEST(ImplementationSlots, OracleSlotIsTheFamilysOwn) {
  std::vector<FunctionSpec> v = TwoGpgs();
  EXPECT_NE(LogicError(v, {{Impl::kOracle, "advantage", "gpg", Marker(1)}}), "");
}

TEST(ImplementationSlots, EmptySlotIsNull) {
  FunctionSpec s;
  EXPECT_EQ(s.Implementation(Impl::kOracle), nullptr);
  EXPECT_EQ(s.Implementation(Impl::kCuda), nullptr);
}

TEST(ImplementationNames, RoundTrip) {
  for (Impl impl : kImpls) EXPECT_EQ(ParseImpl(ImplName(impl)), impl);
  EXPECT_FALSE(ParseImpl("").has_value());
  EXPECT_FALSE(ParseImpl("CUDA").has_value());
}

// Once the registry is built, a registration could no longer reach it.
TEST(ImplementationSlotsDeathTest, LateRegistrationStops) {
  ASSERT_FALSE(Registry().empty());
  EXPECT_DEATH(RegisterImplementation(Impl::kCuda, "kl", "k1", Marker(1)), "registered after the registry was built");
}

}  // namespace
}  // namespace verlconf
