// Cluster levels in the mapspace, enumerated, sampled and counted exactly,
// with constraints to fix or forbid them: hand-counted sizes, counts equal
// to the streamed space, samples in it, constraints, and round trips.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <mapex/constraints.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <set>

#include "test_chips.hpp"

namespace mapex {
namespace {

Architecture chip(std::vector<std::int64_t> shape, SplitPlacement placement,
                  std::int64_t l1_bytes = 1 << 20) {
  Level pes = test::spatial("PEs", std::move(shape));
  pes.split_placement = placement;
  return Architecture::make(
      "chip", 1000, 8, 1, 1,
      {test::buffer("L1", l1_bytes), pes, test::buffer("L2", 1 << 20), test::dram()});
}

/// Options with the PEs' cluster level on, as a `cluster:` constraint.
MapspaceOptions with_cluster(const Operator& op, const Architecture& arch,
                             ClusterConstraintSpec cluster = {}) {
  ConstraintSpec spec;
  LevelConstraintSpec pes;
  pes.level = "PEs";
  pes.cluster = std::move(cluster);
  spec.levels = {pes};
  return resolve(spec, op, arch);
}

/// Streams the space; checks each mapping is well formed, in the space,
/// and new; returns them as YAML.
std::set<std::string> stream(const Mapspace& space) {
  std::set<std::string> out;
  Mapspace::Cursor cursor(space);
  Mapping m;
  while (cursor.next(m)) {
    EXPECT_FALSE(space.reject_reason(m)) << *space.reject_reason(m);
    const std::string yaml = m.to_yaml(space.op(), space.arch());
    EXPECT_TRUE(out.insert(yaml).second) << "streamed twice:\n" << yaml;
    // The YAML (what result files store) reads back to the same mapping.
    EXPECT_EQ(Mapping::parse(yaml, "streamed", space.op(), space.arch()), m) << yaml;
  }
  return out;
}

// GEMM M=4 (N = K = 1), tiles dividing the bounds: per chain an L1 tile
// t, units per cluster c (a step spans t x c), the cluster tile T (a
// multiple of the step dividing 4), the clusters' split s (T x s divides
// 4, c x s within the fan-out), and an L2 tile. By hand:
//   t=1: c=1: T=1: s=1,2,4 -> L2 3+2+1; T=2: s=1,2 -> 2+1; T=4: 1   = 10
//        c=2: T=2: s=1,2 -> 2+1; T=4: 1                             =  4
//        c=4: T=4: 1                                                 =  1
//   t=2: c=1: T=2: s=1,2 -> 2+1; T=4: 1 = 4;  c=2: T=4: 1           =  5
//   t=4: 1                                                           =  1
// = 21, one loop order per level (one dimension). Without a cluster level
// the space has 10 (test_placement.cpp). On a 2 x 2 array, one axis per
// split, a 4 on either split does not fit: (t=1, c=1, T=1, s=4) and
// (t=1, c=4) drop: 19. c=2 x s=2 takes both axes.
TEST(ClusterMapspace, HandCountedSizes) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture flat = chip({4}, SplitPlacement::kOneAxis);
  const Mapspace off(op, flat);
  EXPECT_EQ(off.size(), 10);
  const Mapspace on(op, flat, with_cluster(op, flat));
  EXPECT_EQ(on.size(), 21);
  EXPECT_EQ(stream(on).size(), 21u);
  const Architecture grid = chip({2, 2}, SplitPlacement::kOneAxis);
  const Mapspace placed(op, grid, with_cluster(op, grid));
  EXPECT_EQ(placed.size(), 19);
  EXPECT_EQ(stream(placed).size(), 19u);
}

TEST(ClusterMapspace, ConstraintsFixSplitTileAndOrder) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture arch = chip({4}, SplitPlacement::kOneAxis);
  // Units per cluster fixed at 2 (the c=2 rows above): 4 + 1.
  ClusterConstraintSpec split;
  split.split = {{"M", 2}};
  EXPECT_EQ(Mapspace(op, arch, with_cluster(op, arch, split)).size(), 5);
  // T^out fixed at 4: t=1: c=1, 2, 4 (3); t=2: c=1, 2 (2); t=4 (1).
  ClusterConstraintSpec tile;
  tile.tile = {{"M", 4}};
  EXPECT_EQ(Mapspace(op, arch, with_cluster(op, arch, tile)).size(), 6);
  // No dimension may be split by the cluster: only c=1 (10 + 4 + 1).
  ClusterConstraintSpec none;
  none.parallel = std::vector<std::string>{};
  EXPECT_EQ(Mapspace(op, arch, with_cluster(op, arch, none)).size(), 15);
  // Cluster orders: GEMM M=4, N=2, with an order rule K, N, M outermost
  // first; only the cluster's loops are constrained.
  const Operator two = make_gemm("g", 4, 2, 1);
  ClusterConstraintSpec ordered;
  ordered.orders = {{"K", "N", "M"}};
  const Mapspace free_orders(two, arch, with_cluster(two, arch));
  const Mapspace pinned(two, arch, with_cluster(two, arch, ordered));
  const auto all = stream(free_orders), kept = stream(pinned);
  EXPECT_EQ(free_orders.size(), BigInt(all.size()));
  EXPECT_EQ(pinned.size(), BigInt(kept.size()));
  EXPECT_LT(kept.size(), all.size());
  // Exactly the mappings whose cluster loops run N outside M are kept.
  std::size_t expected = 0;
  for (const auto& yaml : all) {
    const Mapping m = Mapping::parse(yaml, "all", two, arch);
    const ClusterMapping& c = m.level(1).cluster;
    bool ok = true;
    if (c.active()) {
      const auto inner = [&] {
        std::vector<std::int64_t> step;
        spatial_span(two, m.level(1), m.span(two, arch, 0), &step);
        return step;
      }();
      const bool m_loop = c.tile[0] > inner[0], n_loop = c.tile[1] > inner[1];
      if (m_loop && n_loop) {
        const auto pos_m = std::find(c.order.begin(), c.order.end(), 0) - c.order.begin();
        const auto pos_n = std::find(c.order.begin(), c.order.end(), 1) - c.order.begin();
        ok = pos_n < pos_m;
      }
    }
    if (ok) {
      ++expected;
      EXPECT_TRUE(kept.count(yaml)) << yaml;
    }
  }
  EXPECT_EQ(kept.size(), expected);
}

