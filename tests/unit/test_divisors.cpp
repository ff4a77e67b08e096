// Divisors from factorisation (divisors.hpp) and the mapspace built from
// them: hand-counted divisor sets, and chain counts of dimensions whose
// bounds a scan up to the bound could not finish (issue 18).

#include <gtest/gtest.h>

#include <mapex/divisors.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>

#include "test_chips.hpp"

namespace mapex {
namespace {

using Factors = std::vector<std::pair<std::int64_t, int>>;

TEST(Divisors, SmallNumbersByHand) {
  EXPECT_EQ(divisors(1), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(divisors(12), (std::vector<std::int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(divisors(49), (std::vector<std::int64_t>{1, 7, 49}));
  EXPECT_TRUE(divisors(0).empty());
  EXPECT_TRUE(divisors(-6).empty());
}

TEST(Divisors, LargeBoundsFactorised) {
  // 2^31: 32 divisors; 10^12 = 2^12 5^12: 13 x 13.
  EXPECT_EQ(divisors(std::int64_t{1} << 31).size(), 32u);
  EXPECT_EQ(divisors(1'000'000'000'000).size(), 169u);
  // 2^61 - 1 is prime.
  EXPECT_EQ(factorise((std::int64_t{1} << 61) - 1), (Factors{{(std::int64_t{1} << 61) - 1, 1}}));
  // INT64_MAX = 7^2 x 73 x 127 x 337 x 92737 x 649657: 3 x 2^5 divisors.
  EXPECT_EQ(factorise(INT64_MAX),
            (Factors{{7, 2}, {73, 1}, {127, 1}, {337, 1}, {92737, 1}, {649657, 1}}));
  EXPECT_EQ(divisors(INT64_MAX).size(), 96u);
  // Two primes above the trial-division range: found by Pollard's rho.
  EXPECT_EQ(factorise(999999937LL * 999999929LL), (Factors{{999999929, 1}, {999999937, 1}}));
}

TEST(Divisors, EveryDivisorDividesAndNoneIsMissed) {
  for (std::int64_t n = 1; n <= 2000; ++n) {
    std::vector<std::int64_t> scanned;
    for (std::int64_t d = 1; d <= n; ++d)
      if (n % d == 0) scanned.push_back(d);
    ASSERT_EQ(divisors(n), scanned) << n;
  }
}

// L1 / 4 PEs / L2 / DRAM. A prime bound above the fan-out: L1 and L2 tiles
// in {1, p} with L1 <= L2, split 1: (1,1), (1,p), (p,p).
TEST(Divisors, MapspaceOfAPrimeBoundAboveTheFanout) {
  const Operator op = make_gemm("g", 2147483647, 1, 1);  // 2^31 - 1
  const Architecture arch = test::chip({4});
  const Mapspace space(op, arch);
  EXPECT_EQ(space.num_chains(0), 3u);
}

// Bound 2^31: L1 tile 2^e1, split 2^s (s <= 2, e1 + s <= 31), L2 tile 2^e2
// with e1 + s <= e2 <= 31: sum over e1 < 30 of (32-e1)+(31-e1)+(30-e1) =
// 1485, plus 3 for e1 = 30 and 1 for e1 = 31.
TEST(Divisors, MapspaceOfTwoToThe31) {
  const Operator op = make_gemm("g", std::int64_t{1} << 31, 1, 1);
  const Architecture arch = test::chip({4});
  const Mapspace space(op, arch);
  EXPECT_EQ(space.num_chains(0), 1489u);
  EXPECT_GT(space.size(), 0);
}

}  // namespace
}  // namespace mapex
