// The mdc plugin's figures that MAESTRO's analysis does not give by itself,
// on mappings small enough to count by hand: buffers marked single-buffered,
// the off-chip traffic and time of the DRAM loop nest over L2 tiles, the
// compute bound under its framework-wide meaning, and the refusal of chips
// with a buffer level between MAESTRO's L1 and L2.

#include <gtest/gtest.h>

#include <mapex/error.hpp>
#include <mapex/generators.hpp>

#include "host/plugin_registry.hpp"
#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex::host {
namespace {

using test::registry;

Metrics evaluate(const std::string& model, const Operator& op, const Architecture& arch,
                 const Mapping& m) {
  return test::evaluate_with(model, op, arch, m);
}

const LevelMetrics& level(const Metrics& m, const std::string& name) {
  for (const auto& l : m.levels)
    if (l.level == name) return l;
  throw std::runtime_error("no level " + name);
}

// L1 (per PE) / PEs / L2 / DRAM with the given L1 size, buffering and DRAM
// bandwidth (1 GHz, 1-byte words: GB/s are words per cycle).
Architecture chip(std::int64_t pes, std::int64_t l1_bytes, bool l1_double, bool l2_double,
                  double dram_gbps) {
  Level l1 = test::buffer("L1", l1_bytes, 1, 1);
  l1.double_buffered = l1_double;
  Level l2 = test::buffer("L2", 1 << 20, 10, 10);
  l2.double_buffered = l2_double;
  Level dram = test::dram(100);
  dram.bandwidth_gbps = dram_gbps;
  return Architecture::make("c", 1000, 8, 1, 1, {l1, test::spatial("PEs", {pes}), l2, dram});
}

// GEMM 8x8x8, L1 tiles of 2x2x2 on one PE: MAESTRO's L1 requirement is the
// three 2x2 tiles (A: M x K, B: K x N, C: M x N), 12 words, twice over for
// double buffering. A 16-byte L1 holds them only single-buffered.
TEST(MdcPlugin, SingleBufferedL1NeedsOneCopyOfItsTiles) {
  const Operator op = make_gemm("g", 8, 8, 8);
  Mapping m = Mapping::trivial(op, chip(1, 16, true, true, 1));
  m.level(0).tile = {2, 2, 2};
  m.level(2).tile = {8, 8, 8};
  const Metrics dbl = evaluate("mdc", op, chip(1, 16, true, true, 1), m);
  EXPECT_FALSE(dbl.valid);
  EXPECT_EQ(dbl.invalid_reason, "L1: tiles need 24 B (double-buffered), capacity 16 B");
  const Metrics single = evaluate("mdc", op, chip(1, 16, false, true, 1), m);
  ASSERT_TRUE(single.valid) << single.invalid_reason;
  EXPECT_EQ(level(single, "L1").required_bytes, 12);
  const Metrics small = evaluate("mdc", op, chip(1, 11, false, true, 1), m);
  EXPECT_FALSE(small.valid);
  EXPECT_EQ(small.invalid_reason, "L1: tiles need 12 B, capacity 11 B");
}

// DRAM loops over L2 tiles of M4 N4 K8, order M then N: A's tile (4 x 8)
// changes with M only, so it is read once per M tile: 2 x 32 = 64 words;
// B's (8 x 4) changes with N, read for each of the 4 (M, N) tiles: 4 x 32 =
// 128; C's tiles (4 x 4) are written once each, K being whole in L2: 64.
TEST(MdcPlugin, DramTrafficIsTheRefillOfL2Tiles) {
  const Operator op = make_gemm("g", 8, 8, 8);
  const Architecture fast = chip(4, 1 << 10, true, true, 1);
  Mapping m = Mapping::trivial(op, fast);
  m.level(0).tile = {1, 4, 8};
  m.level(1).split = {4, 1, 1};
  m.level(2).tile = {4, 4, 8};
  m.level(3).order = {0, 1, 2};  // M, N, K
  const Metrics r = evaluate("mdc", op, fast, m);
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  const LevelMetrics& dram = level(r, "DRAM");
  ASSERT_EQ(dram.tensors.size(), 3u);
  EXPECT_EQ(dram.tensors[0].reads, 64);   // A
  EXPECT_EQ(dram.tensors[1].reads, 128);  // B
  EXPECT_EQ(dram.tensors[2].writes, 64);  // C
  EXPECT_EQ(dram.transfer_cycles, 256);   // 256 words at 1 word per cycle
  EXPECT_EQ(dram.energy_pj, 256 * 100);
  double sum = 0;
  for (const auto& [part, pj] : r.energy_breakdown_pj) sum += pj;
  EXPECT_DOUBLE_EQ(sum, r.energy_pj);
  // The array needs more than 256 cycles for 512 MACs on 4 PEs: on-chip bound.
  EXPECT_EQ(r.bound_by, "mdc");
  EXPECT_GT(r.latency_cycles, 256);

  // At 0.1 words per cycle DRAM needs 2560 cycles; a double-buffered L2
  // overlaps them with the array, a single-buffered one waits for them.
  const Metrics slow = evaluate("mdc", op, chip(4, 1 << 10, true, true, 0.1), m);
  ASSERT_TRUE(slow.valid);
  EXPECT_DOUBLE_EQ(slow.latency_cycles, 2560);
  EXPECT_EQ(slow.bound_by, "DRAM");
  const Metrics serial = evaluate("mdc", op, chip(4, 1 << 10, true, false, 0.1), m);
  ASSERT_TRUE(serial.valid);
  EXPECT_DOUBLE_EQ(serial.latency_cycles, r.latency_cycles + 2560);
}

// compute_cycles means the same under every model: the MACs of the busiest
// PE (512 MACs over 4 PEs in lock step: 128), not MAESTRO's per-step delay.
TEST(MdcPlugin, ComputeCyclesIsTheComputeBoundAsUnderRoofline) {
  const Operator op = make_gemm("g", 8, 8, 8);
  const Architecture arch = chip(4, 1 << 10, true, true, 1);
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {1, 4, 8};
  m.level(1).split = {4, 1, 1};
  m.level(2).tile = {8, 8, 8};
  const Metrics mdc = evaluate("mdc", op, arch, m);
  const Metrics roof = evaluate("roofline", op, arch, m);
  ASSERT_TRUE(mdc.valid && roof.valid);
  EXPECT_EQ(mdc.compute_cycles, 128);
  EXPECT_EQ(roof.compute_cycles, 128);
  EXPECT_GE(mdc.latency_cycles, mdc.compute_cycles);
}

// MAESTRO's input and filter are told apart by the dimensions they index,
// not by their place in the operator: a GEMM that lists B (K x N) before A
// (M x K) still has A as MAESTRO's input (coupled to M) and B as its filter,
// so each keeps the L1 and L2 counts it has in the usual order. With tiles
// of M1 N4 K8 A's and B's counts differ (8 and 32 words a tile).
TEST(MdcPlugin, TensorsAreMatchedByTheDimensionsTheyIndexNotByPosition) {
  const Architecture arch = chip(4, 1 << 10, true, true, 1);
  const Operator usual = make_gemm("g", 8, 8, 8);
  auto var = [](DimId d) { return AffineExpr{{AffineTerm{d, 1}}, 0}; };
  const Operator swapped =
      Operator::make("g", "gemm", {{"M", 8}, {"N", 8}, {"K", 8}},
                     {{"B", TensorRole::kInput, Reduction::kNone, {var(2), var(1)}},
                      {"A", TensorRole::kInput, Reduction::kNone, {var(0), var(2)}},
                      {"C", TensorRole::kOutput, Reduction::kSum, {var(0), var(1)}}});
  auto metrics = [&](const Operator& op) {
    Mapping m = Mapping::trivial(op, arch);
    m.level(0).tile = {1, 4, 8};
    m.level(1).split = {4, 1, 1};
    m.level(2).tile = {8, 8, 8};
    return evaluate("mdc", op, arch, m);
  };
  const Metrics a = metrics(usual), b = metrics(swapped);
  ASSERT_TRUE(a.valid && b.valid) << a.invalid_reason << b.invalid_reason;
  for (const char* name : {"L1", "L2"}) {
    const LevelMetrics& la = level(a, name);
    const LevelMetrics& lb = level(b, name);
    ASSERT_EQ(la.tensors.size(), 3u);
    ASSERT_EQ(lb.tensors.size(), 3u);
    for (std::size_t t = 0; t < 3; ++t) {
      EXPECT_EQ(lb.tensors[t].tensor, la.tensors[t].tensor) << name;
      EXPECT_EQ(lb.tensors[t].reads, la.tensors[t].reads) << name << " " << la.tensors[t].tensor;
      EXPECT_EQ(lb.tensors[t].writes, la.tensors[t].writes) << name << " " << la.tensors[t].tensor;
    }
  }
  EXPECT_EQ(level(a, "L1").tensors[0].tensor, "A");
  EXPECT_NE(level(a, "L1").tensors[0].reads + level(a, "L1").tensors[0].writes,
            level(a, "L1").tensors[1].reads + level(a, "L1").tensors[1].writes);
  EXPECT_DOUBLE_EQ(b.energy_pj, a.energy_pj);
}

// A buffer between the innermost and the outermost would get no traffic in
// MAESTRO's two-buffer analysis: the chip is refused, naming the level.
TEST(MdcPlugin, ChipWithAMiddleBufferIsRefusedNamingIt) {
  const Architecture arch = Architecture::make(
      "three", 1000, 8, 1, 1,
      {test::buffer("REGF", 64), test::spatial("PEs", {4}), test::buffer("GBUF", 1 << 12),
       test::spatial("nodes", {2}), test::buffer("L3", 1 << 20), test::dram()});
  const Operator op = make_gemm("g", 8, 8, 8);
  try {
    (void)registry().make_costmodel("mdc", {})->bind(op, arch);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("buffer 'GBUF' between 'REGF' (MAESTRO's L1) and 'L3' (its L2)"),
              std::string::npos)
        << what;
  }
}

