// Moves inside a mapspace (mapex/moves.hpp), checked against the space
// enumerated by brute force: every move lands in the space, changes one
// thing, and a tile or split move reaches the nearest admitted value.

#include <gtest/gtest.h>

#include <algorithm>
#include <mapex/generators.hpp>
#include <mapex/moves.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test_chips.hpp"

namespace mapex {
namespace {

// A mapping up to the places of its one-trip loops, which the space
// enumerates once (orders that differ only there are the same mapping):
// tiles, splits and the order of the loops that run at each level.
std::string key(const Mapping& m, const Operator& op, const Architecture& arch) {
  std::string out;
  std::vector<std::int64_t> below(static_cast<std::size_t>(op.num_dims()), 1);
  for (int l = 0; l < arch.num_levels(); ++l) {
    const auto span = m.span(op, arch, l);
    const auto& lm = m.level(l);
    out += "|";
    for (auto t : lm.tile) out += std::to_string(t) + ",";
    out += "/";
    for (auto t : lm.split) out += std::to_string(t) + ",";
    out += "/";
    for (DimId d : lm.order)
      if (span[static_cast<std::size_t>(d)] > below[static_cast<std::size_t>(d)])
        out += std::to_string(d) + ",";
    below = span;
  }
  return out;
}

// Every mapping of the space, by key (a set for membership).
std::set<std::string> whole_space(const Mapspace& space) {
  std::set<std::string> out;
  Mapspace::Cursor cursor(space);
  Mapping m;
  while (cursor.next(m)) out.insert(key(m, space.op(), space.arch()));
  return out;
}

// The places where two mappings differ: (level, what, index) triples.
struct Diff {
  int level;
  std::string what;   // "tile", "split" or "order"
  std::size_t count;  // entries that differ
};

std::vector<Diff> diffs(const Mapping& a, const Mapping& b) {
  std::vector<Diff> out;
  for (std::size_t l = 0; l < a.levels().size(); ++l) {
    const auto& x = a.levels()[l];
    const auto& y = b.levels()[l];
    auto count = [](const auto& u, const auto& v) {
      std::size_t n = 0;
      for (std::size_t i = 0; i < std::max(u.size(), v.size()); ++i)
        if (i >= u.size() || i >= v.size() || u[i] != v[i]) ++n;
      return n;
    };
    if (auto n = count(x.tile, y.tile)) out.push_back({static_cast<int>(l), "tile", n});
    if (auto n = count(x.split, y.split)) out.push_back({static_cast<int>(l), "split", n});
    if (auto n = count(x.order, y.order)) out.push_back({static_cast<int>(l), "order", n});
  }
  return out;
}

TEST(MapspaceMoves, ValuesAreTheDivisorsOrEverySize) {
  const Operator op = make_gemm("g", 12, 5, 6000);
  const Architecture arch = test::chip({4});
  const Mapspace factors(op, arch);
  const MapspaceMoves moves(factors);
  EXPECT_EQ(moves.values(0), (std::vector<std::int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(moves.values(1), (std::vector<std::int64_t>{1, 5}));
  MapspaceOptions edge;
  edge.factors_only = false;
  // One buffer and DRAM: with edge tiles a bound of 6000 has 6000 tile
  // chains here (a deeper chip has millions, which the space refuses).
  const Architecture flat =
      Architecture::make("flat", 1000, 8, 1, 1, {test::buffer("L1", 1 << 20), test::dram(100)});
  const Mapspace edges(op, flat, edge);
  const MapspaceMoves edge_moves(edges);
  EXPECT_EQ(edge_moves.values(0).size(), 12u);
  // 6000 > 4096: its 40 divisors (2^4 x 3 x 5^3: 5 x 2 x 4), the powers
  // of two below it that do not divide it (32 ... 4096: 8 more) and the
  // bound itself (a divisor).
  const auto& big = edge_moves.values(2);
  EXPECT_EQ(big.front(), 1);
  EXPECT_EQ(big.back(), 6000);
  EXPECT_EQ(big.size(), 40u + 8u);
  EXPECT_TRUE(std::is_sorted(big.begin(), big.end()));
}

TEST(MapspaceMoves, NeighboursAreInTheSpaceAndChangeOneThing) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 2, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 32);
  const Mapspace space(op, arch);
  const auto all = whole_space(space);
  ASSERT_GT(all.size(), 50u);
  const MapspaceMoves moves(space);
  std::mt19937_64 rng(3);
  std::size_t seen = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    for (const Mapping& n : moves.neighbours(*m)) {
      ++seen;
      EXPECT_TRUE(all.count(key(n, op, arch))) << n.summary(op, arch);
      const auto d = diffs(*m, n);
      ASSERT_EQ(d.size(), 1u) << m->summary(op, arch) << " -> " << n.summary(op, arch);
      if (d[0].what == "order") {
        EXPECT_EQ(d[0].count, 2u);  // a swap of two loops
      } else {
        EXPECT_EQ(d[0].count, 1u);  // one dimension's tile or split
      }
    }
  }
  EXPECT_GT(seen, 100u);
}

TEST(MapspaceMoves, TileMovesReachTheNearestAdmittedValue) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 8, 4, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 64);
  const Mapspace space(op, arch);
  const auto all = whole_space(space);
  const MapspaceMoves moves(space);
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    for (const Mapping& n : moves.neighbours(*m)) {
      const auto d = diffs(*m, n);
      if (d[0].what != "tile") continue;
      const int l = d[0].level;
      DimId dim = 0;
      while (m->level(l).tile[static_cast<std::size_t>(dim)] ==
             n.level(l).tile[static_cast<std::size_t>(dim)])
        ++dim;
      const std::int64_t from = m->level(l).tile[static_cast<std::size_t>(dim)];
      const std::int64_t to = n.level(l).tile[static_cast<std::size_t>(dim)];
      // No value strictly between the two is admitted at that place.
      for (std::int64_t v : moves.values(dim)) {
        if (v <= std::min(from, to) || v >= std::max(from, to)) continue;
        Mapping between = *m;
        between.level(l).tile[static_cast<std::size_t>(dim)] = v;
        EXPECT_FALSE(all.count(key(between, op, arch)))
            << "skipped " << v << " between " << from << " and " << to;
      }
    }
  }
}

