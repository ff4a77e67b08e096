// Unit tests of the mapspace: exact counts against a brute-force
// enumeration written independently here (every tile, split and loop
// order, filtered by the rules restated in the simplest terms), the
// streamed space equal to that set, chunks that partition it, uniform
// sampling, constraint resolution and its errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mapex/analysis.hpp>
#include <mapex/constraints.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>
#include <set>

#include "test_chips.hpp"

namespace mapex {
namespace {

using test::chip;

// --- the reference ------------------------------------------------------------

bool divides(std::int64_t a, std::int64_t b) { return b % a == 0; }

/// Every mapping of `op` on a chip L1 / PEs / L2 / DRAM, by brute force.
std::set<std::string> brute_force(const Operator& op, const Architecture& arch,
                                  const MapspaceOptions& o) {
  const int n = op.num_dims();
  const std::int64_t fanout = arch.levels()[1].fanout();
  const int max_par = o.max_parallel_dims > 0 ? o.max_parallel_dims
                                              : static_cast<int>(arch.levels()[1].shape.size());
  // Per dimension: (l1, split, l2) triples.
  std::vector<std::vector<std::array<std::int64_t, 3>>> choices(static_cast<size_t>(n));
  for (DimId d = 0; d < n; ++d) {
    const std::int64_t b = op.dims()[static_cast<size_t>(d)].bound;
    for (std::int64_t t1 = 1; t1 <= b; ++t1)
      for (std::int64_t s = 1; s <= fanout; ++s)
        for (std::int64_t t2 = 1; t2 <= b; ++t2) {
          const std::int64_t span = std::min(t1 * s, b);
          if (t1 * (s - 1) >= b) continue;  // an idle child
          if (t2 < span) continue;
          if (o.factors_only && !(divides(t1, b) && span == t1 * s && divides(span, b) &&
                                  divides(span, t2) && divides(t2, b)))
            continue;
          choices[static_cast<size_t>(d)].push_back({t1, s, t2});
        }
  }
  std::set<std::string> out;
  std::vector<std::size_t> idx(static_cast<size_t>(n), 0);
  std::function<void(int)> rec = [&](int d) {
    if (d < n) {
      for (idx[static_cast<size_t>(d)] = 0;
           idx[static_cast<size_t>(d)] < choices[static_cast<size_t>(d)].size();
           ++idx[static_cast<size_t>(d)])
        rec(d + 1);
      return;
    }
    Mapping m = Mapping::trivial(op, arch);
    std::int64_t used = 1;
    int parallel = 0;
    for (DimId e = 0; e < n; ++e) {
      const auto& c = choices[static_cast<size_t>(e)][idx[static_cast<size_t>(e)]];
      m.level(0).tile[static_cast<size_t>(e)] = c[0];
      m.level(1).split[static_cast<size_t>(e)] = c[1];
      m.level(2).tile[static_cast<size_t>(e)] = c[2];
      used *= c[1];
      parallel += c[1] > 1;
      if (!o.levels.empty()) {
        const auto& pe = o.levels[1];
        if (c[1] > 1 && !(pe.parallel_mask >> e & 1u)) return;
        for (int level : {0, 1, 2}) {
          const auto& f = o.levels[static_cast<size_t>(level)].fixed;
          if (!f.empty() && f[static_cast<size_t>(e)] &&
              f[static_cast<size_t>(e)] != c[static_cast<size_t>(level)])
            return;
        }
      }
    }
    if (used > fanout || parallel > max_par) return;
    if (used < o.min_utilization * static_cast<double>(arch.num_pes()) - 1e-9) return;
    if (o.check_capacity && capacity_error(op, arch, m)) return;
    // Free loops per data level (trip count above 1) and every order of them.
    std::vector<std::vector<DimId>> free(3);
    const auto s0 = m.span(op, arch, 0), s1 = m.span(op, arch, 1), s2 = m.span(op, arch, 2);
    for (DimId e = 0; e < n; ++e) {
      const auto eu = static_cast<size_t>(e);
      const std::int64_t b = op.dims()[eu].bound;
      if (s0[eu] > 1) free[0].push_back(e);
      if ((s2[eu] + s1[eu] - 1) / s1[eu] > 1) free[1].push_back(e);
      if ((b + s2[eu] - 1) / s2[eu] > 1) free[2].push_back(e);
    }
    const int levels[3] = {0, 2, 3};
    std::function<void(int)> orders = [&](int k) {
      if (k == 3) {
        out.insert(m.to_yaml(op, arch));
        return;
      }
      std::vector<DimId> perm = free[static_cast<size_t>(k)];
      do {
        if (!o.levels.empty()) {
          const LevelRule& r = o.levels[static_cast<size_t>(levels[k])];
          bool ok = r.orders.empty();
          for (const auto& full : r.orders) {
            std::vector<DimId> restricted;
            for (DimId e : full)
              if (std::count(perm.begin(), perm.end(), e)) restricted.push_back(e);
            ok = ok || restricted == perm;
          }
          bool stat = r.stationary.empty();
          for (int t : r.stationary) {
            // No loop indexing t inside one that does not.
            bool seen_irrelevant = false, good = true;
            for (DimId e : perm) {
              const bool rel = op.tensors()[static_cast<size_t>(t)].relevant(e);
              if (!rel) seen_irrelevant = true;
              if (rel && seen_irrelevant) good = false;
            }
            stat = stat || good;
          }
          if (!ok || !stat) continue;
        }
        auto& order = m.level(levels[k]).order;
        order.clear();
        for (DimId e = 0; e < n; ++e)
          if (!std::count(perm.begin(), perm.end(), e)) order.push_back(e);
        order.insert(order.end(), perm.begin(), perm.end());
        orders(k + 1);
      } while (std::next_permutation(perm.begin(), perm.end()));
    };
    orders(0);
  };
  rec(0);
  return out;
}

std::vector<std::string> stream(const Mapspace& space, const Mapspace::Chunk* chunk = nullptr) {
  Mapspace::Cursor cursor = chunk ? Mapspace::Cursor(space, *chunk) : Mapspace::Cursor(space);
  std::vector<std::string> out;
  Mapping m;
  while (cursor.next(m)) {
    EXPECT_FALSE(space.reject_reason(m)) << *space.reject_reason(m);
    out.push_back(m.to_yaml(space.op(), space.arch()));
  }
  return out;
}

struct Case {
  const char* name;
  std::function<MapspaceOptions(const Operator&, const Architecture&)> options;
  std::int64_t l1_bytes = 1 << 20;
};

ConstraintSpec spec_with(std::function<void(ConstraintSpec&)> f) {
  ConstraintSpec s;
  f(s);
  return s;
}

class MapspaceAgainstBruteForce : public ::testing::TestWithParam<Case> {};

TEST_P(MapspaceAgainstBruteForce, CountsAndStreamAreTheSpace) {
  const Operator op = make_gemm("g", 4, 2, 3);
  const Architecture arch = chip({2, 2}, GetParam().l1_bytes);
  const MapspaceOptions o = GetParam().options(op, arch);
  const Mapspace space(op, arch, o);
  const auto expected = brute_force(op, arch, o);
  ASSERT_FALSE(expected.empty());

  const auto got = stream(space);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected);  // and no duplicates
  EXPECT_EQ(space.count_valid(), BigInt(expected.size()));
  if (!o.check_capacity) {
    EXPECT_EQ(space.size(), BigInt(expected.size()));
  }

