// Unit tests of the loop-nest analysis (mapex/analysis.hpp): tile counts
// with edge tiles, compute time of spatially unrolled loops, temporal reuse
// from loop orders, multicast, output read-back, capacity.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/constraints.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>

#include "test_chips.hpp"

namespace mapex {
namespace {

using test::chip;

// L1 per PE / PEs (fan-out `pes`) / L2 / DRAM, one byte per word.
DimId dim(const Operator& op, const char* name) { return op.find_dim(name); }

TEST(Partition, EdgeTilesAreCounted) {
  const ExtentCounts whole{{17, 1.0}};
  const ExtentCounts split = partition(whole, 16, false);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split.at(16), 1.0);
  EXPECT_EQ(split.at(1), 1.0);
  EXPECT_EQ(total_count(split), 2.0);
  // Side by side, only the widest chunk takes time.
  const ExtentCounts parallel = partition(whole, 16, true);
  ASSERT_EQ(parallel.size(), 1u);
  EXPECT_EQ(parallel.at(16), 1.0);
}

TEST(Partition, NestedEdgesKeepTheBound) {
  // 10 in tiles of 4 (4, 4, 2), then tiles of 3: (3, 1), (3, 1), (2).
  const ExtentCounts outer = partition({{10, 1.0}}, 4, false);
  const ExtentCounts inner = partition(outer, 3, false);
  EXPECT_EQ(total_count(inner), 5.0);
  double sum = 0;
  for (const auto& [extent, count] : inner) sum += static_cast<double>(extent) * count;
  EXPECT_EQ(sum, 10.0);
}

TEST(Analysis, SeventeenRowsOnSixteenPesTakeTwoFolds) {
  // Marvel §1: 17 channels on 16 PEs need two folds.
  const Operator op = make_gemm("g", 17, 1, 1);
  const Architecture arch = chip({16});
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split[static_cast<size_t>(dim(op, "M"))] = 16;
  m.level(2).tile[static_cast<size_t>(dim(op, "M"))] = 17;
  ASSERT_FALSE(m.structural_error(op, arch)) << *m.structural_error(op, arch);
  const NestAnalysis a = analyse(op, arch, m);
  EXPECT_EQ(a.compute_cycles, 2.0);
  EXPECT_EQ(a.macs, 17.0);
}

TEST(Analysis, UnsplitNestTakesOneCyclePerMac) {
  const Operator op = make_gemm("g", 3, 5, 7);
  const Architecture arch = chip({4});
  const NestAnalysis a = analyse(op, arch, Mapping::trivial(op, arch));
  EXPECT_EQ(a.compute_cycles, 105.0);
}

TEST(Analysis, InnermostIrrelevantLoopKeepsTheTile) {
  // A[M][K] does not depend on N: with N innermost at DRAM each A word
  // enters L2 once; with N outermost it enters once per N.
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({1});
  const size_t a_index = 0;
  ASSERT_EQ(op.tensors()[a_index].name, "A");
  Mapping m = Mapping::trivial(op, arch);
  const DimId M = dim(op, "M"), N = dim(op, "N"), K = dim(op, "K");
  m.level(3).order = {M, K, N};
  const double reused = analyse(op, arch, m).traffic[2][a_index].fills;
  m.level(3).order = {N, M, K};
  const double refetched = analyse(op, arch, m).traffic[2][a_index].fills;
  EXPECT_EQ(reused, 16.0);
  EXPECT_EQ(refetched, 64.0);
}

TEST(Analysis, MulticastSharesReadsAcrossIrrelevantSplits) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const DimId N = dim(op, "N");
  for (bool multicast : {true, false}) {
    const Architecture arch = chip({4}, 1 << 20, multicast);
    Mapping m = Mapping::trivial(op, arch);
    m.level(1).split[static_cast<size_t>(N)] = 4;
    m.level(2).tile[static_cast<size_t>(N)] = 4;
    const NestAnalysis a = analyse(op, arch, m);
    const TensorTraffic& to_l1 = a.traffic[0][0];  // A into the PEs' L1s
    // Every PE gets every A word; the L2 reads it once with multicast.
    EXPECT_EQ(to_l1.fills, 64.0);
    EXPECT_EQ(to_l1.parent_reads, multicast ? 16.0 : 64.0);
    EXPECT_EQ(a.noc_down[1][0], multicast ? 16.0 : 64.0);
  }
}

