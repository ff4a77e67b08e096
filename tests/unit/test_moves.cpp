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
