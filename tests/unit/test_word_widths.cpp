// Per-tensor word widths (an 8-bit chip with 32-bit outputs): the YAML keys
// and their errors, capacities and traffic in bytes on a mapping small
// enough to count by hand, the mapspace's capacity walk agreeing with the
// analysis, and design-point sweeps carrying and sweeping the widths.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/constraints.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>

#include "constraints_yaml.hpp"
#include "host/sweep.hpp"
#include "input_error.hpp"
#include "test_chips.hpp"
#include "yaml_reader.hpp"

namespace mapex {
namespace {

using test::access;
using test::kPlainL1;

// C[M][N] += A[M][K] * B[K][N] with M 4, N 1, K 2: 8 MACs.
Operator gemm() { return make_gemm("g", 4, 1, 2); }

// The keep/bypass tests' chip (L1 per PE / 2 PEs / L2 / DRAM, 1 B/cycle,
// single-buffered) with extra top-level keys.
std::string chip_yaml(const std::string& widths, const std::string& l1 = kPlainL1) {
  std::string text = test::keep_chip_yaml(l1);
  const std::string at = "word_bits: 8\n";
  text.insert(text.find(at) + at.size(), widths);
  return text;
}

// One MAC's operands per L1, M split over the 2 PEs, the whole GEMM at L2.
const std::string kMapping =
    "L1: {tile: {K: 1}}\nPEs: {split: {M: 2}}\nL2: {tile: {M: 4, N: 1, K: 2}, order: [M, K]}\n";

std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }

TEST(WordWidths, YamlKeysResolveByNameThenRoleThenDefault) {
  const Operator op = gemm();
  const Architecture plain = Architecture::parse(chip_yaml(""), "chip.yaml");
  EXPECT_TRUE(plain.word_widths().empty());
  EXPECT_TRUE(plain.uniform_word_bits(op));
  const Architecture wide =
      Architecture::parse(chip_yaml("output_word_bits: 32\ntensor_word_bits: {B: 16}\n"), "c.yaml");
  EXPECT_EQ(wide.word_bits_of(op.tensors()[0]), 8);   // A: the default
  EXPECT_EQ(wide.word_bits_of(op.tensors()[1]), 16);  // B: by name
  EXPECT_EQ(wide.word_bits_of(op.tensors()[2]), 32);  // C: the output
  EXPECT_FALSE(wide.uniform_word_bits(op));
  EXPECT_EQ(wide.first_wide_tensor(op), "B");
  // A name beats the role; naming a tensor the operator lacks changes nothing.
  const Architecture named =
      Architecture::parse(chip_yaml("output_word_bits: 32\ntensor_word_bits: {C: 16}\n"), "c.yaml");
  EXPECT_EQ(named.word_bits_of(op.tensors()[2]), 16);
  const Architecture other =
      Architecture::parse(chip_yaml("tensor_word_bits: {Weight: 16}\n"), "c.yaml");
  EXPECT_TRUE(other.uniform_word_bits(op));
  // Widths are part of the chip's identity (job ids), and only when set.
  EXPECT_NE(plain.content_hash(), wide.content_hash());
  EXPECT_EQ(plain.content_hash(),
            Architecture::parse(chip_yaml("tensor_word_bits: {}\n"), "c.yaml").content_hash());
}

TEST(WordWidths, BadWidthsNameFileLineKeyAndReason) {
  auto parse = [](const std::string& widths) {
    return error_of([&] { (void)Architecture::parse(chip_yaml(widths), "chip.yaml"); });
  };
  const std::string odd = parse("output_word_bits: 12\n");
  EXPECT_NE(odd.find("chip.yaml:4:"), std::string::npos) << odd;
  EXPECT_NE(odd.find("output_word_bits"), std::string::npos) << odd;
  EXPECT_NE(odd.find("multiple of 8"), std::string::npos) << odd;
  const std::string list = parse("tensor_word_bits: [16]\n");
  EXPECT_NE(list.find("chip.yaml:4:"), std::string::npos) << list;
  EXPECT_NE(list.find("expected a map from tensor name to bits"), std::string::npos) << list;
  const std::string zero = parse("tensor_word_bits: {A: 0}\n");
  EXPECT_NE(zero.find("tensor_word_bits"), std::string::npos) << zero;
  EXPECT_NE(parse("output_word_bits: x\n").find("output_word_bits"), std::string::npos);
  EXPECT_NE(parse("output_word_bits: 99999999999999999999\n").find("output_word_bits"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)Architecture::make("c", 1000, 8, 1, 1, {}, WordWidths{12, {}});
            }).find("output_word_bits must be a positive multiple of 8"),
            std::string::npos);
}