// K (the reduction) split over 4 PEs, each holding the whole 4x4 C tile
// for its one K: 4 x 16 partial sums leave the PEs. With spatial reduction
// the network adds them and L2 takes 16 writes; without, L2 takes all 64
// and adds 48 of them to its running sum by a read-modify-write.
TEST(Analysis, WithoutReductionTheParentAccumulatesEveryPartialSum) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const DimId M = dim(op, "M"), N = dim(op, "N"), K = dim(op, "K");
  const size_t c_index = 2;
  ASSERT_EQ(op.tensors()[c_index].name, "C");
  for (bool reduction : {true, false}) {
    Level pes = test::spatial("PEs", {4});
    pes.noc.reduction = reduction;
    const Architecture arch =
        Architecture::make("chip", 1000, 8, 1, 1,
                           {test::buffer("L1", 1 << 20, 1, 2), pes,
                            test::buffer("L2", 1 << 20, 10, 10), test::dram()});
    Mapping m = Mapping::trivial(op, arch);
    for (DimId d : {M, N}) m.level(0).tile[static_cast<size_t>(d)] = 4;
    m.level(0).tile[static_cast<size_t>(K)] = 1;
    m.level(1).split[static_cast<size_t>(K)] = 4;
    for (DimId d : {M, N, K}) m.level(2).tile[static_cast<size_t>(d)] = 4;
    const NestAnalysis a = analyse(op, arch, m);
    const TensorTraffic& up = a.traffic[0][c_index];
    EXPECT_EQ(up.updates, 64.0);
    EXPECT_EQ(up.parent_writes, reduction ? 16.0 : 64.0);
    EXPECT_EQ(up.parent_reads, reduction ? 0.0 : 48.0);
    EXPECT_EQ(a.noc_up[1][c_index], reduction ? 16.0 : 64.0);
  }
}

TEST(Analysis, OutputsAreReadBackWhenReductionLoopIsOutside) {
  const Operator op = make_gemm("g", 2, 2, 3);
  const Architecture arch = chip({1});
  const size_t c_index = 2;
  ASSERT_EQ(op.tensors()[c_index].name, "C");
  const DimId M = dim(op, "M"), N = dim(op, "N"), K = dim(op, "K");
  Mapping m = Mapping::trivial(op, arch);
  // K innermost at DRAM: each C word stays in L2 across K, written once.
  m.level(3).order = {M, N, K};
  TensorTraffic t = analyse(op, arch, m).traffic[2][c_index];
  EXPECT_EQ(t.updates, 4.0);
  EXPECT_EQ(t.parent_reads, 0.0);
  // K outermost: every C word goes up three times and comes back twice.
  m.level(3).order = {K, M, N};
  t = analyse(op, arch, m).traffic[2][c_index];
  EXPECT_EQ(t.updates, 12.0);
  EXPECT_EQ(t.parent_reads, 8.0);
}

TEST(Analysis, CapacityCountsDoubleBuffering) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({1}, /*l1_bytes=*/64);
  Mapping m = Mapping::trivial(op, arch);
  // Tiles of 4x4x4: A, B and C are 16 words each = 48 B, 96 B double-buffered.
  for (auto& t : m.level(0).tile) t = 4;
  for (auto& t : m.level(2).tile) t = 4;
  EXPECT_EQ(required_bytes(op, arch, 0, m.level(0).tile), 96.0);
  const auto error = capacity_error(op, arch, m);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("L1"), std::string::npos) << *error;
  EXPECT_NE(error->find("96"), std::string::npos) << *error;
  for (auto& t : m.level(0).tile) t = 2;  // 3 x 4 words x 2 = 24 B
  EXPECT_FALSE(capacity_error(op, arch, m));
}

