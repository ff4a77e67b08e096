#pragma once
/// \file
/// The keep rule of per-level random search, KAPLA's baseline "R" (§V,
/// "Baseline solvers": candidates are evaluated "at each level with a given
/// probability"). Header-only and free of plugin state, so the `random`
/// searcher and its tests apply the very same rule.
///
/// The mapspace is read as a tree walked from the innermost level outwards
/// (the order of Mapping::levels()): the node at level l is the choice made
/// there (its tile per dimension and loop order for a buffer or DRAM, its
/// split per dimension for a spatial level) under the choices of the levels
/// below it. Inner first because an outer choice is constrained by the inner
/// ones (a tile holds at least the span below it), the same bottom-up order
/// in which KAPLA's intra-layer solver builds a scheme (§IV-C).
///
/// Each node is kept with probability p, independently; a mapping is kept
/// iff every node on its path is, so a node left out removes its whole
/// subtree and the expected kept share of a space with L levels is p^L.
/// Whether a node is kept is a hash of (seed, level, every choice on the
/// path up to and including that level): it does not depend on the order in
/// which mappings are met, so a seed keeps the same set at any thread count.

#include <cstdint>
#include <mapex/mapping.hpp>

namespace mapex::level_sampling {

/// A bijective 64-bit finaliser (splitmix64's): every input bit flips each
/// output bit with probability about one half.
constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Folds one value into a running path hash.
constexpr std::uint64_t absorb(std::uint64_t h, std::uint64_t value) { return mix(h ^ mix(value)); }

class LevelKeep {
 public:
  /// `probability` in (0, 1].
  LevelKeep(std::uint64_t seed, double probability)
      : root_(mix(seed ^ 0x6b6170c1a5eed000ULL)), p_(probability) {}

  /// Hash of the path through level `l` given the hash through level l-1
  /// (or the root for l = 0). Vector lengths are folded in, so tiles, orders
  /// and splits of different lengths never alias.
  std::uint64_t node(std::uint64_t parent, int l, const LevelMapping& choice) const {
    std::uint64_t h = absorb(parent, static_cast<std::uint64_t>(l));
    h = absorb(h, choice.tile.size());
    for (const auto t : choice.tile) h = absorb(h, static_cast<std::uint64_t>(t));
    h = absorb(h, choice.order.size());
    for (const auto d : choice.order) h = absorb(h, static_cast<std::uint64_t>(d));
    h = absorb(h, choice.split.size());
    for (const auto s : choice.split) h = absorb(h, static_cast<std::uint64_t>(s));
    // A cluster level is part of the spatial level's choice; folded in only
    // when present, so paths without one hash as before.
    if (choice.cluster.active()) {
      const ClusterMapping& c = choice.cluster;
      h = absorb(h, 0xc1u);
      for (const auto s : c.split) h = absorb(h, static_cast<std::uint64_t>(s));
      for (const auto t : c.tile) h = absorb(h, static_cast<std::uint64_t>(t));
      for (const auto d : c.order) h = absorb(h, static_cast<std::uint64_t>(d));
    }
    return h;
  }

  /// Whether a node with path hash `h` is kept: its top 53 bits read as a
  /// uniform number in [0, 1), compared exactly with p (both are doubles
  /// with at most 53 significant bits), so p = 1 keeps every node.
  bool kept(std::uint64_t h) const { return static_cast<double>(h >> 11) * 0x1p-53 < p_; }

  /// The innermost level whose node on the mapping's path is left out, or
  /// -1 when every node is kept. Stops at the first cut: with p = 0.1 most
  /// mappings cost one level's hash.
  int first_cut(const Mapping& m) const {
    std::uint64_t h = root_;
    const auto& levels = m.levels();
    for (std::size_t l = 0; l < levels.size(); ++l) {
      h = node(h, static_cast<int>(l), levels[l]);
      if (!kept(h)) return static_cast<int>(l);
    }
    return -1;
  }

  bool keep(const Mapping& m) const { return first_cut(m) < 0; }

  std::uint64_t root() const { return root_; }
  double probability() const { return p_; }

 private:
  std::uint64_t root_;
  double p_;
};

}  // namespace mapex::level_sampling