  // Chunks partition the stream, in order.
  const auto chunks = space.chunks(7);
  EXPECT_GE(chunks.size(), 7u);
  std::vector<std::string> joined;
  for (const auto& c : chunks) {
    const auto part = stream(space, &c);
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_EQ(joined, got);

  // The cursor's rejection count is exact: size = valid + rejected.
  Mapspace::Cursor cursor(space);
  Mapping m;
  std::uint64_t valid = 0;
  while (cursor.next(m)) ++valid;
  EXPECT_EQ(BigInt(valid + cursor.rejected()), space.size());
}

INSTANTIATE_TEST_SUITE_P(
    Rules, MapspaceAgainstBruteForce,
    ::testing::Values(
        Case{"factors",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) { s.check_capacity = false; }), op,
                              a);
             }},
        Case{"edge_tiles",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.factors_only = false;
                                s.check_capacity = false;
                              }),
                              op, a);
             }},
        Case{"one_parallel_dim",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.max_parallel_dims = 1;
                                s.factors_only = false;
                              }),
                              op, a);
             }},
        Case{"capacity",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) { s.factors_only = false; }), op, a);
             },
             6},
        Case{"utilization",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.min_utilization = 0.5;
                                s.factors_only = false;
                              }),
                              op, a);
             }},
        Case{"weight_stationary",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) { s.style = "weight_stationary"; }),
                              op, a);
             },
             12},
        Case{"dmazerunner",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.style = "dmazerunner";
                                s.factors_only = false;
                              }),
                              op, a);
             }},
        Case{"orders_and_fixed",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.factors_only = false;
                                LevelConstraintSpec l2;
                                l2.level = "L2";
                                l2.orders = {{"M", "N", "K"}, {"K", "N", "M"}};
                                l2.fixed = {{"M", 4}};
                                LevelConstraintSpec pes;
                                pes.level = "PEs";
                                pes.parallel = std::vector<std::string>{"M", "K"};
                                s.levels = {l2, pes};
                              }),
                              op, a);
             }}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

