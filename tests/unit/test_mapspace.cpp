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

/// Whether split factors fit a spatial level's array, restated by brute
/// force: every way to give each factor (one_axis) or each of its integer
/// factorisations over the axes (across_axes) to the axes, products per
/// axis within the axis sizes; a flat level only checks the product.
bool placeable_reference(const std::vector<std::int64_t>& splits, const Level& level) {
  std::vector<std::int64_t> factors;
  std::int64_t product = 1;
  for (auto f : splits)
    if (f > 1) {
      factors.push_back(f);
      product *= f;
    }
  if (level.split_placement == SplitPlacement::kFlat) return product <= level.fanout();
  const size_t axes = level.shape.size();
  std::vector<std::int64_t> load(axes, 1);
  std::function<bool(size_t)> place = [&](size_t i) -> bool {
    if (i == factors.size()) {
      for (size_t a = 0; a < axes; ++a)
        if (load[a] > level.shape[a]) return false;
      return true;
    }
    // Every tuple of per-axis parts whose product is the factor.
    std::vector<std::int64_t> part(axes, 1);
    std::function<bool(size_t, std::int64_t)> spread = [&](size_t a, std::int64_t left) -> bool {
      if (a + 1 == axes) {
        part[a] = left;
      } else {
        for (std::int64_t g = 1; g <= left; ++g) {
          if (left % g) continue;
          part[a] = g;
          if (spread(a + 1, left / g)) return true;
        }
        return false;
      }
      int used = 0;
      for (auto p : part) used += p > 1;
      if (level.split_placement == SplitPlacement::kOneAxis && used > 1) return false;
      for (size_t b = 0; b < axes; ++b) load[b] *= part[b];
      const bool ok = place(i + 1);
      for (size_t b = 0; b < axes; ++b) load[b] /= part[b];
      return ok;
    };
    return spread(0, factors[i]);
  };
  return place(0);
}

/// A level's loop order: the one-trip loops outermost, then `perm`.
void set_order(std::vector<DimId>& order, int n, const std::vector<DimId>& perm) {
  order.clear();
  for (DimId e = 0; e < n; ++e)
    if (!std::count(perm.begin(), perm.end(), e)) order.push_back(e);
  order.insert(order.end(), perm.begin(), perm.end());
}

/// Whether the loop order `perm` (the level's loops of more than one trip)
/// obeys the level's rule: a listed order restricted to those loops, and
/// for each stationary tensor no loop indexing it inside one that does not.
bool order_allowed(const Operator& op, const LevelRule& r, const std::vector<DimId>& perm) {
  bool listed = r.orders.empty();
  for (const auto& full : r.orders) {
    std::vector<DimId> restricted;
    for (DimId e : full)
      if (std::count(perm.begin(), perm.end(), e)) restricted.push_back(e);
    listed = listed || restricted == perm;
  }
  // Pinned innermost loops: the pinned loops present in `perm` are its
  // last entries, in the pinned order.
  std::vector<DimId> pinned;
  for (DimId e : r.innermost)
    if (std::count(perm.begin(), perm.end(), e)) pinned.push_back(e);
  const bool pins_hold = perm.size() >= pinned.size() &&
                         std::vector<DimId>(perm.end() - static_cast<std::ptrdiff_t>(pinned.size()),
                                            perm.end()) == pinned;
  if (!pins_hold) return false;
  bool stationary = r.stationary.empty();
  for (int t : r.stationary) {
    bool seen_irrelevant = false, good = true;
    for (DimId e : perm) {
      const bool relevant = op.tensors()[static_cast<size_t>(t)].relevant(e);
      if (!relevant) seen_irrelevant = true;
      if (relevant && seen_irrelevant) good = false;
    }
    stationary = stationary || good;
  }
  return listed && stationary;
}

