#pragma once
/// \file
/// Moves inside a mapspace, for local and population searches (annealing,
/// genetic, the template searcher): the values a tile or split may take,
/// the neighbours of a mapping (one tile or one split one step up or down,
/// or two loops of one level swapped), compound moves (a factor of a
/// dimension's trip count moved between two levels, one or two at once),
/// a random neighbour, and a crossover of two mappings. Every mapping a move returns is in the
/// space: the space's own membership test (Mapspace::reject_reason) decides, so the job's
/// constraints (fixed values, parallel dimensions, orders, factor limits, utilisation, capacity)
/// hold for every move without being restated here.

#include <cstdint>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace mapex {

/// What a move changed.
enum class MoveKind { kTile, kSplit, kSwap, kTransfer };

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

  // --- Compound moves: a factor moved between levels ----------------------
  // A one-value move changes one level's trip count of a dimension and, to
  // keep the product (the bound), the trip count of the level above: on a
  // nearly full PE array every split that grows is refused, and a tile
  // that grows under a full buffer too. A transfer moves a factor of a
  // dimension's trip count between any two levels (temporal or spatial) and
  // keeps every other level's, so the tiles and splits in between change
  // together and the array's use, or a buffer's footprint, can stay put.

  /// `m` with a factor `factor` of dimension `d`'s trip count at level
  /// `from` moved to level `to` (any two levels, DRAM included; a spatial
  /// level's trip count is its split). Nothing when the factor does not
  /// divide that trip count, a span between the two levels is not a whole
  /// number of its child's (an edge tile), a spatial level has a cluster
  /// level in use, or the space refuses the result.
  std::optional<Mapping> transfer(const Mapping& m, DimId d, int from, int to,
                                  std::int64_t factor) const;

  /// Every transfer of one prime factor of a trip count from one level to
  /// another that the space admits, in a fixed order: by dimension, source
  /// level, target level (each innermost first), then factor ascending.
  std::vector<Mapping> transfers(const Mapping& m) const;

  /// A random compound move: `count` transfers, each of a prime factor of a
  /// dimension's trip count at a level to another level (the dimension,
  /// the two levels and the prime drawn uniformly), applied together and
  /// admitted as a whole, so the steps in between need not be in the space
  /// (with two, one dimension can leave a full array while another joins
  /// it). Tried at most `max_attempts` times; nothing when all are refused.
  std::optional<Mapping> random_transfer(const Mapping& m, std::mt19937_64& rng, int count = 1,
                                         int max_attempts = 64) const;

  /// `a` with the splits of `b`: every dimension split differently by the
  /// two at some spatial level takes its tiles and splits at every level
  /// from `b`, the others keep `a`'s, and the loop orders stay `a`'s. With
  /// `b` a fresh draw of the space, a jump to another use of the PE array
  /// that keeps what `a` has found for the dimensions both leave alone;
  /// going there by transfers would pass through arrays far less used.
  /// Nothing when no split differs or the space refuses the result.
  std::optional<Mapping> graft_splits(const Mapping& a, const Mapping& b) const;

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
  /// Every level's span of dimension `d` (DRAM's: the bound).
  std::vector<std::int64_t> spans(const Mapping& m, DimId d) const;
  /// `m` with dimension `d`'s spans set to `spans` (tiles of buffer levels,
  /// splits of spatial ones); nothing when a split is not whole or a
  /// spatial level has a cluster level in use. Not checked by the space.
  std::optional<Mapping> with_spans(const Mapping& m, DimId d,
                                    const std::vector<std::int64_t>& spans) const;
  /// `spans` with a factor `factor` of the trip count at `from` moved to
  /// `to`; false (spans unchanged) when it does not divide.
  bool move_factor(std::vector<std::int64_t>& spans, int from, int to, std::int64_t factor) const;
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