TEST(Analysis, LevelMetricsPriceEveryAccess) {
  const Operator op = make_gemm("g", 2, 2, 2);
  const Architecture arch = chip({1});
  const Mapping m = Mapping::trivial(op, arch);
  const NestAnalysis a = analyse(op, arch, m);
  const auto levels = level_metrics(op, arch, a);
  ASSERT_EQ(levels.size(), 4u);
  for (size_t i = 0; i < levels.size(); ++i) {
    const Level& l = arch.levels()[i];
    double expected = 0;
    for (const auto& t : levels[i].tensors)
      expected += l.kind == LevelKind::kSpatial
                      ? (t.reads + t.writes) * l.noc.hop_energy_pj
                      : t.reads * l.read_energy_pj + t.writes * l.write_energy_pj;
    EXPECT_DOUBLE_EQ(levels[i].energy_pj, expected) << l.name;
  }
  // DRAM gives out every input word at least once and takes every output.
  const auto& dram = levels[3];
  EXPECT_GE(dram.tensors[0].reads, 4.0);
  EXPECT_GE(dram.tensors[1].reads, 4.0);
  EXPECT_GE(dram.tensors[2].writes, 4.0);
  // 1 GB/s at 1 GHz is one byte per cycle: transfer cycles = bytes moved.
  double words = 0;
  for (const auto& t : dram.tensors) words += t.reads + t.writes;
  EXPECT_DOUBLE_EQ(dram.transfer_cycles, words);
}

TEST(RooflinePeak, LargerOfComputeAndEachLevelOnce) {
  // 8x8x8 GEMM: 512 MACs on 4 PEs = 128 cycles; 192 words through a
  // 1 B/cycle DRAM = 192 cycles, so DRAM bounds it.
  const Operator op = make_gemm("g", 8, 8, 8);
  const Architecture arch = chip({4});
  const RooflinePeak peak = roofline_peak(op, arch);
  EXPECT_EQ(peak.compute_cycles, 128.0);
  EXPECT_EQ(peak.cycles, 192.0);
  EXPECT_EQ(peak.bound_by, "PEs");  // the network (1 B/cycle) ties DRAM and comes first
  // No mapping beats it.
  const NestAnalysis a = analyse(op, arch, Mapping::trivial(op, arch));
  EXPECT_GE(a.compute_cycles, peak.compute_cycles);
}

