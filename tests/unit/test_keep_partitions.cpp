// Per-tensor keep/bypass in mappings and partitioned buffers in
// architectures: the YAML forms and their errors,
// the loop-nest analysis on mappings small enough to count by hand, the
// capacity rule of partitions, the mapspace's keep/bypass choices, the
// directive converters, and Timeloop's Eyeriss-like mapping of VGG16
// conv3_1 on the shipped preset.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/constraints.hpp>
#include <mapex/directives.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>

#include "constraints_yaml.hpp"
#include "input_error.hpp"
#include "test_chips.hpp"
#include "yaml_reader.hpp"

namespace mapex {
namespace {

const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

// L1 (one per PE, partitioned or not) / PEs (2) / L2 / DRAM; 8-bit words,
// nothing double-buffered, so bytes are words.
using test::access;
using test::kPartitionedL1;
using test::kPlainL1;
std::string chip_yaml(const std::string& l1) { return test::keep_chip_yaml(l1); }

// C[M][N] += A[M][K] * B[K][N] with M 4, N 1, K 2: 8 MACs.
Operator gemm() { return make_gemm("g", 4, 1, 2); }

// One MAC's operands per L1 (K innermost at L2), M split over the 2 PEs.
std::string mapping_yaml(const std::string& l1_keep, const std::string& l1_tile = "{K: 1}") {
  return "L1: {tile: " + l1_tile + l1_keep + "}\nPEs: {split: {M: 2}}\n" +
         "L2: {tile: {M: 4, N: 1, K: 2}, order: [M, K]}\n";
}

std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }

TEST(KeepBypass, YamlRoundTripsAndDefaultsToKeepingEverything) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  const Mapping plain = Mapping::parse(mapping_yaml(""), "m.yaml", op, arch);
  EXPECT_TRUE(plain.level(0).keep.empty());
  for (int t = 0; t < 3; ++t) EXPECT_TRUE(plain.keeps(op, arch, 0, t));
  EXPECT_FALSE(plain.keeps(op, arch, 1, 0));  // spatial levels hold nothing
  const Mapping m = Mapping::parse(mapping_yaml(", keep: [B, C]"), "m.yaml", op, arch);
  EXPECT_EQ(m.level(0).keep, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(m.keeping_levels(op, arch, 0), (std::vector<int>{2, 3}));
  const std::string text = m.to_yaml(op, arch);
  EXPECT_NE(text.find("keep: [B, C]"), std::string::npos) << text;
  EXPECT_EQ(Mapping::parse(text, "again.yaml", op, arch), m);
  EXPECT_FALSE(plain == m);
}

TEST(KeepBypass, BadKeepsNameFileLineKeyAndReason) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  auto parse = [&](const std::string& text) {
    return error_of([&] { (void)Mapping::parse(text, "m.yaml", op, arch); });
  };
  const std::string unknown = parse(mapping_yaml(", keep: [X]"));
  EXPECT_NE(unknown.find("m.yaml:1"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'keep'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown tensor 'X'"), std::string::npos) << unknown;
  EXPECT_NE(parse(mapping_yaml(", keep: [A, A]")).find("listed twice"), std::string::npos);
  EXPECT_NE(parse(mapping_yaml("") + "DRAM: {keep: [A]}\n").find("DRAM, which holds every"),
            std::string::npos);
  EXPECT_NE(parse("PEs: {split: {M: 2}, keep: [A]}\n").find("spatial and holds no data"),
            std::string::npos);
}

TEST(Partitions, YamlRuleSizesAddUpAndErrorsNameTheKey) {
  const Architecture arch = Architecture::parse(chip_yaml(kPartitionedL1), "chip.yaml");
  const Level& l1 = arch.levels()[0];
  ASSERT_EQ(l1.partitions.size(), 3u);
  EXPECT_EQ(l1.size_bytes, 6);  // the sum of the partitions
  EXPECT_DOUBLE_EQ(l1.read_energy_of("A"), 3);
  EXPECT_DOUBLE_EQ(l1.write_energy_of("A"), 5);
  EXPECT_DOUBLE_EQ(l1.read_energy_of("B"), 1);  // the level's, by default
  EXPECT_DOUBLE_EQ(l1.write_energy_of("C"), 2);
  EXPECT_NE(arch.content_hash(),
            Architecture::parse(chip_yaml(kPlainL1), "chip.yaml").content_hash());

  auto parse = [](const std::string& l1_text) {
    return error_of([&] { (void)Architecture::parse(chip_yaml(l1_text), "arch.yaml"); });
  };
  const std::string sum = parse(
      "  - name: L1\n    kind: buffer\n    size_bytes: 7\n    partitions:\n"
      "      - {name: a, tensors: [A], size_bytes: 4}\n"
      "      - {name: b, tensors: [B, C], size_bytes: 2}\n");
  EXPECT_NE(sum.find("arch.yaml:7"), std::string::npos) << sum;
  EXPECT_NE(sum.find("'size_bytes'"), std::string::npos) << sum;
  EXPECT_NE(sum.find("adding up to 6 B; size_bytes says 7 B"), std::string::npos) << sum;
  EXPECT_NE(parse("  - name: L1\n    kind: buffer\n    partitions:\n"
                  "      - {name: a, tensors: [A], size_bytes: 4}\n"
                  "      - {name: b, tensors: [A], size_bytes: 2}\n")
                .find("tensor 'A' is already in another partition"),
            std::string::npos);
  EXPECT_NE(parse("  - name: L1\n    kind: buffer\n    partitions:\n"
                  "      - {name: a, tensors: [A], size_bytes: 0}\n")
                .find("positive size"),
            std::string::npos);
  EXPECT_NE(parse("  - name: L1\n    kind: buffer\n    partitions:\n"
                  "      - {name: a, tensors: [], size_bytes: 2}\n")
                .find("at least one tensor"),
            std::string::npos);
  // The same rule holds for architectures built in code.
  Level l;
  l.name = "X";
  l.kind = LevelKind::kBuffer;
  l.size_bytes = 5;
  l.partitions = {Partition{"p", {"A"}, 4, 0, 0}};
  Level d;
  d.name = "DRAM";
  d.kind = LevelKind::kDram;
  d.bandwidth_gbps = 1;
  EXPECT_NE(error_of([&] {
              (void)Architecture::make("a", 1000, 8, 1, 1, {l, d});
            }).find("partitions add up to 4 B but size_bytes is 5 B"),
            std::string::npos);
}

// Hand counts (analysis.cpp's rules): A bypasses L1, so its 8 operand reads
// go to L2 and L1 never sees it; B and C are as before.
//   A: every MAC reads it (K, the innermost loop above, indexes it): L2
//      reads 8; L2 gets the 4x2 tile from DRAM once: L2 writes 8.
//   B: L1 reads 8 (one per MAC); L1 is refilled for each of the 8 L1 tiles
//      (K indexes B), the PE split of M multicasts: L2 reads 8 / 2 = 4.
//   C: K does not index C: one residency per M: L1 writes 4 and sends 4 up.
TEST(KeepBypass, BypassedTensorGoesStraightBetweenTheKeepingLevels) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  const Mapping kept = Mapping::parse(mapping_yaml(""), "m.yaml", op, arch);
  const Mapping bypass = Mapping::parse(mapping_yaml(", keep: [B, C]"), "m.yaml", op, arch);
  const auto before = level_metrics(op, arch, analyse(op, arch, kept));
  const auto after = level_metrics(op, arch, analyse(op, arch, bypass));

  EXPECT_DOUBLE_EQ(access(before, "L1", "A").reads, 8);
  EXPECT_DOUBLE_EQ(access(before, "L1", "A").writes, 8);
  EXPECT_DOUBLE_EQ(access(after, "L1", "A").reads, 0);
  EXPECT_DOUBLE_EQ(access(after, "L1", "A").writes, 0);
  EXPECT_DOUBLE_EQ(access(after, "L2", "A").reads, 8);
  EXPECT_DOUBLE_EQ(access(after, "L2", "A").writes, 8);
  EXPECT_DOUBLE_EQ(access(after, "PEs", "A").reads, 8);  // network words down
  for (const char* t : {"B", "C"}) {
    EXPECT_DOUBLE_EQ(access(after, "L1", t).reads, access(before, "L1", t).reads) << t;
    EXPECT_DOUBLE_EQ(access(after, "L2", t).reads, access(before, "L2", t).reads) << t;
  }
  EXPECT_DOUBLE_EQ(access(after, "L1", "B").reads, 8);
  EXPECT_DOUBLE_EQ(access(after, "L2", "B").reads, 4);
  EXPECT_DOUBLE_EQ(access(after, "L1", "C").writes, 4);
  EXPECT_DOUBLE_EQ(access(after, "L2", "C").writes, 4);
  // L1 energy: B 8 reads + 8 writes, C 4 reads + 4 writes at 1 and 2 pJ.
  for (const auto& l : after)
    if (l.level == "L1") {
      EXPECT_DOUBLE_EQ(l.energy_pj, (8 + 4) * 1 + (8 + 4) * 2);
    }
  // L1 needs no space for A.
  const auto a = analyse(op, arch, bypass);
  EXPECT_DOUBLE_EQ(a.required_bytes[0], 2);  // one word of B and one of C
}

// The loops of a bypassed level still run, and what is below keeps its
// tile across those that do not index it. L1 takes K 2 and bypasses C:
// each output is accumulated over L1's K loop by the MAC before it goes
// to L2, so L2 is updated 8 / 2 = 4 times (not once per MAC), with no
// read-back (each output is finished in one visit); L2 reads its 4 outputs
// once, to send them to DRAM; L1 has no C traffic.
TEST(KeepBypass, ReuseReadsThroughTheBypassedLevelsLoops) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  const Mapping m = Mapping::parse(mapping_yaml(", keep: [A, B]", "{K: 2}"), "m.yaml", op, arch);
  const auto levels = level_metrics(op, arch, analyse(op, arch, m));
  EXPECT_DOUBLE_EQ(access(levels, "L1", "C").reads + access(levels, "L1", "C").writes, 0);
  EXPECT_DOUBLE_EQ(access(levels, "L2", "C").writes, 4);
  EXPECT_DOUBLE_EQ(access(levels, "L2", "C").reads, 4);
  EXPECT_DOUBLE_EQ(access(levels, "DRAM", "C").writes, 4);
  EXPECT_DOUBLE_EQ(access(levels, "PEs", "C").writes, 4);  // network words up
}