/// Whether every level's factor of every dimension is within its bounds:
/// a spatial level's split, a data level's trip count ceil(span / span
/// below), DRAM's span being the bound.
bool factors_within_limits(const Operator& op, const Architecture& arch, const MapspaceOptions& o,
                           const Mapping& m) {
  if (o.levels.empty()) return true;
  const int n = op.num_dims();
  for (int i = 0; i < arch.num_levels(); ++i) {
    const LevelRule& r = o.levels[static_cast<size_t>(i)];
    const bool spatial = arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial;
    const bool dram = i + 1 == arch.num_levels();
    for (DimId e = 0; e < n; ++e) {
      const auto eu = static_cast<size_t>(e);
      const std::int64_t span = dram ? op.dims()[eu].bound : m.span(op, arch, i)[eu];
      const std::int64_t below = i == 0 ? 1 : m.span(op, arch, i - 1)[eu];
      const std::int64_t factor = spatial ? m.level(i).split[eu] : (span + below - 1) / below;
      if (!r.max_factor.empty() && r.max_factor[eu] && factor > r.max_factor[eu]) return false;
      if (!r.min_factor.empty() && r.min_factor[eu] && factor < r.min_factor[eu]) return false;
    }
  }
  return true;
}

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
    if (!factors_within_limits(op, arch, o, m)) return;
    if (!placeable_reference(m.level(1).split, arch.levels()[1])) return;
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
        if (!o.levels.empty() && !order_allowed(op, o.levels[static_cast<size_t>(levels[k])], perm))
          continue;
        set_order(m.level(levels[k]).order, n, perm);
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

  // The first k chunks alone are the first k of all of them (a budgeted
  // sweep cuts only those it reaches).
  for (const std::size_t k : {std::size_t{1}, std::size_t{3}, chunks.size(), chunks.size() + 5}) {
    const auto first = space.chunks(7, k);
    ASSERT_EQ(first.size(), std::min(k, chunks.size()));
    for (std::size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(first[i].prefix, chunks[i].prefix);
      EXPECT_EQ(first[i].keep_combo, chunks[i].keep_combo);
    }
  }

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
             }},
        Case{"factor_limits_and_innermost",
             [](const Operator& op, const Architecture& a) {
               return resolve(spec_with([](ConstraintSpec& s) {
                                s.factors_only = false;
                                LevelConstraintSpec l1, pes, l2, dram;
                                l1.level = "L1";
                                l1.max_factor = {{"K", {2, {}}}};
                                pes.level = "PEs";
                                pes.min_factor = {{"N", {2, {}}}};
                                l2.level = "L2";
                                l2.max_factor = {{"M", {2, {}}}};
                                l2.innermost = {"N", "K"};
                                dram.level = "DRAM";
                                dram.min_factor = {{"K", {2, {}}}};
                                dram.innermost = {"M"};
                                s.levels = {l1, pes, l2, dram};
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
  // M4 fits the fan-out of 4 but no axis of the 2 x 2 array.
  expect_error(level("PEs",
                     [](auto& l) {
                       l.fixed = {{"M", 4}};
                     }),
               op, arch, "fixed",
               "(M=4) cannot be placed on its array (split_placement: one_axis)");
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

// --- any chain of levels: counts step by step against brute force -------------

/// Which rules the general reference applies (the steps of count_steps).
struct RefRules {
  bool parallel = true, fixed = true, orders = true, utilization = true, capacity = true;
  bool placement = true, limits = true;
};

/// Every mapping of `op` on any chain of buffer and spatial levels ending in
/// DRAM, by brute force, restated from the definitions (Marvel §5,
/// generalised): per dimension a value per level (a tile on a buffer, at
/// least the span below it; a split on a spatial level, with no idle
/// child); then per level the fan-out, the split-dimension limit, allowed
/// and fixed values; the utilisation bound over all spatial levels; buffer
/// capacity; and every order of the free loops of each data level, filtered
/// by the order rules. Counts the mappings, and collects them when `out`.
std::uint64_t brute_force_chain(const Operator& op, const Architecture& arch,
                                const MapspaceOptions& o, RefRules rules,
                                std::set<std::string>* out = nullptr) {
  const int n = op.num_dims();
  const int L = arch.num_levels();
  auto level = [&](int i) -> const Level& { return arch.levels()[static_cast<size_t>(i)]; };
  auto fixed = [&](int i, DimId d) -> std::int64_t {
    if (o.levels.empty() || o.levels[static_cast<size_t>(i)].fixed.empty()) return 0;
    return o.levels[static_cast<size_t>(i)].fixed[static_cast<size_t>(d)];
  };
  // Per dimension: every chain of values for levels 0 .. L-2.
  std::vector<std::vector<std::vector<std::int64_t>>> chains(static_cast<size_t>(n));
  for (DimId d = 0; d < n; ++d) {
    const std::int64_t b = op.dims()[static_cast<size_t>(d)].bound;
    std::vector<std::int64_t> values;
    std::function<void(int, std::int64_t)> grow = [&](int i, std::int64_t child) {
      if (i == L - 1) {
        if (o.factors_only && !divides(child, b)) return;
        chains[static_cast<size_t>(d)].push_back(values);
        return;
      }
      const bool spatial = level(i).kind == LevelKind::kSpatial;
      const std::int64_t top = spatial ? level(i).fanout() : b;
      for (std::int64_t v = 1; v <= top; ++v) {
        std::int64_t span = v;
        if (spatial) {
          if (child * (v - 1) >= b) continue;  // an idle child
          span = std::min(child * v, b);
          if (o.factors_only && span != child * v) continue;
        } else if (v < child) {
          continue;
        }
        if (o.factors_only && !(divides(child, span) && divides(span, b))) continue;
        if (rules.fixed && fixed(i, d) && fixed(i, d) != v) continue;
        values.push_back(v);
        grow(i + 1, span);
        values.pop_back();
      }
    };
    grow(0, 1);
  }
  std::uint64_t count = 0;
  std::vector<std::size_t> idx(static_cast<size_t>(n), 0);
  Mapping m = Mapping::trivial(op, arch);
  std::vector<int> data_levels;
  for (int i = 0; i < L; ++i)
    if (level(i).holds_data()) data_levels.push_back(i);
  std::function<void(int)> rec = [&](int d) {
    if (d < n) {
      for (idx[static_cast<size_t>(d)] = 0;
           idx[static_cast<size_t>(d)] < chains[static_cast<size_t>(d)].size();
           ++idx[static_cast<size_t>(d)])
        rec(d + 1);
      return;
    }
    double used = 1;
    for (int i = 0; i + 1 < L; ++i) {
      auto& target = level(i).kind == LevelKind::kSpatial ? m.level(i).split : m.level(i).tile;
      for (DimId e = 0; e < n; ++e)
        target[static_cast<size_t>(e)] =
            chains[static_cast<size_t>(e)][idx[static_cast<size_t>(e)]][static_cast<size_t>(i)];
      if (level(i).kind != LevelKind::kSpatial) continue;
      std::int64_t product = 1;
      int parallel = 0;
      for (DimId e = 0; e < n; ++e) {
        const std::int64_t s = m.level(i).split[static_cast<size_t>(e)];
        product *= s;
        parallel += s > 1;
        if (rules.parallel && s > 1 && !o.levels.empty() &&
            !(o.levels[static_cast<size_t>(i)].parallel_mask >> e & 1u))
          return;
      }
      const int max_par = !rules.parallel           ? n
                          : o.max_parallel_dims > 0 ? o.max_parallel_dims
                                                    : static_cast<int>(level(i).shape.size());
      if (product > level(i).fanout() || parallel > max_par) return;
      if (rules.placement && !placeable_reference(m.level(i).split, level(i))) return;
      used *= static_cast<double>(product);
    }
    if (rules.limits && !factors_within_limits(op, arch, o, m)) return;
    if (rules.utilization && used < o.min_utilization * static_cast<double>(arch.num_pes()) - 1e-9)
      return;
    if (rules.capacity && o.check_capacity && capacity_error(op, arch, m)) return;
    // Free loops of each data level: more than one trip over the span below.
    std::vector<std::vector<DimId>> free(data_levels.size());
    for (size_t k = 0; k < data_levels.size(); ++k) {
      const int i = data_levels[k];
      const auto span = m.span(op, arch, i);
      const auto below =
          i > 0 ? m.span(op, arch, i - 1) : std::vector<std::int64_t>(static_cast<size_t>(n), 1);
      for (DimId e = 0; e < n; ++e) {
        const auto eu = static_cast<size_t>(e);
        if ((span[eu] + below[eu] - 1) / below[eu] > 1) free[k].push_back(e);
      }
    }
    std::function<void(size_t)> orders = [&](size_t k) {
      if (k == data_levels.size()) {
        ++count;
        if (out) out->insert(m.to_yaml(op, arch));
        return;
      }
      std::vector<DimId> perm = free[k];
      do {
        if (rules.orders && !o.levels.empty() &&
            !order_allowed(op, o.levels[static_cast<size_t>(data_levels[k])], perm))
          continue;
        set_order(m.level(data_levels[k]).order, n, perm);
        orders(k + 1);
      } while (std::next_permutation(perm.begin(), perm.end()));
    };
    orders(0);
  };
  rec(0);
  return count;
}

/// The rules in force after each step of count_steps, by its rule text.
RefRules rules_after(const std::string& rule, RefRules r) {
  if (rule.rfind("tiles ", 0) == 0) return {false, false, false, false, false, false, false};
  if (rule.rfind("parallel dimensions", 0) == 0) r.parallel = true;
  if (rule == "splits placed on the array's axes") r.placement = true;
  if (rule == "fixed tiles and splits") r.fixed = true;
  if (rule == "factor limits (max_factor, min_factor)") r.fixed = r.limits = true;
  if (rule == "loop-order rules") r.fixed = r.limits = r.orders = true;
  if (rule.rfind("PE utilisation", 0) == 0) r.fixed = r.limits = r.orders = r.utilization = true;
  if (rule.rfind("buffer capacity", 0) == 0) r = RefRules{};
  return r;
}

/// Checks every step of the count table, the valid count and the streamed
/// space against the reference; returns the number of steps checked.
std::size_t expect_steps_match(const Operator& op, const Architecture& arch,
                               const MapspaceOptions& o) {
  const Mapspace space(op, arch, o);
  const auto steps = space.count_steps();
  RefRules r{false, false, false, false, false, false, false};
  for (const auto& step : steps) {
    r = rules_after(step.rule, r);
    // Before capacity the fixed rule is switched on with the orders, as
    // count_steps does when no value is fixed.
    EXPECT_EQ(step.size, BigInt(brute_force_chain(op, arch, o, r))) << step.rule;
  }
  // The last step is the valid space; the stream is exactly that set.
  std::set<std::string> expected;
  const std::uint64_t valid = brute_force_chain(op, arch, o, RefRules{}, &expected);
  EXPECT_GT(valid, 0u);                          // a test of something
  EXPECT_LT(BigInt(valid), steps.front().size);  // and the rules prune
  EXPECT_EQ(space.count_valid(), BigInt(valid));
  EXPECT_EQ(steps.back().size, BigInt(valid));
  const auto got = stream(space);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected);
  return steps.size();
}

/// A two-level spatial chip (KAPLA's multi-node chips): register file per
/// PE / 2 x 2 PE array / global buffer per node / a row of 4 nodes / DRAM
/// (rank 1: one split dimension, though the fan-out would allow two).
Architecture multinode(std::int64_t regf_bytes, std::int64_t gbuf_bytes) {
  return Architecture::make(
      "multinode", 1000, 8, 1, 1,
      {test::buffer("REGF", regf_bytes, 1, 1), test::spatial("PEs", {2, 2}),
       test::buffer("GBUF", gbuf_bytes, 5, 5), test::spatial("nodes", {4}), test::dram(100)});
}

TEST(MapspaceTwoSpatialLevels, EveryCountStepMatchesEnumeration) {
  const Operator op = make_gemm("g", 4, 3, 2);
  const Architecture arch = multinode(8, 48);
  ConstraintSpec spec;
  spec.min_utilization = 0.25;
  LevelConstraintSpec nodes, gbuf, regf;
  nodes.level = "nodes";
  nodes.parallel = std::vector<std::string>{"M", "N"};
  gbuf.level = "GBUF";
  gbuf.stationary = {"B"};
  regf.level = "REGF";
  regf.fixed = {{"K", 1}};
  spec.levels = {nodes, gbuf, regf};
  const MapspaceOptions o = resolve(spec, op, arch);
  // tiles, parallel, placement (the 2 x 2 PEs), fixed, orders,
  // utilisation, capacity.
  EXPECT_EQ(expect_steps_match(op, arch, o), 7u);
}

TEST(MapspaceTwoSpatialLevels, EdgeTilesMatchEnumeration) {
  const Operator op = make_gemm("g", 3, 2, 2);
  const Architecture arch = multinode(8, 32);
  ConstraintSpec spec;
  spec.factors_only = false;
  spec.max_parallel_dims = 1;
  expect_steps_match(op, arch, resolve(spec, op, arch));
}

// The mapping styles (Marvel §6's baselines) on a small convolution: each
// style's count steps and stream against the reference.
class MapspaceStyles : public ::testing::TestWithParam<std::string> {};

TEST_P(MapspaceStyles, EveryCountStepMatchesEnumeration) {
  // K = P = R = 2 and the rest 1 (three free loops at most, so orders stay
  // few): row_stationary has filter rows and output rows to split.
  const Operator op =
      make_conv2d("c", Conv2dShape{.N = 1, .C = 1, .K = 2, .H = 3, .W = 1, .R = 2, .S = 1});
  const Architecture arch = chip({2, 2}, 16);
  ConstraintSpec spec;
  spec.style = GetParam();
  const MapspaceOptions o = resolve(spec, op, arch);
  EXPECT_EQ(o.style, GetParam());
  EXPECT_GE(expect_steps_match(op, arch, o), 3u);
  // The multi-node chip too: the style binds the PE array, not the nodes.
  const Architecture two = multinode(16, 64);
  expect_steps_match(op, two, resolve(spec, op, two));
}

INSTANTIATE_TEST_SUITE_P(Styles, MapspaceStyles, ::testing::ValuesIn(style_names()),
                         [](const auto& p) { return p.param; });

TEST(MapspaceSubspaces, OffChipAndOnChipCountsMatchEnumeration) {
  const Operator op = make_gemm("g", 4, 3, 2);
  // An L2 of 20 B, double-buffered: the whole problem (26 words) does not
  // fit, some tiles do.
  const Architecture arch =
      Architecture::make("small_l2", 1000, 8, 1, 1,
                         {test::buffer("L1", 8, 1, 1), test::spatial("PEs", {2, 2}),
                          test::buffer("L2", 20, 5, 5), test::dram(100)});
  MapspaceOptions o;  // factors-only, capacity checked
  const Mapspace space(op, arch, o);
  const int ob = space.outer_buffer();
  ASSERT_EQ(ob, 2);
  const Level& l2 = arch.levels()[2];

  // Off-chip: every L2 tile (a divisor of each bound) x the orders of the
  // DRAM loops it leaves; those that fit L2; the layouts.
  BigInt offchip = 0, fitting = 0, fitting_tiles = 0;
  std::vector<std::int64_t> tile(3, 1);
  for (tile[0] = 1; tile[0] <= 4; ++tile[0])
    for (tile[1] = 1; tile[1] <= 3; ++tile[1])
      for (tile[2] = 1; tile[2] <= 2; ++tile[2]) {
        int loops = 0;
        bool ok = true;
        for (DimId d = 0; d < 3; ++d) {
          const std::int64_t b = op.dims()[static_cast<size_t>(d)].bound;
          ok = ok && divides(tile[static_cast<size_t>(d)], b);
          loops += tile[static_cast<size_t>(d)] < b;
        }
        if (!ok) continue;
        const int orders = loops == 0 ? 1 : loops == 1 ? 1 : loops == 2 ? 2 : 6;
        offchip += orders;
        if (required_bytes(op, arch, ob, tile) <= static_cast<double>(l2.size_bytes)) {
          fitting += orders;
          fitting_tiles += 1;
        }
      }
  // On-chip for one L2 tile: the mappings with that tile, without the
  // DRAM order, before and after capacity.
  // 8 words, doubled (double-buffered): fits the 20 B L2.
  const std::vector<std::int64_t> outer{2, 1, 2};
  MapspaceOptions fixed = o;
  fixed.levels.assign(4, LevelRule{});
  fixed.levels[2].fixed = outer;
  const int dram_orders = 2;  // M and N loop at DRAM
  const std::uint64_t onchip = brute_force_chain(op, arch, fixed, {true, true, true, true, false});
  const std::uint64_t onchip_valid = brute_force_chain(op, arch, fixed, RefRules{});

  const SubspaceCounts sub = space.subspaces(outer);
  EXPECT_EQ(sub.offchip, offchip);
  EXPECT_EQ(sub.offchip_fitting, fitting);
  EXPECT_EQ(sub.offchip_fitting_tiles, fitting_tiles);
  EXPECT_LT(sub.offchip_fitting, sub.offchip);  // the capacity check prunes
  EXPECT_EQ(sub.layouts, 8);                    // 2! per rank-2 tensor, three tensors
  EXPECT_EQ(sub.onchip * dram_orders, BigInt(onchip));
  EXPECT_EQ(sub.onchip_valid * dram_orders, BigInt(onchip_valid));
  EXPECT_GT(sub.onchip_valid, 0);
}

// --- factor limits and pinned innermost loops ------------------------------------

LevelConstraintSpec limit(const std::string& level, const char* key, const std::string& dim,
                          std::int64_t value) {
  LevelConstraintSpec l;
  l.level = level;
  (std::string(key) == "max" ? l.max_factor : l.min_factor)[dim] = FactorLimitSpec{value, {}};
  return l;
}

BigInt size_with(const Operator& op, const Architecture& arch,
                 std::vector<LevelConstraintSpec> levels) {
  ConstraintSpec spec;
  spec.check_capacity = false;
  spec.levels = std::move(levels);
  return Mapspace(op, arch, resolve(spec, op, arch)).size();
}

// M = 4 alone on L1 / 2 x 2 PEs (one axis per split) / L2 / DRAM, factors
// only: (L1 tile, split, L2 tile) is one of (1,1,1) (1,1,2) (1,1,4) (1,2,2)
// (1,2,4) (2,1,2) (2,1,4) (2,2,4) (4,1,4), one loop order each: 9.
TEST(MapspaceFactorLimits, HandCountedOnOneDimension) {
  const Operator op = make_gemm("g", 4, 1, 1);
  const Architecture arch = chip({2, 2});
  EXPECT_EQ(size_with(op, arch, {}), 9);
  // L2's trip count (L2 tile / span below) at most 1: the L2 tile is the
  // span, once per (L1 tile, split): 5.
  EXPECT_EQ(size_with(op, arch, {limit("L2", "max", "M", 1)}), 5);
  // DRAM's trip count (4 / L2 tile) at least 2: L2 tiles 1 and 2: 4.
  EXPECT_EQ(size_with(op, arch, {limit("DRAM", "min", "M", 2)}), 4);
  // Splits at most 1: 6; at least 2: 3.
  EXPECT_EQ(size_with(op, arch, {limit("PEs", "max", "M", 1)}), 6);
  EXPECT_EQ(size_with(op, arch, {limit("PEs", "min", "M", 2)}), 3);
  // L1 loops at least twice and DRAM at most once: (2,1,4) (2,2,4) (4,1,4).
  EXPECT_EQ(size_with(op, arch, {limit("L1", "min", "M", 2), limit("DRAM", "max", "M", 1)}), 3);
  // Both bounds on one level: L1 exactly 2 (the L1 tile 2): 3.
  auto l1 = limit("L1", "min", "M", 2);
  l1.max_factor["M"] = FactorLimitSpec{2, {}};
  EXPECT_EQ(size_with(op, arch, {l1}), 3);
}

TEST(MapspaceFactorLimits, CountStepNamesTheRuleAndSamplesHonourIt) {
  const Operator op = make_gemm("g", 4, 2, 3);
  const Architecture arch = chip({2, 2});
  ConstraintSpec spec;
  spec.factors_only = false;
  spec.levels = {limit("L2", "max", "K", 1), limit("PEs", "min", "M", 2)};
  const Mapspace space(op, arch, resolve(spec, op, arch));
  const auto steps = space.count_steps();
  const auto it = std::find_if(steps.begin(), steps.end(), [](const CountStep& c) {
    return c.rule == "factor limits (max_factor, min_factor)";
  });
  ASSERT_NE(it, steps.end());
  EXPECT_LT(it->size, (it - 1)->size);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const auto m = space.sample(rng);
    ASSERT_TRUE(m);
    EXPECT_FALSE(space.reject_reason(*m)) << *space.reject_reason(*m);
    EXPECT_GE(m->level(1).split[0], 2);
  }
  // A mapping outside: the trivial one splits nothing.
  const auto why = space.reject_reason(Mapping::trivial(op, arch));
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("limit: PEs splits M 1 times", 0), 0u) << *why;
}

// M = N = K = 2 with every tile and split fixed at 1: only DRAM's order is
// free, 3! = 6 of them; pinning the innermost loops leaves the others free.
TEST(MapspaceInnermost, HandCountedOrders) {
  const Operator op = make_gemm("g", 2, 2, 2);
  const Architecture arch = chip({2, 2});
  auto ones = [](const std::string& level, std::int64_t k_tile) {
    LevelConstraintSpec l;
    l.level = level;
    l.fixed = {{"M", 1}, {"N", 1}, {"K", k_tile}};
    return l;
  };
  auto pinned = [](std::vector<std::string> dims) {
    LevelConstraintSpec l;
    l.level = "DRAM";
    l.innermost = std::move(dims);
    return l;
  };
  const std::vector<LevelConstraintSpec> fixed{ones("L1", 1), ones("PEs", 1), ones("L2", 1)};
  auto with = [&](std::vector<LevelConstraintSpec> extra) {
    auto levels = fixed;
    levels.insert(levels.end(), extra.begin(), extra.end());
    return size_with(op, arch, levels);
  };
  EXPECT_EQ(with({}), 6);
  EXPECT_EQ(with({pinned({"K"})}), 2);  // M, N in either order, then K
  EXPECT_EQ(with({pinned({"N", "K"})}), 1);
  EXPECT_EQ(with({pinned({"M", "N", "K"})}), 1);
  // L2 holding K = 2: K runs once at DRAM, so pinning it says nothing
  // there (a one-trip loop has no place); N alone is then innermost.
  const std::vector<LevelConstraintSpec> k_in_l2{ones("L1", 1), ones("PEs", 1), ones("L2", 2)};
  auto with_k = [&](LevelConstraintSpec extra) {
    auto levels = k_in_l2;
    levels.push_back(std::move(extra));
    return size_with(op, arch, levels);
  };
  EXPECT_EQ(with_k(pinned({"K"})), 2);
  EXPECT_EQ(with_k(pinned({"N", "K"})), 1);
  // The streamed mappings end with the pinned loops.
  ConstraintSpec spec;
  spec.levels = fixed;
  spec.levels.push_back(pinned({"N", "K"}));
  const Mapspace space(op, arch, resolve(spec, op, arch));
  Mapspace::Cursor cursor(space);
  Mapping m;
  int seen = 0;
  while (cursor.next(m)) {
    ++seen;
    EXPECT_EQ(m.level(3).order, (std::vector<DimId>{0, 1, 2}));
  }
  EXPECT_EQ(seen, 1);
  Mapping wrong = m;
  wrong.level(3).order = {1, 0, 2};
  const auto why = space.reject_reason(wrong);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("order: DRAM", 0), 0u) << *why;
}

TEST(MapspaceFactorLimits, TwoSpatialLevelsMatchEnumerationStepByStep) {
  const Operator op = make_gemm("g", 4, 3, 2);
  const Architecture arch = multinode(8, 48);
  ConstraintSpec spec;
  auto nodes = limit("nodes", "max", "M", 2);
  auto gbuf = limit("GBUF", "min", "N", 2);
  gbuf.innermost = {"K", "M"};
  auto dram = limit("DRAM", "max", "N", 1);
  spec.levels = {nodes, gbuf, dram};
  // tiles, parallel, placement, limits, orders, capacity.
  EXPECT_EQ(expect_steps_match(op, arch, resolve(spec, op, arch)), 6u);
}

TEST(Constraints, FactorLimitAndPinContradictionsAreInputErrors) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({2, 2});
  auto one = [](LevelConstraintSpec l) {
    ConstraintSpec s;
    s.levels.push_back(std::move(l));
    return s;
  };
  expect_error(one(limit("L2", "max", "Z", 2)), op, arch, "max_factor", "no dimension 'Z'");
  expect_error(one(limit("L2", "min", "M", 0)), op, arch, "min_factor", "at least 1, got 0");
  auto both = limit("L2", "min", "M", 4);
  both.max_factor["M"] = FactorLimitSpec{2, {}};
  expect_error(one(both), op, arch, "min_factor",
               "min_factor 4 of 'M' on 'L2' is above its "
               "max_factor 2");
  expect_error(one(limit("PEs", "min", "M", 5)), op, arch, "min_factor",
               "above the largest split 4 (bound 4 in 'g', fan-out 4)");
  expect_error(one(limit("DRAM", "min", "M", 5)), op, arch, "min_factor",
               "above the largest trip count 4");
  auto split = limit("PEs", "max", "M", 1);
  split.fixed = {{"M", 2}};
  expect_error(one(split), op, arch, "max_factor",
               "max_factor 1 of 'M' on 'PEs' contradicts its factor 2 (its fixed split)");
  auto tile = limit("L1", "max", "M", 2);
  tile.fixed = {{"M", 4}};
  expect_error(one(tile), op, arch, "max_factor",
               "contradicts its factor 4 (a fixed tile of 4 over a span of 1 fixed below)");
  auto unsplit = limit("PEs", "min", "M", 2);
  unsplit.parallel = std::vector<std::string>{"N"};
  expect_error(one(unsplit), op, arch, "min_factor",
               "contradicts its factor 1 (the level may not split it: parallel)");
  // DRAM's trips follow from the fixed L2 tile: the bound 4 over 2.
  ConstraintSpec chain;
  LevelConstraintSpec l2;
  l2.level = "L2";
  l2.fixed = {{"M", 2}};
  chain.levels = {l2, limit("DRAM", "max", "M", 1)};
  expect_error(chain, op, arch, "max_factor",
               "contradicts its factor 2 (the bound 4 over a span of 2 fixed below)");
  LevelConstraintSpec pins;
  pins.level = "L2";
  pins.innermost = {"M", "K", "M"};
  expect_error(one(pins), op, arch, "innermost", "'M' is pinned twice on 'L2'");
  pins.innermost = {"Q"};
  expect_error(one(pins), op, arch, "innermost", "no dimension 'Q'");
  pins.level = "PEs";
  pins.innermost = {"M"};
  expect_error(one(pins), op, arch, "innermost", "spatial and has no loop order");
  // Consistent bounds pass: the fixed split 2 within [2, 4].
  auto fine = limit("PEs", "max", "M", 4);
  fine.min_factor["M"] = FactorLimitSpec{2, {}};
  fine.fixed = {{"M", 2}};
  EXPECT_NO_THROW(resolve(one(fine), op, arch));
}