TEST(Mapspace, CountStepsShrinkToTheValidSpace) {
  const Operator op =
      make_conv2d("c", Conv2dShape{.N = 1, .C = 8, .K = 16, .H = 8, .W = 8, .R = 3, .S = 3});
  const Architecture arch = chip({4, 4}, 64);
  ConstraintSpec spec;
  spec.min_utilization = 0.5;
  spec.style = "weight_stationary";
  const Mapspace space(op, arch, resolve(spec, op, arch));
  const auto steps = space.count_steps();
  ASSERT_GE(steps.size(), 4u);
  for (size_t i = 1; i < steps.size(); ++i)
    EXPECT_LE(steps[i].size, steps[i - 1].size) << steps[i].rule;
  EXPECT_EQ(steps.back().size, space.count_valid());
  EXPECT_GT(steps.back().size, 0);
}

TEST(Mapspace, SamplingIsUniformOverValidMappings) {
  const Operator op = make_gemm("g", 2, 2, 2);
  const Architecture arch = chip({2}, 6);
  MapspaceOptions o;
  o.factors_only = true;
  const Mapspace space(op, arch, o);
  const auto all = brute_force(op, arch, o);
  ASSERT_GT(all.size(), 10u);
  std::map<std::string, int> hits;
  std::mt19937_64 rng(3);
  const int draws = 200 * static_cast<int>(all.size());
  for (int i = 0; i < draws; ++i) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    ++hits[m->to_yaml(op, arch)];
  }
  EXPECT_EQ(hits.size(), all.size());  // every valid mapping, nothing else
  for (const auto& [yaml, count] : hits) {
    EXPECT_TRUE(all.count(yaml));
    // 200 expected per mapping; 6 standard deviations is about 85.
    EXPECT_NEAR(count, 200, 85) << yaml;
  }
}

TEST(Mapspace, SamplesAreSeeded) {
  const Operator op =
      make_conv2d("c", Conv2dShape{.N = 1, .C = 8, .K = 16, .H = 8, .W = 8, .R = 3, .S = 3});
  const Architecture arch = chip({4, 4}, 256);
  const Mapspace space(op, arch);
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 50; ++i) {
    const auto ma = space.sample(a), mb = space.sample(b);
    ASSERT_TRUE(ma && mb);
    EXPECT_EQ(*ma, *mb);
  }
}

TEST(Mapspace, HugeSpacesAreCountedExactly) {
  // VGG16 conv1_2 with edge tiles on a 168-PE chip: far beyond 2^64.
  const Operator op = make_conv2d("c", Conv2dShape{.N = 1,
                                                   .C = 64,
                                                   .K = 64,
                                                   .H = 224,
                                                   .W = 224,
                                                   .R = 3,
                                                   .S = 3,
                                                   .padding_h = 1,
                                                   .padding_w = 1});
  const Architecture arch = chip({12, 14});
  MapspaceOptions o;
  o.check_capacity = false;
  const Mapspace factors(op, arch, o);
  EXPECT_GT(factors.size(), BigInt(1) << 40);
  o.factors_only = false;
  // Counting needs only the chains per dimension, not the space.
  const Mapspace edges(op, arch, o);
  EXPECT_GT(edges.size(), BigInt(1) << 64);
  EXPECT_GT(edges.size(), factors.size());
}

TEST(Mapspace, RejectReasonsNameTheRule) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({2, 2}, 8);
  ConstraintSpec spec;
  spec.max_parallel_dims = 1;
  const Mapspace space(op, arch, resolve(spec, op, arch));
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split = {2, 2, 1};
  m.level(2).tile = {2, 2, 1};
  EXPECT_EQ(space.reject_reason(m)->rfind("parallel_dims", 0), 0u);
  Mapping big = Mapping::trivial(op, arch);
  big.level(0).tile = {4, 4, 4};
  big.level(2).tile = {4, 4, 4};
  EXPECT_EQ(space.reject_reason(big)->rfind("capacity", 0), 0u);
}