TEST(MapspaceMoves, RandomNeighbourIsSeededAndInTheSpace) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 2, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 32);
  const Mapspace space(op, arch);
  const auto all = whole_space(space);
  const MapspaceMoves moves(space);
  std::mt19937_64 start_rng(1);
  const Mapping start = *space.sample(start_rng);
  std::mt19937_64 a(9), b(9);
  for (int i = 0; i < 50; ++i) {
    const auto x = moves.random_neighbour(start, a);
    const auto y = moves.random_neighbour(start, b);
    ASSERT_TRUE(x && y);
    EXPECT_TRUE(*x == *y);
    EXPECT_TRUE(all.count(key(*x, op, arch)));
    EXPECT_FALSE(*x == start);
  }
}

TEST(MapspaceMoves, CrossoverTakesEachDimensionFromOneParent) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 2, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 32);
  const Mapspace space(op, arch);
  const auto all = whole_space(space);
  const MapspaceMoves moves(space);
  std::mt19937_64 rng(2);
  int children = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Mapping a = *space.sample(rng), b = *space.sample(rng);
    const auto child = moves.crossover(a, b, rng);
    if (!child) continue;
    ++children;
    EXPECT_TRUE(all.count(key(*child, op, arch)));
    for (DimId d = 0; d < op.num_dims(); ++d) {
      bool from_a = true, from_b = true;
      for (int l = 0; l < arch.num_levels(); ++l) {
        const auto& c = child->level(l);
        const auto i = static_cast<std::size_t>(d);
        auto same = [&](const LevelMapping& p) {
          return (c.tile.empty() || c.tile[i] == p.tile[i]) &&
                 (c.split.empty() || c.split[i] == p.split[i]);
        };
        from_a = from_a && same(a.level(l));
        from_b = from_b && same(b.level(l));
      }
      EXPECT_TRUE(from_a || from_b) << "dimension " << d;
    }
  }
  EXPECT_GT(children, 20);
}

// A GEMM M=12, N=4, K=6 on L1 / 4 PEs / L2 / DRAM with M's trip counts
// 2 (L1), 2 (PEs), 3 (L2), 1 (DRAM); N and K whole in L1.
Mapping gemm_mapping(const Operator& op, const Architecture& arch) {
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {2, 4, 6};
  m.level(1).split = {2, 1, 1};
  m.level(2).tile = {12, 4, 6};
  return m;
}

// The trip counts of dimension d, level by level (DRAM's over the bound).
std::vector<std::int64_t> trips(const Mapping& m, const Operator& op, const Architecture& arch,
                                DimId d) {
  std::vector<std::int64_t> out;
  std::int64_t child = 1;
  for (int l = 0; l < arch.num_levels(); ++l) {
    const std::int64_t span = l + 1 == arch.num_levels()
                                  ? op.dims()[static_cast<std::size_t>(d)].bound
                                  : m.span(op, arch, l)[static_cast<std::size_t>(d)];
    out.push_back(span / child);
    child = span;
  }
  return out;
}

