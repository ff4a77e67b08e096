// The tensor_centric cost model (KAPLA §IV-A) against counts made by hand,
// and its validity rules (fit with shares, stacks within the array shape).

#include <gtest/gtest.h>

#include <mapex/directives.hpp>
#include <mapex/generators.hpp>
#include <mapex/nn_dataflow_bridge.hpp>

#include "engine.hpp"
#include "test_chips.hpp"

namespace mapex {
namespace {

const TensorAccess& access(const Metrics& m, const std::string& level, const std::string& tensor) {
  for (const auto& l : m.levels)
    if (l.level == level)
      for (const auto& t : l.tensors)
        if (t.tensor == tensor) return t;
  static const TensorAccess none{"none", -1, -1};
  ADD_FAILURE() << level << "/" << tensor << " missing";
  return none;
}

double level_energy(const Metrics& m, const std::string& level) {
  for (const auto& l : m.levels)
    if (l.level == level) return l.energy_pj;
  return -1;
}

// C[M][N] += A[M][K] * B[K][N], 4x4x4, on L1 / 2 PEs / L2 / DRAM.
// L1 holds K=4 of one (m, n); the PEs split M by 2; L2 loops N (4 trips)
// over the stacked span {M2 N1 K4}; DRAM loops M (2 trips).
struct GemmCase {
  Operator op = make_gemm("g", 4, 4, 4);
  Architecture arch = test::chip({2});
  Mapping m = [this] {
    Mapping x = Mapping::trivial(op, arch);
    x.level(0).tile = {1, 1, 4};
    x.level(1).split = {2, 1, 1};
    x.level(2).tile = {2, 4, 4};
    x.level(2).order = {0, 2, 1};  // N innermost
    x.level(3).order = {1, 2, 0};  // M innermost
    return x;
  }();
};

TEST(TensorCentric, GemmAccessCountsByHand) {
  GemmCase g;
  const Metrics r = tc::evaluate(g.op, g.arch, g.m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  // L2 -> L1. A[M][K]: the stacked tile (8 words) changes only with the
  // DRAM M loop: 2 x 8 = 16 words, broadcast once, one copy per PE (16).
  EXPECT_DOUBLE_EQ(access(r, "L2", "A").reads, 16);
  EXPECT_DOUBLE_EQ(access(r, "L1", "A").writes, 16);
  // B[K][N]: 4 words per stacked tile, reloaded for every N (4) of every M
  // (2): 32 words from L2; each of the 2 PEs keeps a copy: 64 writes.
  EXPECT_DOUBLE_EQ(access(r, "L2", "B").reads, 32);
  EXPECT_DOUBLE_EQ(access(r, "L1", "B").writes, 64);
  // C[M][N]: 2 words per tile, 8 distinct tiles, never revisited: 16
  // words written up, none read back down. L1 reads them out (16) plus
  // one read and one write per MAC (64).
  EXPECT_DOUBLE_EQ(access(r, "L2", "C").writes, 16);
  EXPECT_DOUBLE_EQ(access(r, "L2", "C").reads, 16);  // 16 go on to DRAM
  EXPECT_DOUBLE_EQ(access(r, "L1", "C").reads, 64 + 16);
  EXPECT_DOUBLE_EQ(access(r, "L1", "C").writes, 64);
  EXPECT_DOUBLE_EQ(access(r, "L1", "A").reads, 64);
  EXPECT_DOUBLE_EQ(access(r, "L1", "B").reads, 64);
  // DRAM -> L2: A by M (16), B once (16), C written once (16).
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "A").reads, 16);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "B").reads, 16);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "C").writes, 16);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "C").reads, 0);
  // Energy: L1 208 reads x 1 + 144 writes x 2 = 496; L2 (64 + 48) x 10 =
  // 1120; DRAM 48 x 100 = 4800; MACs 64.
  EXPECT_DOUBLE_EQ(level_energy(r, "L1"), 496);
  EXPECT_DOUBLE_EQ(level_energy(r, "L2"), 1120);
  EXPECT_DOUBLE_EQ(level_energy(r, "DRAM"), 4800);
  EXPECT_DOUBLE_EQ(r.energy_pj, 496 + 1120 + 4800 + 64);
  // Latency: 4 MACs per tile x 8 tiles = 32 compute cycles; DRAM moves 48
  // words at 1 B/cycle; the PE network carries 16 + 32 + 16 = 64 words at
  // 1 B/cycle: the NoC bounds it.
  EXPECT_DOUBLE_EQ(r.compute_cycles, 32);
  EXPECT_DOUBLE_EQ(r.latency_cycles, 64);
  EXPECT_EQ(r.bound_by, "PEs");
  EXPECT_DOUBLE_EQ(r.utilization, 64.0 / (64 * 2));
}

