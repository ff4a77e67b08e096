#pragma once
// Dominance among the loop orders of one level (README, rule "reuse
// classes"): two orders whose loops carry the same reuse for every tensor
// cost the same, so only the first of each class is searched.

#include <cstdint>
#include <mapex/operator.hpp>
#include <vector>

namespace optimal {

/// Per tensor, the dimensions its subscripts read (bit d: dimension d).
inline std::vector<std::uint32_t> relevant_dims(const mapex::Operator& op) {
  std::vector<std::uint32_t> out;
  for (const auto& t : op.tensors()) {
    std::uint32_t mask = 0;
    for (const auto& e : t.subscripts)
      for (const auto& term : e.terms)
        if (term.coeff != 0) mask |= 1u << term.dim;
    out.push_back(mask);
  }
  return out;
}

/// What an order (outermost first) does for reuse, over the loops in
/// `free_mask` (the others have one trip and do nothing): per tensor, its
/// innermost relevant loop and the set of loops inside it. A tensor's tile
/// is refetched once per iteration of the loops down to its innermost
/// relevant loop and stays put across the loops inside it, so these two say
/// how often and, for a sliding window, along which dimension.
inline std::vector<std::uint32_t> reuse_signature(const std::vector<mapex::DimId>& order,
                                                  std::uint32_t free_mask,
                                                  const std::vector<std::uint32_t>& relevant) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t rel : relevant) {
    std::uint32_t inside = 0;
    std::uint32_t innermost = 32;  // none: every loop is inside
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto d = static_cast<std::uint32_t>(*it);
      if (!(free_mask >> d & 1u)) continue;
      if (rel >> d & 1u) {
        innermost = d;
        break;
      }
      inside |= 1u << d;
    }
    out.push_back(innermost);
    out.push_back(inside);
  }
  return out;
}

}  // namespace optimal
