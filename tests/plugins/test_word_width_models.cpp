// Every cost model on a chip whose tensors have their own word widths: the
// models with per-tensor bytes (roofline) count them, the models with one
// word size refuse the chip at bind time with the width key and the
// tensor, never a result in the wrong unit.

#include <gtest/gtest.h>

#include <mapex/error.hpp>
#include <mapex/generators.hpp>

#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex::host {
namespace {

using test::registry;

Architecture chip(const std::string& widths) {
  std::string text = test::keep_chip_yaml(test::kPlainL1);
  const std::string at = "word_bits: 8\n";
  text.insert(text.find(at) + at.size(), widths);
  return Architecture::parse(text, "chip.yaml");
}

// The bind-time refusal of `model`, as "key: problem", or "" when it binds.
std::string refusal(const std::string& model, const Operator& op, const Architecture& arch) {
  try {
    (void)registry().make_costmodel(model, {})->bind(op, arch);
  } catch (const InputError& e) {
    return e.key() + ": " + e.problem();
  }
  return "";
}

TEST(WordWidthModels, RooflineCountsBytesTheOthersRefuseByKey) {
  const Operator op = make_gemm("g", 4, 1, 2);
  const Architecture wide = chip("output_word_bits: 32\n");
  const Architecture narrow = chip("");
  // Whole GEMM at L2, one MAC's operands per L1, M over the 2 PEs.
  const Mapping m = Mapping::parse(
      "L1: {tile: {K: 1}}\nPEs: {split: {M: 2}}\nL2: {tile: {M: 4, N: 1, K: 2}, order: [M, K]}\n",
      "m.yaml", op, wide);
  const Metrics r8 = test::evaluate_with("roofline", op, narrow, m);
  const Metrics r32 = test::evaluate_with("roofline", op, wide, m);
  ASSERT_TRUE(r8.valid && r32.valid) << r8.invalid_reason << r32.invalid_reason;
  // The network is the bottleneck: it carries A 8 and B 4 words (B's 2
  // words to each of the 2 PEs) of 1 B down and C 4 words of 1 or 4 B up,
  // at 1 B per cycle: 16 or 28 cycles (DRAM: 14 or 26; compute: 4).
  EXPECT_DOUBLE_EQ(test::access(r32.levels, "PEs", "A").reads, 8);
  EXPECT_DOUBLE_EQ(test::access(r32.levels, "PEs", "B").reads, 4);
  EXPECT_DOUBLE_EQ(test::access(r32.levels, "PEs", "C").writes, 4);
  EXPECT_DOUBLE_EQ(r8.latency_cycles, 16);
  EXPECT_DOUBLE_EQ(r32.latency_cycles, 28);
  EXPECT_DOUBLE_EQ(r8.energy_pj, r32.energy_pj);  // energies are per word
  for (const std::string model : {"mdc", "tensor_centric", "db_locality"}) {
    EXPECT_EQ(refusal(model, op, narrow), "") << model;
    const std::string why = refusal(model, op, wide);
    EXPECT_EQ(why.rfind("output_word_bits: ", 0), 0u) << model << ": " << why;
    EXPECT_NE(why.find("one word size for every tensor"), std::string::npos) << why;
    EXPECT_NE(why.find("tensor 'C' of 'g' 32-bit words beside 8-bit ones"), std::string::npos)
        << why;
  }
  const std::string named = refusal("mdc", op, chip("tensor_word_bits: {A: 16}\n"));
  EXPECT_EQ(named.rfind("tensor_word_bits: ", 0), 0u) << named;
}

}  // namespace
}  // namespace mapex::host
