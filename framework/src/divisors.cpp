#include <algorithm>
#include <mapex/divisors.hpp>
#include <numeric>

namespace mapex {
namespace {

__extension__ typedef unsigned __int128 Wide;

std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b, std::uint64_t m) {
  return static_cast<std::uint64_t>(static_cast<Wide>(a) * b % m);
}

std::uint64_t pow_mod(std::uint64_t base, std::uint64_t exp, std::uint64_t m) {
  std::uint64_t result = 1 % m;
  base %= m;
  for (; exp; exp >>= 1) {
    if (exp & 1) result = mul_mod(result, base, m);
    base = mul_mod(base, base, m);
  }
  return result;
}

/// Miller-Rabin with the first twelve primes as bases: exact for every
/// n < 3.3 * 10^24, so for every 64-bit n.
bool is_prime(std::uint64_t n) {
  if (n < 2) return false;
  static const std::uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (std::uint64_t p : kBases)
    if (n % p == 0) return n == p;
  std::uint64_t d = n - 1;
  int r = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++r;
  }
  for (std::uint64_t a : kBases) {
    std::uint64_t x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int i = 1; i < r && composite; ++i) {
      x = mul_mod(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

/// A non-trivial factor of an odd composite n (Pollard's rho, Brent's
/// cycle detection with batched gcds).
std::uint64_t rho_factor(std::uint64_t n) {
  for (std::uint64_t c = 1;; ++c) {
    const auto f = [&](std::uint64_t x) { return (mul_mod(x, x, n) + c) % n; };
    std::uint64_t y = 2, x = 2, q = 1, g = 1, ys = 2;
    const std::uint64_t batch = 128;
    for (std::uint64_t r = 1; g == 1; r <<= 1) {
      x = y;
      for (std::uint64_t i = 0; i < r; ++i) y = f(y);
      for (std::uint64_t k = 0; k < r && g == 1; k += batch) {
        ys = y;
        for (std::uint64_t i = 0; i < std::min(batch, r - k); ++i) {
          y = f(y);
          q = mul_mod(q, x > y ? x - y : y - x, n);
        }
        g = std::gcd(q, n);
      }
    }
    if (g == n) {
      // The batch overshot: step one at a time from its start.
      do {
        ys = f(ys);
        g = std::gcd(x > ys ? x - ys : ys - x, n);
      } while (g == 1);
    }
    if (g != n) return g;
  }
}

void collect_primes(std::uint64_t n, std::vector<std::uint64_t>& out) {
  if (n == 1) return;
  if (is_prime(n)) {
    out.push_back(n);
    return;
  }
  const std::uint64_t f = rho_factor(n);
  collect_primes(f, out);
  collect_primes(n / f, out);
}

}  // namespace

std::vector<std::pair<std::int64_t, int>> factorise(std::int64_t n) {
  std::vector<std::pair<std::int64_t, int>> out;
  if (n < 2) return out;
  auto rest = static_cast<std::uint64_t>(n);
  std::vector<std::uint64_t> primes;
  // Small primes by trial division; rho then only sees factors above 1000.
  for (std::uint64_t p = 2; p < 1000 && p * p <= rest; ++p)
    while (rest % p == 0) {
      primes.push_back(p);
      rest /= p;
    }
  collect_primes(rest, primes);
  std::sort(primes.begin(), primes.end());
  for (std::uint64_t p : primes) {
    if (!out.empty() && out.back().first == static_cast<std::int64_t>(p))
      ++out.back().second;
    else
      out.emplace_back(static_cast<std::int64_t>(p), 1);
  }
  return out;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  if (n < 1) return {};
  std::vector<std::int64_t> out{1};
  for (const auto& [p, e] : factorise(n)) {
    const std::size_t before = out.size();
    std::int64_t power = 1;
    for (int i = 0; i < e; ++i) {
      power *= p;  // divides n, so no overflow
      for (std::size_t j = 0; j < before; ++j) out.push_back(out[j] * power);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mapex