// MAESTRO's NoC has no hops and no energy: a chip that prices NoC hops is
// refused at bind, naming the level and key; roofline charges the same
// field (energy grows with it).
TEST(MdcPlugin, NocHopEnergyIsRefusedNotIgnored) {
  const Operator op = make_gemm("g", 8, 8, 8);
  auto with_hops = [](double pj) {
    Level pes = test::spatial("PEs", {4});
    pes.noc.hop_energy_pj = pj;
    return Architecture::make(
        "hops", 1000, 8, 1, 1,
        {test::buffer("L1", 1 << 10), pes, test::buffer("L2", 1 << 16), test::dram()});
  };
  const Architecture priced = with_hops(0.5);
  try {
    (void)registry().make_costmodel("mdc", {})->bind(op, priced);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "noc.hop_energy_pj");
    EXPECT_NE(std::string(e.what()).find("mdc cannot model NoC hop energy (level 'PEs'"),
              std::string::npos)
        << e.what();
  }
  const Architecture free_hops = with_hops(0);
  EXPECT_NO_THROW((void)registry().make_costmodel("mdc", {})->bind(op, free_hops));
  Mapping m = Mapping::trivial(op, priced);
  m.level(0).tile = {2, 8, 8};
  m.level(1).split = {4, 1, 1};
  m.level(2).tile = {8, 8, 8};
  EXPECT_GT(evaluate("roofline", op, priced, m).energy_pj,
            evaluate("roofline", op, free_hops, m).energy_pj);
}

}  // namespace
}  // namespace mapex::host
