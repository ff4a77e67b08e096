// Unit tests of the first mapspace: exact size against enumeration, every
// enumerated mapping legal and distinct, constraints and sampling.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>
#include <set>

#include "test_chips.hpp"

namespace mapex {
namespace {

using test::chip;

struct Walk {
  std::uint64_t accepted = 0;
  std::uint64_t visited = 0;
  std::uint64_t rejected = 0;
  std::set<std::string> distinct;
};

Walk walk(const Mapspace& space) {
  Walk w;
  Mapspace::Cursor cursor(space);
  Mapping m;
  while (cursor.next(m)) {
    ++w.accepted;
    EXPECT_FALSE(space.reject_reason(m)) << *space.reject_reason(m);
    w.distinct.insert(m.to_yaml(space.op(), space.arch()));
  }
  w.visited = cursor.visited();
  w.rejected = cursor.rejected();
  return w;
}

TEST(Mapspace, SizeMatchesEnumeration) {
  const Operator op = make_gemm("g", 4, 2, 3);
  const Architecture arch = chip({4});
  MapspaceOptions options;
  options.check_capacity = false;
  options.max_parallel_dims = 3;
  const Mapspace space(op, arch, options);
  const Walk w = walk(space);
  EXPECT_EQ(BigInt(w.visited), space.size());
  EXPECT_EQ(w.accepted + w.rejected, w.visited);
  EXPECT_EQ(w.distinct.size(), w.accepted);  // no mapping twice
  EXPECT_GT(w.rejected, 0u);                 // some splits exceed 4 PEs
}

TEST(Mapspace, EdgeTilesEnlargeTheSpace) {
  const Operator op = make_gemm("g", 5, 3, 1);
  const Architecture arch = chip({2});
  MapspaceOptions factors;
  factors.check_capacity = false;
  MapspaceOptions edges = factors;
  edges.factors_only = false;
  const Mapspace a(op, arch, factors), b(op, arch, edges);
  EXPECT_LT(a.size(), b.size());
  // 5 is prime and a split of 2 does not divide it: (L1, split, L2) is
  // (1, 1, 1), (1, 1, 5) or (5, 1, 5).
  EXPECT_EQ(a.num_chains(op.find_dim("M")), 3u);
  const Walk w = walk(b);
  EXPECT_EQ(BigInt(w.visited), b.size());
  EXPECT_EQ(w.distinct.size(), w.accepted);
}

TEST(Mapspace, CapacityAndParallelDimsReject) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({2, 2}, /*l1_bytes=*/8);
  MapspaceOptions options;
  options.max_parallel_dims = 1;
  const Mapspace space(op, arch, options);
  const Walk w = walk(space);
  EXPECT_EQ(BigInt(w.visited), space.size());
  EXPECT_GT(w.rejected, 0u);
  EXPECT_GT(w.accepted, 0u);
  // A mapping that splits two dimensions breaks the one-dimension rule.
  Mapping m = Mapping::trivial(op, arch);
  m.level(1).split = {2, 2, 1};
  m.level(2).tile = {2, 2, 1};
  const auto reason = space.reject_reason(m);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->rfind("parallel_dims", 0), 0u) << *reason;
  // Whole 4x4x4 tiles in an 8-byte L1 overflow it.
  Mapping big = Mapping::trivial(op, arch);
  big.level(0).tile = {4, 4, 4};
  big.level(2).tile = {4, 4, 4};
  const auto overflow = space.reject_reason(big);
  ASSERT_TRUE(overflow);
  EXPECT_EQ(overflow->rfind("capacity", 0), 0u) << *overflow;
}

TEST(Mapspace, SamplesAreLegalAndSeeded) {
  const Operator op =
      make_conv2d("c", Conv2dShape{.N = 1, .C = 8, .K = 16, .H = 8, .W = 8, .R = 3, .S = 3});
  const Architecture arch = chip({4, 4}, 256);
  const Mapspace space(op, arch);
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 50; ++i) {
    const auto ma = space.sample(a);
    const auto mb = space.sample(b);
    ASSERT_TRUE(ma && mb);
    EXPECT_EQ(*ma, *mb);
    EXPECT_FALSE(space.reject_reason(*ma)) << *space.reject_reason(*ma);
  }
}

TEST(Mapspace, UniformBelowStaysInRange) {
  std::mt19937_64 rng(1);
  std::vector<int> hits(3, 0);
  for (int i = 0; i < 3000; ++i) ++hits[uniform_below(rng, 3)];
  for (int h : hits) EXPECT_GT(h, 800);
}

}  // namespace
}  // namespace mapex