// A cluster level (FLASH Table 2): M = 4, N = 2, K = 4 on 4 PEs; two
// clusters split N, each cluster's two PEs split K and step in time over a
// cluster tile M2 x K4, order K then M (M innermost); L2 holds M2 N2 K4,
// DRAM walks M in 2. Counted by hand:
// - A[M][K]: M moves innermost in the cluster, so every PE step refills:
//   32 fills, multicast over the 2 clusters (N): 16 L2 reads, A once.
// - B[K][N]: stays across the 2 M steps: 16 fills, no multicast over M;
//   L2 re-serves it for each of DRAM's 2 M tiles: 16 reads.
// - C[M][N]: 32 partial-sum updates, reduced over the cluster's K split:
//   16 L2 writes; the second temporal K step reads 8 back.
TEST(Analysis, ClusterLevelStepsInTimeBetweenTheSplits) {
  const Operator op = make_gemm("g", 4, 2, 4);
  const Architecture arch = chip({4});
  const auto M = static_cast<size_t>(dim(op, "M")), N = static_cast<size_t>(dim(op, "N")),
             K = static_cast<size_t>(dim(op, "K"));
  Mapping m = Mapping::trivial(op, arch);
  auto& pe = m.level(1);
  pe.split[N] = 2;
  pe.cluster.split.assign(3, 1);
  pe.cluster.split[K] = 2;
  pe.cluster.tile.assign(3, 1);
  pe.cluster.tile[M] = 2;
  pe.cluster.tile[K] = 4;
  pe.cluster.order = {dim(op, "K"), dim(op, "M"), dim(op, "N")};
  m.level(2).tile[M] = 2;
  m.level(2).tile[N] = 2;
  m.level(2).tile[K] = 4;
  ASSERT_FALSE(m.structural_error(op, arch)) << *m.structural_error(op, arch);
  EXPECT_EQ(m.span(op, arch, 1), m.level(2).tile);
  const NestAnalysis a = analyse(op, arch, m);
  const auto& l1 = a.traffic[0];
  EXPECT_DOUBLE_EQ(l1[0].fills, 32);
  EXPECT_DOUBLE_EQ(l1[0].parent_reads, 16);
  EXPECT_DOUBLE_EQ(l1[1].fills, 16);
  EXPECT_DOUBLE_EQ(l1[1].parent_reads, 16);
  EXPECT_DOUBLE_EQ(l1[2].updates, 32);
  EXPECT_DOUBLE_EQ(l1[2].parent_writes, 16);
  EXPECT_DOUBLE_EQ(l1[2].parent_reads, 8);
  // 32 MACs on 4 PEs, every PE busy in each of the 2 x 2 x 2 steps.
  EXPECT_DOUBLE_EQ(a.compute_cycles, 8);
  // The summary shows the cluster's loops and split.
  EXPECT_NE(m.summary(op, arch).find("PEs[N2 cluster(K2 M2 / K2)]"), std::string::npos)
      << m.summary(op, arch);
  // Round trip through YAML.
  EXPECT_EQ(Mapping::parse(m.to_yaml(op, arch), "t.yaml", op, arch), m);
}

TEST(Mapping, ClusterTileSmallerThanOneStepIsRefusedWithItsLine) {
  const Operator op = make_gemm("g", 4, 2, 4);
  const Architecture arch = chip({4});
  const std::string text =
      "PEs:\n"
      "  split: {N: 2}\n"
      "  cluster: {split: {K: 2}, tile: {M: 2, K: 1}, order: [K, M, N]}\n";
  try {
    Mapping::parse(text, "c.yaml", op, arch);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("c.yaml:3:"), std::string::npos) << what;
    EXPECT_NE(what.find("cluster tile of K is 1"), std::string::npos) << what;
  }
}

// Separate read and write ports (Timeloop's read_bandwidth and
// write_bandwidth) each limit their own words; a network without a
// bandwidth never bounds the latency.
TEST(Analysis, ReadAndWritePortsLimitTheirOwnTraffic) {
  const Operator op = make_gemm("g", 4, 2, 4);
  std::vector<Level> levels = chip({4}).levels();
  levels[1].noc.bandwidth_gbps = 0;  // not limited
  levels[3].bandwidth_gbps = 4;      // 4 B per cycle at 1 GHz, one byte per word
  levels[3].read_bandwidth_gbps = 0.5;
  levels[3].write_bandwidth_gbps = 1;
  const Architecture arch = Architecture::make("ports", 1000, 8, 1, 1, levels);
  const Mapping m = Mapping::trivial(op, arch);
  const auto metrics = level_metrics(op, arch, analyse(op, arch, m));
  EXPECT_EQ(metrics[1].transfer_cycles, 0);
  double reads = 0, writes = 0;
  for (const auto& t : metrics[3].tensors) {
    reads += t.reads;
    writes += t.writes;
  }
  ASSERT_GT(reads, 0);
  ASSERT_GT(writes, 0);
  EXPECT_DOUBLE_EQ(metrics[3].transfer_cycles,
                   std::max({(reads + writes) / 4, reads / 0.5, writes / 1.0}));
  // The peak: inputs A (16) and B (8) read once at 0.5 B/cycle, C (8)
  // written once at 1: 48 cycles at DRAM; the MACs take 32 / 4 = 8.
  const RooflinePeak peak = roofline_peak(op, arch);
  EXPECT_DOUBLE_EQ(peak.cycles, 48);
  EXPECT_EQ(peak.bound_by, "DRAM");
}

