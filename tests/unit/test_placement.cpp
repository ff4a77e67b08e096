// Placement of spatial splits on an array's axes: the
// framework's one test (splits_fit_array / placement_error, through
// structural_error), the architecture key that says how splits may lie,
// and the mapspace's counts with it, against hand-counted numbers.

#include <gtest/gtest.h>

#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>

#include "test_chips.hpp"

namespace mapex {
namespace {

Level array(std::vector<std::int64_t> shape, SplitPlacement placement) {
  Level l = test::spatial("PEs", std::move(shape));
  l.split_placement = placement;
  return l;
}

TEST(SplitsFitArray, OneAxisPerSplit) {
  const Level eight = array({8, 8}, SplitPlacement::kOneAxis);
  EXPECT_TRUE(splits_fit_array({4, 4}, eight));
  EXPECT_TRUE(splits_fit_array({8, 8}, eight));
  EXPECT_TRUE(splits_fit_array({1, 8, 1, 8}, eight));  // 1s are not splits
  EXPECT_TRUE(splits_fit_array({2, 2, 4}, array({4, 4}, SplitPlacement::kOneAxis)));
  EXPECT_TRUE(splits_fit_array({3, 2}, array({8}, SplitPlacement::kOneAxis)));
  EXPECT_FALSE(splits_fit_array({16}, eight));
  EXPECT_FALSE(splits_fit_array({3, 3}, array({8}, SplitPlacement::kOneAxis)));
  EXPECT_FALSE(splits_fit_array({4, 4, 8}, eight));
  // Timeloop's Eyeriss-like 12 x 14 array: P56 x R3 and
  // K8 x C16 only fit the 168-PE fan-out; R3 x K4 share the 12-PE axis.
  const Level eyeriss = array({12, 14}, SplitPlacement::kOneAxis);
  EXPECT_FALSE(splits_fit_array({56, 3}, eyeriss));
  EXPECT_FALSE(splits_fit_array({8, 16}, eyeriss));
  EXPECT_TRUE(splits_fit_array({8, 14}, eyeriss));
  EXPECT_TRUE(splits_fit_array({3, 4, 14}, eyeriss));
  EXPECT_FALSE(splits_fit_array({3, 5, 14}, eyeriss));  // 15 > 12 and 14 x 5 > 14
}

TEST(SplitsFitArray, AcrossAxesFactorsASplit) {
  const Level eyeriss = array({12, 14}, SplitPlacement::kAcrossAxes);
  EXPECT_TRUE(splits_fit_array({16}, eyeriss));     // 2 x 8 (or 8 x 2)
  EXPECT_TRUE(splits_fit_array({168}, eyeriss));    // 12 x 14
  EXPECT_FALSE(splits_fit_array({17}, eyeriss));    // prime above both axes
  EXPECT_TRUE(splits_fit_array({56, 3}, eyeriss));  // 56 = 4 x 14, then 3 x 4 = 12
}

TEST(SplitsFitArray, FlatChecksTheFanOutOnly) {
  const Level flat = array({12, 14}, SplitPlacement::kFlat);
  EXPECT_TRUE(splits_fit_array({56, 3}, flat));
  EXPECT_TRUE(splits_fit_array({17, 9}, flat));  // 153 <= 168
  EXPECT_FALSE(splits_fit_array({13, 13}, flat));
}

TEST(Placement, StructuralErrorNamesTheLevelAndTheSplits) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 16, 8, 58, 3, 3, 1});
  Architecture arch =
      Architecture::make("eyeriss_test", 1000, 16, 1, 1,
                         {test::buffer("L1", 1 << 20), array({12, 14}, SplitPlacement::kOneAxis),
                          test::buffer("L2", 1 << 22), test::dram()});
  Mapping m = Mapping::trivial(op, arch);
  const DimId p = op.find_dim("P"), r = op.find_dim("R");
  m.level(1).split[static_cast<size_t>(p)] = 56;
  m.level(1).split[static_cast<size_t>(r)] = 3;
  m.level(2).tile = m.span(op, arch, 1);
  const auto error = m.structural_error(op, arch);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error,
            "level 'PEs': splits P56 x R3 cannot be placed on the 12 x 14 array "
            "(split_placement: one_axis)");
  // An explicit placement over both axes is refused on a one-axis level
  // and taken where the level allows it.
  m.level(1).split[static_cast<size_t>(r)] = 1;
  m.level(1).split[static_cast<size_t>(p)] = 24;
  m.level(2).tile = m.span(op, arch, 1);
  m.level(1).axes.assign(static_cast<size_t>(op.num_dims()), {1, 1});
  m.level(1).axes[static_cast<size_t>(p)] = {2, 12};
  ASSERT_TRUE(m.structural_error(op, arch));
  EXPECT_NE(m.structural_error(op, arch)->find("spread its split over 2 axes"), std::string::npos)
      << *m.structural_error(op, arch);
  Architecture across =
      Architecture::make("across", 1000, 16, 1, 1,
                         {test::buffer("L1", 1 << 20), array({12, 14}, SplitPlacement::kAcrossAxes),
                          test::buffer("L2", 1 << 22), test::dram()});
  EXPECT_FALSE(m.structural_error(op, across)) << *m.structural_error(op, across);
}

