#pragma once
/// \file
/// Moves inside a mapspace, for local and population searches (annealing,
/// genetic, the template searcher): the values a tile or split may take,
/// the neighbours of a mapping (one tile or one split one step up or down,
/// or two loops of one level swapped), a random neighbour, and a crossover
/// of two mappings. Every mapping a move returns is in the space: the
/// space's own membership test (Mapspace::reject_reason) decides, so the
/// job's constraints (fixed values, parallel dimensions, orders, factor
/// limits, utilisation, capacity) hold for every move without being
/// restated here.

#include <cstdint>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace mapex {

/// What a move changed.
enum class MoveKind { kTile, kSplit, kSwap };

class BOOST_SYMBOL_VISIBLE MapspaceMoves {
 public:
  /// The space must outlive the moves. Thread-safe after construction
  /// (every member function is const and keeps no state).
  explicit MapspaceMoves(const Mapspace& space);

  const Mapspace& space() const { return *space_; }

  /// The sizes a tile or split of dimension `d` may take, ascending: the
  /// divisors of its bound with factors-only tiles; otherwise every size
  /// up to the bound when the bound is at most 4,096, and beyond that the
  /// divisors, the powers of two and the bound (the candidates a move
  /// steps through; whether a value is admitted at a given place is the
  /// space's decision).
  const std::vector<std::int64_t>& values(DimId d) const {
    return values_[static_cast<std::size_t>(d)];
  }

  /// Every neighbour of `m` in the space, in a fixed order: for each level
  /// innermost first and each dimension, its tile (buffer levels) or split
  /// (spatial levels) moved to the nearest admitted value below and above;
  /// then for each buffer and DRAM level, every swap of two of its loops
  /// that both run more than once there (a swap of a one-trip loop changes
  /// nothing). `m` must be in the space.
  std::vector<Mapping> neighbours(const Mapping& m) const;

  /// One neighbour drawn at random: a move kind, a level and a dimension
  /// (or two loops) drawn uniformly, tried until the space admits one, at
  /// most `max_attempts` times. Nothing when every attempt was refused. A
  /// tile or split moves to the nearest admitted value, or with `max_stride`
  /// above 1 to the s-th nearest in its direction, s drawn uniformly from
  /// [1, max_stride] (longer jumps for a search that should not stay local).
  std::optional<Mapping> random_neighbour(const Mapping& m, std::mt19937_64& rng,
                                          int max_attempts = 64, int max_stride = 1) const;

  /// A child of two mappings of the space: each dimension's tiles and
  /// splits at every level come from one parent, each level's loop order
  /// from one parent, each drawn with even odds (the per-dimension genes of
  /// GAMMA, Kao and Krishna, ICCAD 2020, on mapex's level structure).
  /// Nothing when the space refuses the child.
  std::optional<Mapping> crossover(const Mapping& a, const Mapping& b, std::mt19937_64& rng) const;

 private:
  const Mapspace* space_;
  std::vector<std::vector<std::int64_t>> values_;
  std::vector<int> movable_levels_;  ///< buffer and spatial levels (DRAM's tile is the bound)
  std::vector<int> order_levels_;    ///< buffer and DRAM levels

  bool admitted(const Mapping& m) const;
  /// The mapping with level `l`'s tile or split of `d` set to `value`.
  Mapping with_value(const Mapping& m, int l, DimId d, std::int64_t value) const;
  /// The nearest admitted mapping stepping `d` at level `l` down (dir -1)
  /// or up (+1) through values(d); with `stride` s, the s-th admitted one
  /// (or the farthest found when fewer are).
  std::optional<Mapping> step(const Mapping& m, int l, DimId d, int dir, int stride = 1) const;
  /// Whether dimension `d` runs more than one trip at data level `l`.
  bool loops(const Mapping& m, int l, DimId d) const;
};

/// The mappings a search has evaluated, so that a local search proposes each
/// once (a repeated evaluation spends budget and learns nothing). Two
/// mappings are the same when their tiles, splits, cluster levels and
/// keep/bypass choices are, and so is the order of the loops that run more
/// than once at each level (the space counts orders that differ only in
/// where one-trip loops sit as one mapping).
class BOOST_SYMBOL_VISIBLE VisitedMappings {
 public:
  /// The space must outlive the set.
  explicit VisitedMappings(const Mapspace& space) : space_(&space) {}
  /// True when `m` was not in the set; it is now.
  bool insert(const Mapping& m);
  bool contains(const Mapping& m) const;
  std::size_t size() const { return seen_.size(); }

 private:
  std::vector<std::int64_t> key(const Mapping& m) const;
  const Mapspace* space_;
  std::set<std::vector<std::int64_t>> seen_;
};

}  // namespace mapex