// The change-reporting next writes the same mappings in the same order as
// next (it rewrites only what moved in the mapping it keeps), and what it
// reports is true: nothing it calls unchanged differs from the previous
// mapping (tiles, splits, cluster levels, keep choices, the orders below
// lowest_order); and it does report moves (not "everything" every time).
// With keep/bypass explored and a cluster level, so every part moves.
// Returns how many reported keep moves there were.
std::uint64_t expect_truthful_changes(const Operator& op, const Architecture& arch,
                                      const MapspaceOptions& options, std::uint64_t limit) {
  const Mapspace space(op, arch, options);
  Mapspace::Cursor plain(space), told(space);
  Mapping expected, m, previous;
  MappingChange change;
  std::uint64_t n = 0, order_only = 0, keep_moves = 0;
  while (n < limit && plain.next(expected)) {
    const bool more = told.next(m, change);
    EXPECT_TRUE(more);
    EXPECT_TRUE(m == expected) << n;
    if (!more || ::testing::Test::HasFailure()) return keep_moves;
    if (n == 0) {
      EXPECT_TRUE(change.tiling && change.keep && change.lowest_order == 0);
    }
    if (n > 0 && !change.tiling) {
      ++order_only;
      EXPECT_FALSE(change.keep);
      EXPECT_LT(change.lowest_order, arch.num_levels());
      for (int i = 0; i < arch.num_levels(); ++i) {
        const LevelMapping& a = previous.level(i);
        const LevelMapping& b = m.level(i);
        EXPECT_EQ(a.tile, b.tile);
        EXPECT_EQ(a.split, b.split);
        EXPECT_EQ(a.keep, b.keep);
        EXPECT_EQ(a.cluster.tile, b.cluster.tile);
        EXPECT_EQ(a.cluster.split, b.cluster.split);
        if (i < change.lowest_order) {
          EXPECT_EQ(a.order, b.order) << n << " level " << i;
          EXPECT_EQ(a.cluster.order, b.cluster.order) << n << " level " << i;
        }
      }
    }
    if (n > 0 && change.tiling && !change.keep) {
      for (int i = 0; i < arch.num_levels(); ++i)
        EXPECT_EQ(previous.level(i).keep, m.level(i).keep) << n;
    }
    if (n > 0 && change.keep) ++keep_moves;
    previous = m;
    ++n;
    if (::testing::Test::HasFailure()) return keep_moves;
  }
  if (n < limit) {
    EXPECT_FALSE(told.next(m, change));
  }
  EXPECT_GT(order_only, n / 2);
  return keep_moves;
}

