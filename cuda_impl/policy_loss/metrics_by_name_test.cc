// A policy loss's metrics are the fields of PolicyLossScalars its spec names; a name
// with no field stops the entry with the name instead of reporting another metric.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "cuda_impl/policy_loss/policy_loss_common.cuh"

namespace verlconf::cuda {
namespace {

PolicyLossScalars Scalars() {
  PolicyLossScalars s;
  s.pg_clipfrac = 0.25f;
  s.ppo_kl = 0.5f;
  s.pg_clipfrac_lower = 0.125f;
  return s;
}

TEST(PackLossMetrics, EachNameReadsItsField) {
  const std::map<std::string, double> m =
      PackLossMetrics({"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"}, Scalars());
  EXPECT_EQ(m, (std::map<std::string, double>{
                   {"actor/pg_clipfrac", 0.25}, {"actor/ppo_kl", 0.5}, {"actor/pg_clipfrac_lower", 0.125}}));
  // verl's deprecated compute_policy_loss reports the bare names.
  EXPECT_EQ(PackLossMetrics({"pg_clipfrac_lower"}, Scalars()),
            (std::map<std::string, double>{{"pg_clipfrac_lower", 0.125}}));
  EXPECT_TRUE(PackLossMetrics({}, Scalars()).empty());
}

TEST(PackLossMetrics, AnUnknownNameIsALogicErrorNamingIt) {
  try {
    PackLossMetrics({"actor/ppo_kl", "actor/pg_clipfrac_upper"}, Scalars());
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("actor/pg_clipfrac_upper"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace verlconf::cuda