TEST(MapspaceMoves, TransferMovesOneFactorAndKeepsTheOtherTripCounts) {
  const Operator op = make_gemm("g", 12, 4, 6);
  const Architecture arch = test::chip({4});
  const Mapspace space(op, arch);
  const MapspaceMoves moves(space);
  const Mapping m = gemm_mapping(op, arch);
  ASSERT_FALSE(space.reject_reason(m)) << *space.reject_reason(m);
  ASSERT_EQ(trips(m, op, arch, 0), (std::vector<std::int64_t>{2, 2, 3, 1}));
  // L2's 3 into L1: L1 tile 6, the split stays 2 (span 12), L2 runs once.
  const auto down = moves.transfer(m, 0, 2, 0, 3);
  ASSERT_TRUE(down);
  EXPECT_EQ(trips(*down, op, arch, 0), (std::vector<std::int64_t>{6, 2, 1, 1}));
  EXPECT_EQ(down->level(0).tile[0], 6);
  EXPECT_EQ(down->level(1).split[0], 2);
  EXPECT_EQ(down->level(2).tile[0], 12);
  // The PEs' 2 out to DRAM: split 1, L2 tile 6, two DRAM trips.
  const auto up = moves.transfer(m, 0, 1, 3, 2);
  ASSERT_TRUE(up);
  EXPECT_EQ(trips(*up, op, arch, 0), (std::vector<std::int64_t>{2, 1, 3, 2}));
  EXPECT_EQ(up->level(2).tile[0], 6);
  // L1's 2 onto the array: split 4 (the array full), L2 still 3 trips.
  const auto spread = moves.transfer(m, 0, 0, 1, 2);
  ASSERT_TRUE(spread);
  EXPECT_EQ(trips(*spread, op, arch, 0), (std::vector<std::int64_t>{1, 4, 3, 1}));
  // The other dimensions are untouched.
  for (const auto& t : {*down, *up, *spread})
    for (DimId d = 1; d < 3; ++d) EXPECT_EQ(trips(t, op, arch, d), trips(m, op, arch, d));
  // Refused: 2 does not divide L2's 3; a split of 6 exceeds the 4 PEs; N
  // has no factor at the PEs; a factor to its own level.
  EXPECT_FALSE(moves.transfer(m, 0, 2, 0, 2));
  EXPECT_FALSE(moves.transfer(m, 0, 2, 1, 3));
  EXPECT_FALSE(moves.transfer(m, 1, 1, 0, 2));
  EXPECT_FALSE(moves.transfer(m, 0, 2, 2, 3));
}

TEST(MapspaceMoves, TransfersAreInTheSpaceAndMoveOneFactorOfOneDimension) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 2, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 32);
  const Mapspace space(op, arch);
  const auto all = whole_space(space);
  const MapspaceMoves moves(space);
  std::mt19937_64 rng(4);
  std::size_t seen = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    for (const Mapping& n : moves.transfers(*m)) {
      ++seen;
      EXPECT_TRUE(all.count(key(n, op, arch))) << n.summary(op, arch);
      int changed_dims = 0;
      for (DimId d = 0; d < op.num_dims(); ++d) {
        const auto a = trips(*m, op, arch, d), b = trips(n, op, arch, d);
        if (a == b) continue;
        ++changed_dims;
        // Two levels change, by one prime factor each way (every bound
        // here is 1, 2 or 4: the factor is 2); the product stays.
        int lower = 0, higher = 0;
        for (std::size_t l = 0; l < a.size(); ++l) {
          if (b[l] == a[l]) continue;
          if (b[l] * 2 == a[l]) ++lower;
          if (b[l] == a[l] * 2) ++higher;
        }
        EXPECT_EQ(lower, 1);
        EXPECT_EQ(higher, 1);
      }
      EXPECT_EQ(changed_dims, 1) << m->summary(op, arch) << " -> " << n.summary(op, arch);
    }
  }
  EXPECT_GT(seen, 50u);
}

// On an array that must stay full (utilisation 1), no one-value move
// changes a split; two transfers at once trade one split dimension for
// another.
TEST(MapspaceMoves, TwoTransfersTradeSplitsOnAFullArray) {
  const Operator op = make_gemm("g", 4, 4, 2);
  const Architecture arch = test::chip({2, 2});
  MapspaceOptions full;
  full.min_utilization = 1.0;
  const Mapspace space(op, arch, full);
  const MapspaceMoves moves(space);
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split = {2, 2, 1};
  m.level(2).tile = {4, 4, 2};
  ASSERT_FALSE(space.reject_reason(m)) << *space.reject_reason(m);
  const auto splits_changed = [&](const Mapping& n) {
    return n.level(1).split != m.level(1).split;
  };
  for (const Mapping& n : moves.neighbours(m)) EXPECT_FALSE(splits_changed(n));
  for (const Mapping& n : moves.transfers(m)) EXPECT_FALSE(splits_changed(n));
  std::mt19937_64 a(11), b(11);
  int traded = 0;
  for (int i = 0; i < 200; ++i) {
    const auto x = moves.random_transfer(m, a, 2);
    const auto y = moves.random_transfer(m, b, 2);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) continue;
    EXPECT_TRUE(*x == *y);  // seeded
    EXPECT_FALSE(space.reject_reason(*x));
    EXPECT_FALSE(*x == m);
    if (splits_changed(*x)) ++traded;
  }
  EXPECT_GT(traded, 0);
}