TEST(Partitions, OneOverflowingPartitionIsACapacityErrorThatNamesIt) {
  const Architecture arch = Architecture::parse(chip_yaml(kPartitionedL1), "chip.yaml");
  const Operator op = gemm();
  // Tile K2: A needs 2 of its 4 B, C 1 of 1, but B needs 2 of 1 -- while
  // the level as a whole (5 of 6 B) would have room.
  const Mapping m = Mapping::parse(mapping_yaml("", "{K: 2}"), "m.yaml", op, arch);
  const auto error = capacity_error(op, arch, m);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, "L1/b: tiles of B need 2 B, partition capacity 1 B");
  // Bypassing B at L1 frees its partition: it fits.
  const Mapping bypass =
      Mapping::parse(mapping_yaml(", keep: [A, C]", "{K: 2}"), "m.yaml", op, arch);
  EXPECT_FALSE(capacity_error(op, arch, bypass));
  // Partition energies: A's L1 accesses at 3/5 pJ, C's at the level's.
  const auto levels = level_metrics(op, arch, analyse(op, arch, bypass));
  const auto& a = access(levels, "L1", "A");
  const auto& c = access(levels, "L1", "C");
  for (const auto& l : levels)
    if (l.level == "L1") {
      EXPECT_DOUBLE_EQ(l.energy_pj, a.reads * 3 + a.writes * 5 + c.reads * 1 + c.writes * 2);
    }
}