TEST(Placement, ArchitectureKeyIsParsedAndBadValuesNameTheKey) {
  const std::string head =
      "name: a\nclock_mhz: 100\nword_bits: 8\nmac: {energy_pj: 1}\nlevels:\n  - {name: L1, kind: "
      "buffer, size_bytes: 64}\n"
      "  - name: PEs\n    kind: spatial\n    shape: [2, 2]\n";
  const std::string tail =
      "    noc: {bandwidth_gbps: 1}\n  - {name: DRAM, kind: dram, bandwidth_gbps: 1}\n";
  EXPECT_EQ(Architecture::parse(head + tail, "a.yaml").levels()[1].split_placement,
            SplitPlacement::kOneAxis);
  EXPECT_EQ(Architecture::parse(head + "    split_placement: flat\n" + tail, "a.yaml")
                .levels()[1]
                .split_placement,
            SplitPlacement::kFlat);
  EXPECT_EQ(Architecture::parse(head + "    split_placement: across_axes\n" + tail, "a.yaml")
                .levels()[1]
                .split_placement,
            SplitPlacement::kAcrossAxes);
  try {
    Architecture::parse(head + "    split_placement: diagonal\n" + tail, "a.yaml");
    FAIL() << "a bad split_placement was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a.yaml:10:22: key 'split_placement': expected one_axis, "
                                         "across_axes or flat, got 'diagonal'"),
              std::string::npos)
        << e.what();
  }
}

// GEMM M=4 (N = K = 1) on L1 / PEs / L2 / DRAM, tiles dividing the bounds.
// By hand, the chains (L1 tile, split, L2 tile) of M:
//   L1 1, split 1: L2 1, 2, 4 (3)   L1 1, split 2: L2 2, 4 (2)
//   L1 1, split 4: L2 4 (1)         L1 2, split 1: L2 2, 4 (2)
//   L1 2, split 2: L2 4 (1)         L1 4, split 1: L2 4 (1)
// = 10, one loop order each (a single free loop per level). Only the chain
// with split 4 needs an axis of 4.
BigInt count_m4(std::vector<std::int64_t> shape, SplitPlacement placement) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture arch =
      Architecture::make("chip", 1000, 8, 1, 1,
                         {test::buffer("L1", 1 << 20), array(std::move(shape), placement),
                          test::buffer("L2", 1 << 20), test::dram()});
  const Mapspace space(op, arch);
  // The stream is the count.
  Mapspace::Cursor cursor(space);
  Mapping m;
  std::uint64_t streamed = 0;
  while (cursor.next(m)) {
    EXPECT_FALSE(m.structural_error(op, arch)) << *m.structural_error(op, arch);
    ++streamed;
  }
  EXPECT_EQ(space.count_valid(), BigInt(streamed));
  return space.size();
}

TEST(PlacementMapspace, HandCountedSizes) {
  EXPECT_EQ(count_m4({2, 2}, SplitPlacement::kOneAxis), 9);
  EXPECT_EQ(count_m4({2, 2}, SplitPlacement::kAcrossAxes), 10);
  EXPECT_EQ(count_m4({2, 2}, SplitPlacement::kFlat), 10);
  EXPECT_EQ(count_m4({3, 3}, SplitPlacement::kOneAxis), 9);
  EXPECT_EQ(count_m4({3, 3}, SplitPlacement::kAcrossAxes), 10);
  EXPECT_EQ(count_m4({4}, SplitPlacement::kOneAxis), 10);
  EXPECT_EQ(count_m4({3}, SplitPlacement::kOneAxis), 9);  // no split 4: 3+2+2+1+1
}

// GEMM M=4, N=2 (K=1) on a 3 x 2 array, one axis per split. The split
// pairs (M, N) within the fan-out of 6 are (1,1), (2,1), (4,1), (1,2),
// (2,2); M2 x N2 takes both axes, M4 fits neither. The mappings with
// M4 x N1, by hand: M's one chain with split 4 (L1 1, L2 4: no loop along
// M anywhere) with each of N's three chains with split 1 (L1 1 / L2 1: N
// loops at DRAM; L1 1 / L2 2: at L2; L1 2 / L2 2: at L1), one loop order
// per level each: 3 mappings.
TEST(PlacementMapspace, PlacementStepDropsExactlyTheUnplaceableSplits) {
  const Operator op = make_gemm("g", 4, 2, 1);
  const Architecture arch =
      Architecture::make("chip", 1000, 8, 1, 1,
                         {test::buffer("L1", 1 << 20), array({3, 2}, SplitPlacement::kOneAxis),
                          test::buffer("L2", 1 << 20), test::dram()});
  const Mapspace space(op, arch);
  const auto steps = space.count_steps(false);
  ASSERT_GE(steps.size(), 3u);
  EXPECT_EQ(steps[2].rule, "splits placed on the array's axes");
  EXPECT_EQ(steps[1].size - steps[2].size, 3);
  EXPECT_EQ(space.size(), steps.back().size);
}

}  // namespace
}  // namespace mapex
