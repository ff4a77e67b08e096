// The plain `evaluate --maestro` argument reader (host/cli_light.hpp)
// against Boost.ProgramOptions: where it accepts, the same options; where
// the full parser would reject or might read the arguments otherwise, it
// declines.

#include <gtest/gtest.h>

#include <mapex/error.hpp>
#include <string>
#include <vector>

#include "host/cli_light.hpp"

namespace mapex::host {
namespace {

using Args = std::vector<std::string>;

void expect_same(const EvaluateOptions& a, const EvaluateOptions& b) {
  EXPECT_EQ(a.maestro, b.maestro);
  EXPECT_EQ(a.hw, b.hw);
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.costmodel, b.costmodel);
  EXPECT_EQ(a.costmodel_defaulted, b.costmodel_defaulted);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.maestro_compat, b.maestro_compat);
  EXPECT_EQ(a.help, b.help);
  EXPECT_EQ(a.workload, b.workload);
  EXPECT_EQ(a.arch_path, b.arch_path);
  EXPECT_EQ(a.mapping_path, b.mapping_path);
}

TEST(PlainMaestroOptions, AgreeWithTheFullParserWhereTheyAccept) {
  const std::vector<Args> accepted = {
      {"--maestro", "m.m", "--hw", "h.m"},
      {"--hw", "h.m", "--maestro", "m.m", "--format", "csv"},
      {"--maestro=m.m", "--hw=h.m", "--format=json"},
      {"--maestro", "m.m", "--hw", "h.m", "--costmodel", "roofline"},
      {"--maestro", "m.m", "--hw", "h.m", "--costmodel=mdc", "--maestro-compat"},
      {"--maestro-compat", "--maestro", "m.m", "--hw", "h.m", "--param", "a=1", "--param=b=x=2"},
      {"--maestro", "a b.m", "--hw", "h.m", "--format", "table"},
  };
  for (const auto& args : accepted) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const auto plain = parse_plain_maestro_options(args);
    ASSERT_TRUE(plain.has_value());
    expect_same(*plain, parse_evaluate_options_in_full(args));
  }
  const auto plain = parse_plain_maestro_options({"--maestro", "m.m", "--hw", "h.m"});
  EXPECT_EQ(plain->format, "table");
  EXPECT_EQ(plain->costmodel, "roofline");
  EXPECT_TRUE(plain->costmodel_defaulted);
  EXPECT_FALSE(plain->maestro_compat);
}

TEST(PlainMaestroOptions, DeclineWhatTheFullParserReadsOrRejects) {
  const std::vector<Args> declined = {
      {},
      {"--help"},
      {"-h"},
      {"--maestro", "m.m"},
      {"--hw", "h.m"},
      {"--maestro", "m.m", "--hw"},
      {"--maestro", "m.m", "--hw", "h.m", "--maestro", "n.m"},
      {"--maestro", "m.m", "--hw", "h.m", "--maestro-compat", "--maestro-compat"},
      {"--maestro", "m.m", "--hw", "h.m", "--maestro-compat=1"},
      {"--maestro", "m.m", "--hw", "h.m", "--format", "-x"},
      {"--maestro", "m.m", "--hw", ""},
      {"--maestro=", "--hw", "h.m"},
      {"--maes", "m.m", "--hw", "h.m"},
      {"--maestro", "m.m", "--hw", "h.m", "--workload", "w.yaml"},
      {"--maestro", "m.m", "--hw", "h.m", "extra"},
      {"--maestro", "m.m", "--hw", "h.m", "--"},
      {"--maestro", "m.m", "--hw", "h.m", "--bogus", "x"},
  };
  for (const auto& args : declined) {
    SCOPED_TRACE(::testing::PrintToString(args));
    EXPECT_FALSE(parse_plain_maestro_options(args).has_value());
  }
}

TEST(PlainMaestroOptions, RejectedArgumentsKeepTheFullParsersMessage) {
  for (const Args& args : {Args{"--maestro", "m.m", "--hw", "h.m", "--maestro", "n.m"},
                           Args{"--maestro", "m.m", "--hw", "h.m", "--bogus", "x"},
                           Args{"--maestro", "m.m", "--hw", "h.m", "extra"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    std::string full, combined;
    try {
      parse_evaluate_options_in_full(args);
    } catch (const InputError& e) {
      full = e.what();
    }
    try {
      parse_evaluate_options(args);
    } catch (const InputError& e) {
      combined = e.what();
    }
    EXPECT_FALSE(full.empty());
    EXPECT_EQ(combined, full);
  }
}

}  // namespace
}  // namespace mapex::host