// analyse_traffic_into along the enumeration stream keeps per-boundary
// results (TrafficMemo) and recomputes only the boundaries whose reuse scan
// reads a level whose order changed. Every field it writes, and the level
// costs, must equal a from-scratch analysis on every mapping of a stream:
// with a cluster level (its order is scanned too), and with keep choices
// changed between two mappings of one tiling (every third mapping is
// analysed a second time with L1 bypassing one tensor, then the stream
// goes on).
struct IncrementalCount {
  std::uint64_t mappings = 0;
  std::uint64_t order_only_changes = 0;
};

// A keep/bypass switch as the cursor tells it: every boundary is rebuilt,
// no loop order moved.
MappingChange keep_switched(const Architecture& arch) {
  MappingChange change;
  change.tiling = false;
  change.keep = true;
  change.lowest_order = arch.num_levels();
  return change;
}

// One random neighbour along the stream: the loop order of one of `levels`
// shuffled, told as the lowest level whose order moved.
MappingChange shuffle_one_order(std::mt19937_64& rng, Mapping& m, const std::vector<int>& levels) {
  MappingChange change;
  change.tiling = false;
  change.keep = false;
  const int level = levels[uniform_below(rng, levels.size())];
  auto& order = m.level(level).order;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  change.lowest_order = level;
  return change;
}

void expect_same_traffic(const Operator& op, const Architecture& arch, const NestAnalysis& kept,
                         const NestAnalysis& full, const std::string& where) {
  // The level accounts kept along the stream against those of the full
  // analysis, assembled from scratch.
  std::vector<LevelCost> costs;
  level_costs(op, arch, kept, costs);
  const std::vector<LevelMetrics> metrics = level_metrics(op, arch, full);
  ASSERT_EQ(costs.size(), metrics.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    EXPECT_EQ(costs[i].energy_pj, metrics[i].energy_pj) << where;
    EXPECT_EQ(costs[i].transfer_cycles, metrics[i].transfer_cycles) << where;
  }
  for (size_t i = 0; i < full.traffic.size(); ++i)
    for (size_t t = 0; t < full.traffic[i].size(); ++t) {
      const TensorTraffic& x = kept.traffic[i][t];
      const TensorTraffic& y = full.traffic[i][t];
      EXPECT_EQ(x.fills, y.fills) << where;
      EXPECT_EQ(x.parent_reads, y.parent_reads) << where;
      EXPECT_EQ(x.updates, y.updates) << where;
      EXPECT_EQ(x.parent_writes, y.parent_writes) << where;
      EXPECT_EQ(kept.noc_down[i][t], full.noc_down[i][t]) << where;
      EXPECT_EQ(kept.noc_up[i][t], full.noc_up[i][t]) << where;
    }
  for (size_t t = 0; t < full.mac_traffic.size(); ++t) {
    EXPECT_EQ(kept.mac_traffic[t].fills, full.mac_traffic[t].fills) << where;
    EXPECT_EQ(kept.mac_traffic[t].parent_reads, full.mac_traffic[t].parent_reads) << where;
    EXPECT_EQ(kept.mac_traffic[t].updates, full.mac_traffic[t].updates) << where;
    EXPECT_EQ(kept.mac_traffic[t].parent_writes, full.mac_traffic[t].parent_writes) << where;
  }
  EXPECT_EQ(kept.required_bytes, full.required_bytes) << where;
  EXPECT_EQ(kept.keeps, full.keeps) << where;
}