TEST(ClusterMapspace, CountsEqualTheStreamWithCapacityAndSamplesAreInIt) {
  // Two split dimensions, small L1s (capacity cuts), a 2 x 2 array.
  const Operator op = make_gemm("g", 4, 2, 2);
  const Architecture arch = chip({2, 2}, SplitPlacement::kOneAxis, 6);
  const Mapspace space(op, arch, with_cluster(op, arch));
  const auto all = stream(space);
  EXPECT_EQ(space.count_valid(), BigInt(all.size()));
  EXPECT_LT(space.count_valid(), space.size());  // capacity cut something
  std::size_t clustered = 0;
  for (const auto& yaml : all)
    clustered += Mapping::parse(yaml, "s", op, arch).level(1).cluster.active();
  EXPECT_GT(clustered, 0u);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    EXPECT_TRUE(all.count(m->to_yaml(op, arch)));
  }
  // Chunks partition the space.
  std::size_t chunked = 0;
  for (const auto& chunk : space.chunks(4)) {
    Mapspace::Cursor cursor(space, chunk);
    Mapping m;
    while (cursor.next(m)) ++chunked;
  }
  EXPECT_EQ(chunked, all.size());
}

TEST(ClusterMapspace, OffByDefaultAndReasonsNameTheCluster) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture arch = chip({4}, SplitPlacement::kOneAxis);
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).cluster = ClusterMapping{{2, 1, 1}, {4, 1, 1}, {0, 1, 2}};
  m.level(2).tile = m.span(op, arch, 1);
  ASSERT_FALSE(m.structural_error(op, arch)) << *m.structural_error(op, arch);
  const Mapspace off(op, arch);
  ASSERT_TRUE(off.reject_reason(m));
  EXPECT_EQ(off.reject_reason(m)->rfind("cluster: PEs has no cluster level", 0), 0u)
      << *off.reject_reason(m);
  const Mapspace on(op, arch, with_cluster(op, arch));
  EXPECT_FALSE(on.reject_reason(m)) << *on.reject_reason(m);
  ClusterConstraintSpec fixed;
  fixed.tile = {{"M", 2}};
  const Mapspace pinned(op, arch, with_cluster(op, arch, fixed));
  ASSERT_TRUE(pinned.reject_reason(m));
  EXPECT_EQ(*pinned.reject_reason(m), "fixed: the cluster of PEs must have tile 2 along M");
}

TEST(ClusterMapspace, ConstraintFilesAndTheirErrors) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture arch = chip({2, 2}, SplitPlacement::kOneAxis);
  const std::string path = ::testing::TempDir() + "cluster_constraints.yaml";
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    return resolve(load_constraint_spec(path), op, arch);
  };
  const MapspaceOptions o =
      load("levels:\n  PEs:\n    cluster: {split: {M: 2}, tile: {M: 4}, orders: [[M, N, K]]}\n");
  ASSERT_EQ(o.levels.size(), 4u);
  EXPECT_TRUE(o.levels[1].cluster.enabled);
  EXPECT_EQ(o.levels[1].cluster.fixed_split, (std::vector<std::int64_t>{2, 0, 0}));
  EXPECT_EQ(o.levels[1].cluster.fixed_tile, (std::vector<std::int64_t>{4, 0, 0}));
  auto error = [&](const std::string& text) {
    try {
      load(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("levels:\n  L2:\n    cluster: {}\n")
                .find("key 'cluster': level 'L2' is not "
                      "spatial"),
            std::string::npos)
      << error("levels:\n  L2:\n    cluster: {}\n");
  EXPECT_NE(error("levels:\n  PEs:\n    cluster: {split: {M: 4}}\n")
                .find("cannot be placed on its array (split_placement: one_axis)"),
            std::string::npos);
  EXPECT_NE(error("levels:\n  PEs:\n    cluster: {size: 4}\n").find("size"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mapex