TEST(Partitions, KeepingATensorNoPartitionHoldsIsStructural) {
  const std::string l1 =
      "  - name: L1\n    kind: buffer\n    partitions:\n"
      "      - {name: a, tensors: [A], size_bytes: 4}\n"
      "      - {name: c, tensors: [C], size_bytes: 4}\n";
  const Architecture arch = Architecture::parse(chip_yaml(l1), "chip.yaml");
  const Operator op = gemm();
  // Default: B (no partition) bypasses L1.
  const Mapping m = Mapping::parse(mapping_yaml(""), "m.yaml", op, arch);
  EXPECT_FALSE(m.keeps(op, arch, 0, 1));
  const std::string e =
      error_of([&] { (void)Mapping::parse(mapping_yaml(", keep: [A, B]"), "m.yaml", op, arch); });
  EXPECT_NE(e.find("keeps B but no partition of the level holds it"), std::string::npos) << e;
  // A partitioned level none of whose partitions holds one of the
  // operator's tensors is refused (a preset meant for another operator).
  const Operator conv = make_conv2d("c", Conv2dShape{});
  Mapping trivial = Mapping::trivial(conv, arch);
  const auto why = trivial.structural_error(conv, arch);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("none of its partitions holds a tensor"), std::string::npos) << *why;
}