TEST(TensorCentric, ForwardingServesCopiesFromNeighbours) {
  GemmCase g;
  Level l1 = test::buffer("L1", 1 << 20, 1, 2);
  Level pes = test::spatial("PEs", {2});
  pes.noc.forwarding = true;
  pes.noc.hop_energy_pj = 1;
  g.arch = Architecture::make("fwd", 1000, 8, 1, 1,
                              {l1, pes, test::buffer("L2", 1 << 20, 10, 10), test::dram(100)});
  const Metrics r = tc::evaluate(g.op, g.arch, g.m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  // B: 32 unique words from L2; the second PE's 32 copies come from its
  // neighbour's buffer (read there) instead.
  EXPECT_DOUBLE_EQ(access(r, "L2", "B").reads, 32);
  EXPECT_DOUBLE_EQ(access(r, "L1", "B").reads, 64 + 32);
  // Hops: A 16, B 32 + 32, C 16 (one per word per destination).
  EXPECT_DOUBLE_EQ(level_energy(r, "PEs"), 96);
}

TEST(TensorCentric, WithoutBroadcastEveryCopyIsReadAndTravels) {
  GemmCase g;
  Level pes = test::spatial("PEs", {2}, /*multicast=*/false);
  pes.noc.hop_energy_pj = 1;
  g.arch = Architecture::make("uni", 1000, 8, 1, 1,
                              {test::buffer("L1", 1 << 20, 1, 2), pes,
                               test::buffer("L2", 1 << 20, 10, 10), test::dram(100)});
  const Metrics r = tc::evaluate(g.op, g.arch, g.m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  EXPECT_DOUBLE_EQ(access(r, "L2", "B").reads, 64);
  // Unicast words travel the mean distance of a 2-unit array (1 hop):
  // A 16 + B 64, plus C 16 up.
  EXPECT_DOUBLE_EQ(level_energy(r, "PEs"), 96);
}

// K (the reduction) split over the 2 PEs: every C word has two partial
// sums. With reduction the network adds them (16 writes up); without, all
// 32 reach L2, which adds 16 of them to its running sum (16 more reads, on
// top of the 16 that go on to DRAM).
TEST(TensorCentric, WithoutReductionTheParentAddsEveryPartialSum) {
  for (bool reduction : {true, false}) {
    Level pes = test::spatial("PEs", {2});
    pes.noc.reduction = reduction;
    const Operator op = make_gemm("g", 4, 4, 4);
    const Architecture arch =
        Architecture::make("red", 1000, 8, 1, 1,
                           {test::buffer("L1", 1 << 20, 1, 2), pes,
                            test::buffer("L2", 1 << 20, 10, 10), test::dram(100)});
    Mapping m = Mapping::trivial(op, arch);
    m.level(0).tile = {1, 1, 2};
    m.level(1).split = {1, 1, 2};
    m.level(2).tile = {4, 4, 4};
    const Metrics r = tc::evaluate(op, arch, m);
    ASSERT_TRUE(r.valid) << r.invalid_reason;
    EXPECT_DOUBLE_EQ(access(r, "L2", "C").writes, reduction ? 16 : 32);
    EXPECT_DOUBLE_EQ(access(r, "L2", "C").reads, reduction ? 16 : 32);
    EXPECT_DOUBLE_EQ(access(r, "L1", "C").writes, 64);  // one per MAC either way
  }
}

// nn_dataflow's model has no unicast network: a chip without multicast or
// reduction is refused, naming the level and the key.
TEST(TensorCentric, NnDataflowModelRefusesANetworkWithoutMulticastOrReduction) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 4, 6, 6, 3, 3});
  for (const std::string key : {"multicast", "reduction"}) {
    Level pes = test::spatial("PEs", {2, 2});
    (key == "multicast" ? pes.noc.multicast : pes.noc.reduction) = false;
    const Architecture arch =
        Architecture::make("uni", 1000, 8, 1, 1,
                           {test::buffer("REGF", 64, 1, 1), pes,
                            test::buffer("GBUF", 1 << 16, 6, 6), test::dram(200)});
    ndf::Problem pr;
    const auto err = ndf::make_problem(op, arch, "", "", "arch", pr);
    ASSERT_TRUE(err.has_value()) << key;
    EXPECT_NE(err->find("level 'PEs', key noc." + key), std::string::npos) << *err;
  }
}

