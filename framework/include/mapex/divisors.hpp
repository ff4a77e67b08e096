#pragma once
/// \file
/// Divisors of a bound from its prime factorisation, so that mapspaces with
/// factors-only tiles (Marvel §5.2) are built in time that depends on the
/// number of divisors, never on the size of the bound (a dimension of 2^31
/// or 10^12 has 32 or 169 divisors; scanning up to it takes minutes).

#include <cstdint>
#include <utility>
#include <vector>

namespace mapex {

/// Prime factors of n >= 1 with their exponents, ascending. Trial division
/// by small primes, then Miller-Rabin (deterministic bases for 64 bits) and
/// Pollard's rho (Brent's variant) on what is left.
std::vector<std::pair<std::int64_t, int>> factorise(std::int64_t n);

/// Every divisor of n >= 1, ascending (empty for n < 1).
std::vector<std::int64_t> divisors(std::int64_t n);

}  // namespace mapex