// The mapspace enumerates, samples and counts keep/bypass exactly: with
// two free tensors at one level the space is 4x, and the fixed rules cut it.
TEST(KeepBypass, MapspaceCountsEnumeratesAndSamplesTheChoices) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  auto options = [&](const std::string& yaml) {
    return resolve(parse_constraint_spec("c.yaml", yaml::load_text(yaml, "c.yaml")), op, arch);
  };
  const Mapspace base(op, arch, options("check_capacity: false\n"));
  // L1 and L2 are buffers: 2 x 3 choices, fix L2 to keep all and L1's C.
  const Mapspace space(op, arch,
                       options("check_capacity: false\nexplore_bypass: true\nlevels:\n"
                               "  L2: {keep: [A, B, C]}\n  L1: {keep: [C]}\n"));
  EXPECT_EQ(space.size(), base.size() * 4);
  EXPECT_EQ(space.count_valid(), space.size());
  std::uint64_t n = 0, bypassing_a = 0;
  Mapping m;
  for (Mapspace::Cursor c(space); c.next(m);) {
    ++n;
    EXPECT_TRUE(m.keeps(op, arch, 0, 2));
    EXPECT_TRUE(m.keeps(op, arch, 2, 0));
    bypassing_a += !m.keeps(op, arch, 0, 0);
    EXPECT_FALSE(space.reject_reason(m)) << m.to_yaml(op, arch);
  }
  EXPECT_EQ(BigInt(n), space.size());
  EXPECT_EQ(BigInt(bypassing_a) * 2, space.size());
  // Chunks cover the space once.
  std::uint64_t chunked = 0;
  for (const auto& chunk : space.chunks(3))
    for (Mapspace::Cursor c(space, chunk); c.next(m);) ++chunked;
  EXPECT_EQ(chunked, n);
  // Samples take every combination.
  std::mt19937_64 rng(7);
  std::set<std::vector<bool>> seen;
  for (int i = 0; i < 200; ++i) {
    const auto s = space.sample(rng);
    ASSERT_TRUE(s);
    seen.insert({s->keeps(op, arch, 0, 0), s->keeps(op, arch, 0, 1)});
  }
  EXPECT_EQ(seen.size(), 4u);
  // A mapping against a fixed rule is rejected by name.
  const Mapspace fixed(op, arch, options("levels:\n  L1: {bypass: [A]}\n"));
  EXPECT_EQ(fixed.size(), base.size());
  Mapping keeps_a = Mapping::parse(mapping_yaml(""), "m.yaml", op, arch);
  const auto why = fixed.reject_reason(keeps_a);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("keep:", 0), 0u) << *why;
  keeps_a.level(0).keep = {false, true, true};
  EXPECT_FALSE(fixed.reject_reason(keeps_a));
}

TEST(KeepBypass, MapspaceCapacityDependsOnTheChoice) {
  const Architecture arch = Architecture::parse(chip_yaml(kPartitionedL1), "chip.yaml");
  const Operator op = gemm();
  auto options = [&](const std::string& yaml) {
    return resolve(parse_constraint_spec("c.yaml", yaml::load_text(yaml, "c.yaml")), op, arch);
  };
  const Mapspace keep_b(op, arch, options("levels:\n  L1: {keep: [B]}\n"));
  const Mapspace bypass_b(op, arch, options("levels:\n  L1: {bypass: [B]}\n"));
  const Mapspace both(op, arch,
                      options("explore_bypass: true\nlevels:\n  L2: {keep: [A, B, C]}\n"
                              "  L1: {keep: [A, C]}\n"));
  EXPECT_EQ(keep_b.size(), bypass_b.size());
  // Bypassing B frees partition b: tiles with K2 at L1 now fit.
  EXPECT_LT(keep_b.count_valid(), bypass_b.count_valid());
  EXPECT_EQ(both.count_valid(), keep_b.count_valid() + bypass_b.count_valid());
  // Every mapping the enumeration yields fits; counting matches it.
  std::uint64_t n = 0;
  Mapping m;
  for (Mapspace::Cursor c(both); c.next(m); ++n) EXPECT_FALSE(capacity_error(op, arch, m));
  EXPECT_EQ(BigInt(n), both.count_valid());
}

