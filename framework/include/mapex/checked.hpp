#pragma once
/// \file
/// Checked integer arithmetic for sizes that come from input files. Loop
/// bounds, shapes and splits are int64; their products (MACs, fan-outs,
/// spans) can exceed it for values the parsers accept (a 2^62-channel
/// layer), and signed overflow is undefined behaviour that in practice wraps
/// to nonsense such as `macs 0`. The loaders check the products they keep
/// once (InputError with the location); the helpers here are header-only and
/// branch-cheap so that code running per mapping can use `mul_capped` where
/// a product is clamped to a bound anyway.

#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace mapex {

/// a * b, or nothing when it does not fit an int64.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a + b, or nothing when it does not fit an int64.
inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// Product of `values`, or nothing when some partial product overflows.
inline std::optional<std::int64_t> checked_product(std::span<const std::int64_t> values) {
  std::int64_t product = 1;
  for (auto v : values)
    if (__builtin_mul_overflow(product, v, &product)) return std::nullopt;
  return product;
}

/// min(a * b, cap) for a, b >= 0 and cap >= 0, exact even when a * b does
/// not fit an int64 (then it is larger than any cap). The span of a tile
/// times a split is clamped to the dimension's bound this way.
inline std::int64_t mul_capped(std::int64_t a, std::int64_t b, std::int64_t cap) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > cap) return cap;
  return out;
}

/// a * b for a, b >= 0, or INT64_MAX when it does not fit: for comparisons
/// against a limit ("more than the fan-out"), where a saturated product is
/// as far over every limit as the true one.
inline std::int64_t mul_saturating(std::int64_t a, std::int64_t b) {
  return mul_capped(a, b, std::numeric_limits<std::int64_t>::max());
}

/// ceil(a / b) for a >= 0, b > 0, without forming a + b - 1 (which
/// overflows when a is near INT64_MAX).
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace mapex