TEST(MapspaceMoves, GraftTakesTheSplitsAndTheTilesOfTheDimensionsSplitDifferently) {
  const Operator op = make_gemm("g", 4, 4, 2);
  const Architecture arch = test::chip({2, 2});
  const Mapspace space(op, arch);
  const MapspaceMoves moves(space);
  Mapping a = Mapping::trivial(op, arch);
  a.level(0).tile = {2, 1, 1};
  a.level(1).split = {2, 2, 1};
  a.level(2).tile = {4, 4, 2};
  Mapping b = Mapping::trivial(op, arch);
  b.level(0).tile = {1, 2, 1};
  b.level(1).split = {2, 1, 2};
  b.level(2).tile = {4, 4, 2};
  b.level(2).order = {2, 1, 0};
  ASSERT_FALSE(space.reject_reason(a));
  ASSERT_FALSE(space.reject_reason(b));
  const auto g = moves.graft_splits(a, b);
  ASSERT_TRUE(g);
  // M is split 2 in both: a's tiles; N and K from b, with b's splits.
  EXPECT_EQ(g->level(0).tile, (std::vector<std::int64_t>{2, 2, 1}));
  EXPECT_EQ(g->level(1).split, (std::vector<std::int64_t>{2, 1, 2}));
  EXPECT_EQ(g->level(2).tile, (std::vector<std::int64_t>{4, 4, 2}));
  EXPECT_EQ(g->level(2).order, a.level(2).order);  // orders stay a's
  EXPECT_FALSE(space.reject_reason(*g));
  EXPECT_FALSE(moves.graft_splits(a, a));  // no split differs
}

// The values of one level over the chains the rules allow (hand-counted:
// M = 12 on L1 / 4 PEs / L2 / DRAM, factors-only tiles).
TEST(MapspaceLevelValues, TheLevelsValuesOverTheAllowedChains) {
  const Operator op = make_gemm("g", 12, 5, 6);
  const Architecture arch = test::chip({4});
  const Mapspace free_space(op, arch);
  EXPECT_EQ(free_space.level_values(0, 2), (std::vector<std::int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(free_space.level_values(0, 1), (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(free_space.level_values(1, 1), (std::vector<std::int64_t>{1}));  // 5 > 4 PEs
  MapspaceOptions fixed;
  fixed.levels.resize(4);
  fixed.levels[0].fixed = {4, 0, 0};  // M's L1 tile is 4
  const Mapspace pinned(op, arch, fixed);
  // L2 holds a multiple of 4 that divides 12; the PEs split 1 or 3.
  EXPECT_EQ(pinned.level_values(0, 2), (std::vector<std::int64_t>{4, 12}));
  EXPECT_EQ(pinned.level_values(0, 1), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(pinned.level_values(0, 0), (std::vector<std::int64_t>{4}));
}

// The visited set tells mappings apart as the space does: the streamed
// space's keys are all new, a mapping streamed again is not, and one whose
// one-trip loops sit elsewhere is the same mapping.
TEST(VisitedMappings, OneEntryPerMappingOfTheSpace) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 2, 4, 2, 1, 1});
  const Architecture arch = test::chip({2}, 32);
  const Mapspace space(op, arch);
  VisitedMappings visited(space);
  std::size_t n = 0;
  Mapping m;
  for (Mapspace::Cursor c(space); c.next(m); ++n) EXPECT_TRUE(visited.insert(m));
  ASSERT_GT(n, 50u);
  EXPECT_EQ(visited.size(), n);
  for (Mapspace::Cursor c(space); c.next(m);) {
    EXPECT_TRUE(visited.contains(m));
    EXPECT_FALSE(visited.insert(m));
    // The L2 order (level 2) with its first one-trip loop moved innermost.
    Mapping moved = m;
    auto& order = moved.level(2).order;
    const std::uint32_t running = space.free_loops(m, 2);
    const auto one_trip =
        std::find_if(order.begin(), order.end(), [&](DimId d) { return !(running >> d & 1u); });
    if (one_trip == order.end()) continue;
    const DimId d = *one_trip;
    order.erase(one_trip);
    order.push_back(d);
    EXPECT_TRUE(visited.contains(moved));
  }
  EXPECT_EQ(visited.size(), n);
  Mapping other = Mapping::trivial(op, arch);
  other.level(0).tile[0] = 3;  // not in the space, and not visited
  EXPECT_FALSE(visited.contains(other));
}

}  // namespace
}  // namespace mapex