TEST(KeepBypass, ConstraintErrorsNameTheKey) {
  const Architecture arch = Architecture::parse(chip_yaml(kPartitionedL1), "chip.yaml");
  const Operator op = gemm();
  auto err = [&](const std::string& yaml) {
    return error_of([&] {
      (void)resolve(parse_constraint_spec("c.yaml", yaml::load_text(yaml, "c.yaml")), op, arch);
    });
  };
  EXPECT_NE(err("levels:\n  PEs: {keep: [A]}\n").find("not a buffer"), std::string::npos);
  EXPECT_NE(err("levels:\n  L1: {keep: [A], bypass: [A]}\n").find("both kept and bypassed"),
            std::string::npos);
  EXPECT_NE(err("levels:\n  L1: {keep: [Z]}\n").find("Z"), std::string::npos);
}

TEST(KeepBypass, DirectiveConvertersCarryOrRefuseIt) {
  const Architecture arch = Architecture::parse(chip_yaml(kPlainL1), "chip.yaml");
  const Operator op = gemm();
  const Mapping m = Mapping::parse(mapping_yaml(", keep: [B, C]"), "m.yaml", op, arch);
  // KAPLA's tensor-centric directives: `bypass` on the tensor directive.
  const LayerDirectives d = to_directives(op, arch, m);
  const std::string text = format_directives(d, op);
  EXPECT_NE(text.find("tensor{A}(M=1, K=1, bypass)"), std::string::npos) << text;
  const auto parsed = parse_directives(text, "d.kd", {&op}, arch);
  ASSERT_EQ(parsed.size(), 1u);
  const Mapping back = to_mapping(parsed[0], op, arch, "d.kd");
  EXPECT_EQ(back.level(0).keep, m.level(0).keep);
  EXPECT_EQ(back, normalise_orders(m, op, arch));
  // MAESTRO's directives keep every tensor everywhere: refused by name.
  const std::string e = error_of([&] { (void)mdc::from_mapping(op, arch, m); });
  EXPECT_NE(e.find("level 'L1' bypasses tensor 'A'"), std::string::npos) << e;
  EXPECT_NE(e.find("MDC directives"), std::string::npos) << e;
}

TEST(Eyeriss, TimeloopsVgg16Conv31MappingFitsTheShippedPreset) {
  const Network vgg = Network::load(kExperiments + "/workloads/vgg16.yaml");
  const Operator* conv = nullptr;
  for (const auto& l : vgg.layers())
    if (l.op.name() == "conv3_1") conv = &l.op;
  ASSERT_TRUE(conv);
  const Architecture arch = Architecture::load(kExperiments + "/architectures/eyeriss_like.yaml");
  EXPECT_EQ(arch.num_pes(), 168);
  const Mapping m =
      Mapping::load(kExperiments + "/mappings/eyeriss_like_vgg16_conv3_1.yaml", *conv, arch);
  EXPECT_FALSE(capacity_error(*conv, arch, m));
  // The global buffer bypasses the weights; each scratchpad keeps its own.
  const int glb = arch.find_level("GLB");
  EXPECT_FALSE(m.keeps(*conv, arch, glb, 1));
  for (int t = 0; t < 3; ++t) EXPECT_TRUE(m.keeps(*conv, arch, 0, t));
  // Timeloop's utilised capacities: ifmap 24, weights 192, psum 8 words;
  // the global buffer's inputs 5120 and outputs 7168.
  const Level& spad = arch.levels()[0];
  for (const auto& [partition, words] :
       std::vector<std::pair<std::string, double>>{{"ifmap", 24}, {"weights", 192}, {"psum", 8}})
    for (const auto& p : spad.partitions)
      if (p.name == partition) {
        EXPECT_DOUBLE_EQ(kept_bytes(*conv, arch, m, 0, m.level(0).tile, &p), words) << partition;
      }
  EXPECT_DOUBLE_EQ(kept_bytes(*conv, arch, m, glb, m.level(glb).tile), 5120 + 7168);
  const NestAnalysis a = analyse(*conv, arch, m);
  EXPECT_DOUBLE_EQ(a.compute_cycles, 5505024);  // 924,844,032 MACs on all 168 PEs
  // A tile one step larger overflows the ifmap scratchpad only.
  Mapping bigger = m;
  bigger.level(0).tile[static_cast<size_t>(conv->find_dim("C"))] = 16;
  bigger.level(glb).tile[static_cast<size_t>(conv->find_dim("C"))] = 64;
  ASSERT_FALSE(bigger.structural_error(*conv, arch));
  const auto why = capacity_error(*conv, arch, bigger);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("SPAD/ifmap: tiles of Input need 48 B", 0), 0u) << *why;
}

}  // namespace
}  // namespace mapex