TEST(TensorCentric, SlidingWindowKeepsTheOverlap) {
  // 1-D convolution O[P] += I[P + R] * W[R], P = 8, R = 3: a 3-word input
  // window slides by one per P step inside the L2 tile; only the new word
  // is fetched (10 input words in all, not 8 x 3).
  const Operator op = make_conv2d("c", Conv2dShape{1, 1, 1, 10, 1, 3, 1});
  const Architecture arch = test::chip({1});
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {1, 1, 1, 1, 1, 3, 1};  // one output, all 3 taps
  m.level(2).tile = {1, 1, 1, 8, 1, 3, 1};
  const Metrics r = tc::evaluate(op, arch, m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  EXPECT_DOUBLE_EQ(access(r, "L2", "Input").reads, 10);
  EXPECT_DOUBLE_EQ(access(r, "L2", "Weight").reads, 3);
  EXPECT_DOUBLE_EQ(access(r, "L2", "Output").writes, 8);
}

TEST(TensorCentric, PartialSumsComeBackWhenReductionIsOutside) {
  // K (the reduction) split in two L2 passes outside N: each C word is
  // written up twice and read back once.
  const Operator op = make_gemm("g", 1, 2, 4);
  const Architecture arch = test::chip({1});
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {1, 1, 2};
  m.level(2).tile = {1, 2, 4};
  m.level(2).order = {0, 2, 1};  // K outside N
  const Metrics r = tc::evaluate(op, arch, m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  EXPECT_DOUBLE_EQ(access(r, "L2", "C").writes, 4);
  EXPECT_DOUBLE_EQ(access(r, "L2", "C").reads, 2 + 2);  // 2 back down, 2 on to DRAM
}

TEST(TensorCentric, BufferSharingStoresReplicatedTensorsOnce) {
  // Two node buffers with same-level forwarding: split N over them and A
  // (which N does not index) is replicated, so each keeps half of it.
  Level nodes = test::spatial("nodes", {2});
  nodes.noc.forwarding = true;
  const Architecture arch =
      Architecture::make("share", 1000, 8, 1, 1,
                         {test::buffer("L1", 1 << 10), test::spatial("PEs", {1}),
                          test::buffer("L2", 24), nodes, test::dram()});
  const Operator op = make_gemm("g", 2, 2, 4);
  Mapping m = Mapping::trivial(op, arch);
  m.level(2).tile = {2, 1, 4};  // A 8 words, B 4, C 2
  m.level(3).split = {1, 2, 1};
  EXPECT_EQ(sharing_factor(op, arch, m, 2, 0), 2);
  // (8 / 2 + 4 + 2) words x 2 (double-buffered) = 20 B fit 24 B; without
  // sharing it would need 28 B.
  const Metrics r = tc::evaluate(op, arch, m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  EXPECT_DOUBLE_EQ(r.levels[2].required_bytes, 20);
  Level plain = test::spatial("nodes", {2});
  const Architecture no_share =
      Architecture::make("plain", 1000, 8, 1, 1,
                         {test::buffer("L1", 1 << 10), test::spatial("PEs", {1}),
                          test::buffer("L2", 24), plain, test::dram()});
  const Metrics s = tc::evaluate(op, no_share, m);
  EXPECT_FALSE(s.valid);
  EXPECT_EQ(s.invalid_reason, "L2: tensors need 28 B (double-buffered), capacity 24 B");
}

TEST(TensorCentric, StacksMustFitTheArrayShape) {
  EXPECT_TRUE(tc::fits_array({4, 4}, {8, 8}));
  EXPECT_TRUE(tc::fits_array({8, 8}, {8, 8}));
  EXPECT_TRUE(tc::fits_array({2, 2, 4}, {4, 4}));
  EXPECT_TRUE(tc::fits_array({3, 2}, {8}));
  EXPECT_FALSE(tc::fits_array({16}, {8, 8}));
  EXPECT_FALSE(tc::fits_array({3, 3}, {8}));
  EXPECT_FALSE(tc::fits_array({4, 4, 8}, {8, 8}));
  const Operator op = make_gemm("g", 16, 1, 1);
  const Architecture arch = test::chip({8, 8});
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split = {16, 1, 1};  // 16 <= 64 units, but no axis holds 16
  m.level(2).tile = {16, 1, 1};
  const Metrics r = tc::evaluate(op, arch, m);
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.invalid_reason, "PEs: the stacks (M16) do not fit the array shape 8x8");
}

TEST(TensorCentric, IdleCostIsChargedOverTheLatency) {
  GemmCase g;
  const Metrics base = tc::evaluate(g.op, g.arch, g.m);
  Level l2 = test::buffer("L2", 1 << 20, 10, 10);
  l2.idle_energy_pj_per_cycle = 3;
  g.arch = Architecture::make(
      "idle", 1000, 8, 1, 1,
      {test::buffer("L1", 1 << 20, 1, 2), test::spatial("PEs", {2}), l2, test::dram(100)});
  const Metrics r = tc::evaluate(g.op, g.arch, g.m);
  EXPECT_DOUBLE_EQ(r.energy_pj - base.energy_pj, 3 * 64);
}

TEST(TensorCentric, MalformedMappingIsInvalidNotACrash) {
  GemmCase g;
  g.m.level(1).split = {4, 1, 1};  // more than the 2 PEs
  const Metrics r = tc::evaluate(g.op, g.arch, g.m);
  EXPECT_FALSE(r.valid);
  EXPECT_FALSE(r.invalid_reason.empty());
}

}  // namespace
}  // namespace mapex