TEST(MapspaceCursor, ReportedChangesAreTrueAndTheStreamIsTheSame) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = chip({2, 2}, 256);
  ConstraintSpec spec;
  spec.explore_bypass = true;
  expect_truthful_changes(op, arch, resolve(spec, op, arch), 50000);
}

TEST(MapspaceCursor, ReportedChangesAreTrueOverAWholeSpaceWithKeepChoices) {
  const Operator op = make_gemm("g", 2, 4, 4);
  const Architecture arch = chip({2}, 64);
  ConstraintSpec spec;
  spec.explore_bypass = true;
  const MapspaceOptions options = resolve(spec, op, arch);
  ASSERT_GT(Mapspace(op, arch, options).keep_choices(), 1u);
  // Every keep/bypass combination after the first starts with a keep move.
  EXPECT_GT(expect_truthful_changes(op, arch, options, ~std::uint64_t{0}), 0u);
}

TEST(MapspaceCursor, ReportedChangesAreTrueWithAClusterLevel) {
  const Operator op = make_gemm("g", 4, 6, 8);
  const Architecture arch = chip({4}, 1 << 20);
  const ConstraintSpec spec = test::cluster_level_on("PEs");
  expect_truthful_changes(op, arch, resolve(spec, op, arch), 50000);
}

}  // namespace
}  // namespace mapex