IncrementalCount check_incremental(const Operator& op, const Architecture& arch,
                                   const MapspaceOptions& options, std::uint64_t limit) {
  const Mapspace space(op, arch, options);
  Mapspace::Cursor cursor(space);
  NestAnalysis kept;
  Mapping m, tiled;
  IncrementalCount c;
  while (c.mappings < limit && cursor.next(m)) {
    if (c.mappings == 0 || !same_tiling(tiled, m)) {
      analyse_tiling_into(op, arch, m, kept);
      tiled = m;
    } else {
      ++c.order_only_changes;
    }
    analyse_traffic_into(op, arch, m, kept);
    expect_same_traffic(op, arch, kept, analyse(op, arch, m), m.summary(op, arch));
    if (c.mappings % 3 == 2) {
      Mapping bypass = m;
      bypass.level(0).keep = {false, true, true};
      analyse_traffic_into(op, arch, bypass, kept);
      expect_same_traffic(op, arch, kept, analyse(op, arch, bypass), bypass.summary(op, arch));
    }
    ++c.mappings;
    if (::testing::Test::HasFailure()) break;  // one mapping's report is enough
  }
  return c;
}

TEST(AnalysisIncremental, EqualsTheFullAnalysisAlongTheStreamAndAcrossKeepChanges) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = chip({2, 2}, 256);
  const IncrementalCount c = check_incremental(op, arch, MapspaceOptions{}, 20000);
  // Both paths ran: new tilings and runs of loop orders of one tiling.
  EXPECT_EQ(c.mappings, 20000u);
  EXPECT_GT(c.order_only_changes, c.mappings / 2);
  EXPECT_LT(c.order_only_changes, c.mappings - 10);
}

TEST(AnalysisIncremental, EqualsTheFullAnalysisAlongTheStreamWithAClusterLevel) {
  const Operator op = make_gemm("g", 4, 6, 8);
  const Architecture arch = chip({4}, 1 << 20);
  const ConstraintSpec spec = test::cluster_level_on("PEs");
  const IncrementalCount c = check_incremental(op, arch, resolve(spec, op, arch), 20000);
  EXPECT_GT(c.mappings, 1000u);
  EXPECT_GT(c.order_only_changes, c.mappings / 2);
}

// Told what changed (MappingChange from the cursor), the analysis skips
// comparing orders and keep choices, leaves boundaries whose reuse scan
// comes out the same, and restores outcomes seen before for the tiling.
// Every mapping of the stream must still get the figures of a from-scratch
// analysis.
IncrementalCount check_told(const Operator& op, const Architecture& arch,
                            const MapspaceOptions& options, std::uint64_t limit) {
  const Mapspace space(op, arch, options);
  Mapspace::Cursor cursor(space);
  NestAnalysis kept;
  Mapping m;
  MappingChange change;
  IncrementalCount c;
  while (c.mappings < limit && cursor.next(m, change)) {
    if (change.tiling) {
      analyse_into(op, arch, m, kept);
    } else {
      ++c.order_only_changes;
      analyse_traffic_into(op, arch, m, kept, change);
    }
    expect_same_traffic(op, arch, kept, analyse(op, arch, m), m.summary(op, arch));
    ++c.mappings;
    if (::testing::Test::HasFailure()) break;
  }
  return c;
}

TEST(AnalysisIncremental, ToldWhatChangedEqualsTheFullAnalysisAlongTheStream) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const IncrementalCount c = check_told(op, chip({2, 2}, 256), MapspaceOptions{}, 20000);
  EXPECT_EQ(c.mappings, 20000u);
  EXPECT_GT(c.order_only_changes, c.mappings / 2);
  EXPECT_LT(c.order_only_changes, c.mappings - 10);
}

TEST(AnalysisIncremental, ToldWhatChangedEqualsTheFullAnalysisWithAClusterLevel) {
  const Operator op = make_gemm("g", 4, 6, 8);
  const Architecture arch = chip({4}, 1 << 20);
  const ConstraintSpec spec = test::cluster_level_on("PEs");
  const IncrementalCount c = check_told(op, arch, resolve(spec, op, arch), 20000);
  EXPECT_GT(c.mappings, 1000u);
  EXPECT_GT(c.order_only_changes, c.mappings / 2);
}