// Hand count. Words moved are the same at any width (the analysis counts
// words); bytes are what buffers hold and ports carry. L1 holds one word
// of each tensor: 1 + 1 + 4 = 6 B with 32-bit C (3 B at 8 bits). L2 holds
// the whole GEMM: A 8 words, B 2, C 4: 8 + 2 + 16 = 26 B (14 B). DRAM
// moves each tensor once, A 8 and B 2 words in, C 4 out: 26 B at 1 B per
// cycle is 26 cycles (14). Energies stay per word.
TEST(WordWidths, CapacitiesAndTransfersCountBytesPerTensor) {
  const Operator op = gemm();
  const Architecture narrow = Architecture::parse(chip_yaml(""), "c.yaml");
  const Architecture wide = Architecture::parse(chip_yaml("output_word_bits: 32\n"), "c.yaml");
  const Mapping m = Mapping::parse(kMapping, "m.yaml", op, wide);
  const auto a8 = analyse(op, narrow, m);
  const auto a32 = analyse(op, wide, m);
  EXPECT_DOUBLE_EQ(a8.required_bytes[0], 3);
  EXPECT_DOUBLE_EQ(a32.required_bytes[0], 6);
  EXPECT_DOUBLE_EQ(a8.required_bytes[2], 14);
  EXPECT_DOUBLE_EQ(a32.required_bytes[2], 26);
  const auto l8 = level_metrics(op, narrow, a8);
  const auto l32 = level_metrics(op, wide, a32);
  EXPECT_DOUBLE_EQ(access(l32, "DRAM", "A").reads, 8);
  EXPECT_DOUBLE_EQ(access(l32, "DRAM", "B").reads, 2);
  EXPECT_DOUBLE_EQ(access(l32, "DRAM", "C").writes, 4);
  EXPECT_DOUBLE_EQ(access(l32, "DRAM", "C").reads, 0);
  EXPECT_DOUBLE_EQ(l8.back().transfer_cycles, 14);
  EXPECT_DOUBLE_EQ(l32.back().transfer_cycles, 26);
  for (size_t i = 0; i < l8.size(); ++i) EXPECT_DOUBLE_EQ(l8[i].energy_pj, l32[i].energy_pj);
  // The whole-layer peak: 26 B through DRAM's (and the network's) 1 B/cycle.
  EXPECT_DOUBLE_EQ(roofline_peak(op, narrow).cycles, 14);
  EXPECT_DOUBLE_EQ(roofline_peak(op, wide).cycles, 26);
  // A 5 B L1 holds the 8-bit tiles, not the 32-bit ones.
  const std::string small = "  - {name: L1, kind: buffer, size_bytes: 5, double_buffered: false}\n";
  EXPECT_FALSE(capacity_error(op, Architecture::parse(chip_yaml("", small), "c.yaml"), m));
  const auto error =
      capacity_error(op, Architecture::parse(chip_yaml("output_word_bits: 32\n", small), "c"), m);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, "L1: tiles need 6 B, capacity 5 B");
}

// The mapspace's capacity walk uses the same bytes as the analysis: the
// mappings it counts as fitting are exactly those capacity_error accepts.
TEST(WordWidths, MapspaceCountsWhatTheAnalysisAccepts) {
  const Operator op = make_gemm("g", 8, 4, 6);
  const std::string l1 = "  - {name: L1, kind: buffer, size_bytes: 24, double_buffered: false}\n";
  auto options = [&](const Architecture& arch, bool capacity) {
    const std::string yaml = std::string("check_capacity: ") + (capacity ? "true" : "false");
    return resolve(parse_constraint_spec("c.yaml", yaml::load_text(yaml, "c.yaml")), op, arch);
  };
  std::uint64_t fits_narrow = 0;
  for (const std::string widths : {"", "output_word_bits: 32\ntensor_word_bits: {A: 16}\n"}) {
    const Architecture arch = Architecture::parse(chip_yaml(widths, l1), "c.yaml");
    const Mapspace all(op, arch, options(arch, false));
    std::uint64_t fits = 0;
    Mapping m;
    for (Mapspace::Cursor c(all); c.next(m);) fits += !capacity_error(op, arch, m);
    const Mapspace checked(op, arch, options(arch, true));
    EXPECT_EQ(checked.count_valid(), BigInt(fits)) << widths;
    std::uint64_t walked = 0;
    for (Mapspace::Cursor c(checked); c.next(m); ++walked)
      EXPECT_FALSE(capacity_error(op, arch, m));
    EXPECT_EQ(walked, fits) << widths;
    if (widths.empty())
      fits_narrow = fits;
    else
      EXPECT_LT(fits, fits_narrow);  // wider words: fewer tiles fit
  }
}

TEST(WordWidths, SweepsCarryAndSweepTheOutputWidth) {
  const Architecture base = Architecture::parse(chip_yaml("output_word_bits: 32\n"), "c.yaml");
  const Architecture same = host::apply_architecture(base, {}, "same");
  EXPECT_EQ(same.word_widths().output_bits, 32);
  host::Assignment a;
  a.key = "output_word_bits";
  a.value = YAML::Load("16");
  const Architecture swept = host::apply_architecture(base, {a}, "swept");
  EXPECT_EQ(swept.word_widths().output_bits, 16);
  EXPECT_EQ(host::architecture_value(swept, "output_word_bits"), 16.0);
  a.value = YAML::Load("12");
  EXPECT_NE(error_of([&] {
              (void)host::apply_architecture(base, {a}, "bad");
            }).find("expected a multiple of 8"),
            std::string::npos);
}

}  // namespace
}  // namespace mapex