TEST(Mapspace, LargestOuterTileFitsAndIsMaximal) {
  const Operator op = make_gemm("g", 8, 8, 8);
  const Architecture arch =
      Architecture::make("c", 1000, 8, 1, 1,
                         {test::buffer("L1", 1 << 20), test::spatial("PEs", {4}),
                          test::buffer("L2", 2 * 48), test::dram()});
  const Mapspace space(op, arch);
  const auto tile = space.largest_outer_tile();
  ASSERT_EQ(tile.size(), 3u);
  // Double-buffered 96 B holds 48 words: A, B and C tiles of 4x4 each.
  const double bytes = required_bytes(op, arch, 2, tile);
  EXPECT_LE(bytes, 96);
  EXPECT_EQ(bytes, 96);
}

// --- constraint resolution ------------------------------------------------------

void expect_error(const ConstraintSpec& spec, const Operator& op, const Architecture& arch,
                  const std::string& key, const std::string& fragment) {
  try {
    resolve(spec, op, arch);
    ADD_FAILURE() << "no error, expected " << fragment;
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), key);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Constraints, ContradictionsAreInputErrors) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({2, 2});
  auto level = [](std::string name, std::function<void(LevelConstraintSpec&)> f) {
    ConstraintSpec s;
    LevelConstraintSpec l;
    l.level = std::move(name);
    f(l);
    s.levels.push_back(l);
    return s;
  };
  expect_error(level("L3", [](auto&) {}), op, arch, "level", "no level 'L3'");
  expect_error(level("PEs", [](auto& l) { l.parallel = std::vector<std::string>{"Z"}; }), op, arch,
               "parallel", "no dimension 'Z'");
  expect_error(level("L2", [](auto& l) { l.parallel = std::vector<std::string>{"M"}; }), op, arch,
               "parallel", "not spatial");
  expect_error(level("PEs",
                     [](auto& l) {
                       l.fixed = {{"M", 8}};
                     }),
               op, arch, "fixed", "out of range");
  expect_error(level("PEs",
                     [](auto& l) {
                       l.parallel = std::vector<std::string>{"N"};
                       l.fixed = {{"M", 2}};
                     }),
               op, arch, "fixed", "may not split it");
  expect_error(level("L2",
                     [](auto& l) {
                       l.orders = {{"M", "N"}};
                     }),
               op, arch, "orders", "every dimension once");
  expect_error(level("PEs", [](auto& l) { l.stationary = {"A"}; }), op, arch, "stationary",
               "spatial");
  expect_error(level("L2", [](auto& l) { l.stationary = {"Q"}; }), op, arch, "stationary",
               "no tensor 'Q'");
  ConstraintSpec util;
  util.min_utilization = 1.5;
  expect_error(util, op, arch, "min_utilization", "[0, 1]");
  ConstraintSpec rs;
  rs.style = "row_stationary";
  expect_error(rs, op, arch, "style", "needs a convolution");
  ConstraintSpec unknown;
  unknown.style = "banana";
  expect_error(unknown, op, arch, "style", "unknown mapping style");
}

TEST(Constraints, StylesSplitTheirDimensionsOnly) {
  const Operator op =
      make_conv2d("c", Conv2dShape{.N = 1, .C = 8, .K = 8, .H = 6, .W = 6, .R = 3, .S = 3});
  const Architecture arch = chip({4, 4}, 4096);
  const std::map<std::string, std::set<std::string>> allowed{{"weight_stationary", {"K", "C"}},
                                                             {"output_stationary", {"P", "Q"}},
                                                             {"row_stationary", {"R", "P"}},
                                                             {"interstellar", {"K", "C"}},
                                                             {"dmazerunner", {"K"}}};
  for (const auto& [style, dims] : allowed) {
    SCOPED_TRACE(style);
    ConstraintSpec spec;
    spec.style = style;
    const Mapspace space(op, arch, resolve(spec, op, arch));
    Mapspace::Cursor cursor(space);
    Mapping m;
    std::uint64_t seen = 0;
    while (cursor.next(m) && seen < 20000) {
      ++seen;
      for (DimId d = 0; d < op.num_dims(); ++d)
        if (m.level(1).split[static_cast<size_t>(d)] > 1) {
          EXPECT_TRUE(dims.count(op.dims()[static_cast<size_t>(d)].name));
        }
    }
    EXPECT_GT(seen, 0u);
  }
}

}  // namespace
}  // namespace mapex
