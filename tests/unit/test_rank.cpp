// Rank and unrank (Mapspace::rank / unrank): a bijection between
// [0, size()) and the space's mappings in the Cursor's order, checked
// against the streamed space on small spaces (every rule the count table
// knows: fan-out, parallel dimensions, placement, order rules, keep/bypass,
// utilisation, cluster levels), and on a space counted beyond 2^64.

#include <gtest/gtest.h>

#include <mapex/constraints.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <random>
#include <string>

#include "constraints_yaml.hpp"
#include "test_chips.hpp"
#include "yaml_reader.hpp"

namespace mapex {
namespace {

MapspaceOptions options(const Operator& op, const Architecture& arch, const std::string& yaml) {
  return resolve(parse_constraint_spec("c.yaml", yaml::load_text(yaml, "c.yaml")), op, arch);
}

// Streams the space: each mapping's rank is the one after the previous
// streamed one's (or later, past mappings that overflow a buffer), and
// unranks back to it. Returns how many were streamed.
std::uint64_t check_stream(const Mapspace& space, bool capacity_skips) {
  BigInt expected = 0;
  std::uint64_t n = 0;
  Mapping m;
  for (Mapspace::Cursor c(space); c.next(m); ++n) {
    const auto r = space.rank(m);
    EXPECT_TRUE(r) << m.to_yaml(space.op(), space.arch());
    if (!r) continue;
    if (capacity_skips)
      EXPECT_GE(*r, expected);
    else
      EXPECT_EQ(*r, expected);
    const auto back = space.unrank(*r);
    EXPECT_TRUE(back && *back == m) << "rank " << *r;
    expected = *r + 1;
  }
  return n;
}

// Every rank of a space without capacity unranks to a mapping that ranks
// back to it: the map is onto [0, size()).
void check_all_ranks(const Mapspace& space) {
  for (BigInt r = 0; r < space.size(); ++r) {
    const auto m = space.unrank(r);
    ASSERT_TRUE(m) << r;
    EXPECT_FALSE(space.reject_reason(*m)) << *space.reject_reason(*m);
    EXPECT_EQ(space.rank(*m), r);
  }
  EXPECT_FALSE(space.unrank(space.size()));
}

TEST(Rank, FollowsTheEnumerationOrder) {
  const Operator op = make_gemm("g", 4, 6, 2);
  const Architecture arch = test::chip({2, 2});
  MapspaceOptions o;
  o.check_capacity = false;
  const Mapspace space(op, arch, o);
  ASSERT_GT(space.size(), 100);
  EXPECT_EQ(BigInt(check_stream(space, false)), space.size());
  check_all_ranks(space);
}

TEST(Rank, EdgeTilesOrderRulesAndParallelLimits) {
  const Operator op = make_gemm("g", 3, 5, 2);
  const Architecture arch = test::chip({4});
  MapspaceOptions o = options(op, arch,
                              "check_capacity: false\nfactors_only: false\nmax_parallel_dims: 1\n"
                              "min_utilization: 0.5\nlevels:\n  L2: {orders: [[M, N, K], [K, N, "
                              "M]]}\n");
  const Mapspace space(op, arch, o);
  ASSERT_GT(space.size(), 10);
  EXPECT_EQ(BigInt(check_stream(space, false)), space.size());
  check_all_ranks(space);
}

TEST(Rank, KeepBypassChoicesAreTheOutermostDigit) {
  const Operator op = make_gemm("g", 4, 2, 2);
  const Architecture arch = test::chip({2});
  const Mapspace space(op, arch,
                       options(op, arch, "check_capacity: false\nexplore_bypass: true\n"));
  ASSERT_GT(space.keep_choices(), 1u);
  EXPECT_EQ(BigInt(check_stream(space, false)), space.size());
  check_all_ranks(space);
}

TEST(Rank, ClusterLevels) {
  const Operator op = make_gemm("g", 4, 2, 1);
  const Architecture arch = test::chip({4});
  const ConstraintSpec spec = test::cluster_level_on("PEs");
  MapspaceOptions o = resolve(spec, op, arch);
  o.check_capacity = false;
  const Mapspace space(op, arch, o);
  ASSERT_GT(space.size(), 20);
  EXPECT_EQ(BigInt(check_stream(space, false)), space.size());
  check_all_ranks(space);
  // Some streamed mappings have an active cluster level.
  bool active = false;
  Mapping m;
  for (Mapspace::Cursor c(space); c.next(m);) active = active || m.level(1).cluster.active();
  EXPECT_TRUE(active);
}

TEST(Rank, CapacitySkipsRanksButKeepsTheOrder) {
  // A 16-byte L1 (8 words double-buffered): many tilings overflow it and
  // are skipped by the cursor; their ranks are still in [0, size()) and
  // unrank to overflowing mappings.
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = test::chip({2, 2}, 16);
  const Mapspace space(op, arch);
  const std::uint64_t streamed = check_stream(space, true);
  EXPECT_GT(streamed, 10u);
  EXPECT_EQ(BigInt(streamed), space.count_valid());
  EXPECT_LT(BigInt(streamed), space.size());
  bool overflowing = false;
  for (BigInt r = 0; r < space.size() && !overflowing; ++r) {
    const auto m = space.unrank(r);
    ASSERT_TRUE(m);
    const auto why = space.reject_reason(*m);
    overflowing = why && why->rfind("capacity", 0) == 0;
  }
  EXPECT_TRUE(overflowing);
}

TEST(Rank, RefusesMappingsOutsideTheSpace) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = test::chip({2, 2});
  ConstraintSpec spec;
  spec.max_parallel_dims = 1;
  const Mapspace space(op, arch, resolve(spec, op, arch));
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split = {2, 1, 1};
  m.level(2).tile = {4, 2, 1};
  m.level(2).order = {2, 0, 1};  // K runs once at L2: outermost
  const auto r = space.rank(m);
  ASSERT_TRUE(r);
  EXPECT_EQ(space.unrank(*r), m);
  // Two split dimensions: parallel_dims is broken.
  Mapping two = m;
  two.level(1).split = {2, 2, 1};
  two.level(2).tile = {4, 4, 1};
  EXPECT_FALSE(space.rank(two));
  // An edge tile in a factors-only space.
  Mapping edge = m;
  edge.level(2).tile = {4, 3, 1};
  EXPECT_FALSE(space.rank(edge));
  // The same mapping with its one-trip loop moved inward: the same rank.
  Mapping moved = m;
  moved.level(2).order = {0, 2, 1};
  EXPECT_EQ(space.rank(moved), r);
  // The running loops swapped: another mapping.
  Mapping swapped = m;
  swapped.level(2).order = {2, 1, 0};
  const auto other = space.rank(swapped);
  ASSERT_TRUE(other);
  EXPECT_NE(*other, *r);
  // An order that is not a permutation.
  Mapping broken = m;
  broken.level(2).order = {0, 0, 1};
  EXPECT_FALSE(space.rank(broken));
  // Not a mapping of this architecture.
  Mapping shorter = m;
  shorter.levels().pop_back();
  EXPECT_FALSE(space.rank(shorter));
}

TEST(Rank, SpacesBeyondTwoToTheSixtyFour) {
  // VGG16 conv1_2 with edge tiles on a 168-PE chip (the count test's space).
  const Operator op = make_conv2d("c", Conv2dShape{.N = 1,
                                                   .C = 64,
                                                   .K = 64,
                                                   .H = 224,
                                                   .W = 224,
                                                   .R = 3,
                                                   .S = 3,
                                                   .padding_h = 1,
                                                   .padding_w = 1});
  const Architecture arch = test::chip({12, 14});
  MapspaceOptions o;
  o.check_capacity = false;
  o.factors_only = false;
  const Mapspace space(op, arch, o);
  const BigInt& size = space.size();
  ASSERT_GT(size, BigInt(1) << 64);
  std::mt19937_64 rng(3);
  std::vector<BigInt> ranks = {0, 1, size / 2, size - 2, size - 1, BigInt(1) << 64};
  for (int i = 0; i < 20; ++i) ranks.push_back(uniform_below(rng, size));
  for (const BigInt& r : ranks) {
    const auto m = space.unrank(r);
    ASSERT_TRUE(m) << r;
    EXPECT_FALSE(space.reject_reason(*m)) << r;
    EXPECT_EQ(space.rank(*m), r);
  }
  // Rank 0 is the cursor's first mapping.
  const auto first = space.unrank(0);
  Mapping m;
  Mapspace::Cursor c(space);
  ASSERT_TRUE(c.next(m));
  EXPECT_EQ(*first, m);
  EXPECT_FALSE(space.unrank(size));
}

}  // namespace
}  // namespace mapex