// Random neighbours: from a sampled mapping, chains of moves that each
// reorder one level's loops (or switch L1's keep choice), told only the
// lowest level that moved, against a from-scratch analysis of each. The
// orders of a level come back often (a few free loops have few orders), so
// outcomes kept for the tiling are restored, also after a lower level moved
// in between.
TEST(AnalysisIncremental, ToldWhatChangedEqualsTheFullAnalysisOnRandomNeighbours) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = chip({2, 2}, 256);
  const Mapspace space(op, arch);
  std::mt19937_64 rng(7);
  const std::vector<int> data_levels = {0, 2, 3};
  std::uint64_t moves = 0, keep_moves = 0;
  for (int sample = 0; sample < 1000 && !::testing::Test::HasFailure(); ++sample) {
    const std::optional<Mapping> start = space.sample(rng);
    ASSERT_TRUE(start);
    Mapping m = *start;
    NestAnalysis kept;
    analyse_into(op, arch, m, kept);
    for (int step = 0; step < 60 && !::testing::Test::HasFailure(); ++step) {
      MappingChange change;
      if (uniform_below(rng, 16) == 0) {
        // L1 keeps or bypasses the weights: every boundary is rebuilt.
        m.level(0).keep = {true, m.level(0).keep.empty() ? false : !m.level(0).keep[1], true};
        change = keep_switched(arch);
        ++keep_moves;
      } else {
        change = shuffle_one_order(rng, m, data_levels);
      }
      analyse_traffic_into(op, arch, m, kept, change);
      expect_same_traffic(op, arch, kept, analyse(op, arch, m), m.summary(op, arch));
      ++moves;
    }
  }
  EXPECT_EQ(moves, 1000u * 60u);
  EXPECT_GT(keep_moves, 1000u);
}

// The level accounts are kept per tensor: a move recomputes only the
// tensors whose boundaries it changed, at the levels those boundaries
// touch (TrafficMemo::stale), and a level's totals are summed again in
// tensor order. On a chip where every level has a port that can bound the
// latency (L2 with separate read and write ports, a network with a
// bandwidth), random neighbours as above, with the accounts asked for only
// after some of the moves (the changes in between add up), must give the
// figures of a from-scratch analysis.
TEST(AnalysisIncremental, LevelAccountsKeptPerTensorEqualTheFullAnalysisOnRandomNeighbours) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  Level l2 = test::buffer("L2", 1 << 20, 10, 7);
  l2.read_bandwidth_gbps = 3;
  l2.write_bandwidth_gbps = 2;
  const Architecture arch = Architecture::make(
      "ports", 1000, 8, 1, 1,
      {test::buffer("L1", 256, 1, 2), test::spatial("PEs", {2, 2}), l2, test::dram(100)});
  const Mapspace space(op, arch);
  std::mt19937_64 rng(11);
  const std::vector<int> data_levels = {0, 2, 3};
  std::uint64_t checked = 0, skipped = 0;
  for (int sample = 0; sample < 400 && !::testing::Test::HasFailure(); ++sample) {
    const std::optional<Mapping> start = space.sample(rng);
    ASSERT_TRUE(start);
    Mapping m = *start;
    NestAnalysis kept;
    analyse_into(op, arch, m, kept);
    for (int step = 0; step < 60 && !::testing::Test::HasFailure(); ++step) {
      MappingChange change;
      if (uniform_below(rng, 20) == 0) {
        // L2 keeps or bypasses the inputs: every boundary is rebuilt.
        m.level(2).keep = {m.level(2).keep.empty() ? false : !m.level(2).keep[0], true, true};
        change = keep_switched(arch);
      } else {
        change = shuffle_one_order(rng, m, data_levels);
      }
      analyse_traffic_into(op, arch, m, kept, change);
      if (uniform_below(rng, 3) == 0) {
        ++skipped;
        continue;
      }
      expect_same_traffic(op, arch, kept, analyse(op, arch, m), m.summary(op, arch));
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(skipped, 5000u);
}

}  // namespace
}  // namespace mapex
