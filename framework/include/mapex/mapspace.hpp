#pragma once
/// \file
/// The mapspace of an operator on an architecture (Marvel §5, generalised
/// from three levels to any chain of buffer and spatial levels):
/// - a tile size per dimension at every buffer level and a split per
///   dimension at every spatial level, held per dimension as a "chain";
/// - a loop order at every data-holding level (DRAM included: Marvel's
///   level-3 inter-tile order), over the loops whose trip count there is
///   above 1. Orders of one-trip loops are equivalent, so only distinct
///   orders are counted and generated; one-trip loops go outermost.
///
/// The space is *counted* exactly without enumeration: a dynamic programme
/// over the dimensions whose state is what the constraints need (free loops
/// per level, or the set of them where an order rule applies; the product
/// of splits and the number of split dimensions per spatial level). The
/// same table of completion counts drives uniform sampling (unranking) and
/// prunes enumeration. Buffer capacity is not separable by dimension: it is
/// checked by a depth-first walk over the chains that cuts every subtree
/// whose smallest completion already overflows a buffer, with the subtree's
/// exact size taken from the table.
///
/// Enumeration streams mappings in a fixed order and splits into disjoint
/// chunks (prefixes of chain choices) that workers take independently;
/// nothing is materialised beyond the chains.

#include <boost/multiprecision/cpp_int.hpp>
#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/constraints.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mapex {

using BigInt = boost::multiprecision::cpp_int;

/// A uniform draw from [0, n), n > 0, by rejection: unlike the standard
/// distributions its result is the same with every standard library, so
/// seeded searches reproduce everywhere.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);
/// The same for a big integer bound.
BigInt uniform_below(std::mt19937_64& rng, const BigInt& n);

/// Exact size as text: all digits, and scientific form with 3 digits.
std::string format_count(const BigInt& n);

/// One line of a count report: the space after adding one constraint.
struct CountStep {
  std::string rule;  ///< e.g. "loop orders", "PE utilisation >= 0.1"
  BigInt size;
};

/// Sizes of the sub-spaces Marvel searches separately (§5, Fig. 10).
struct SubspaceCounts {
  /// Off-chip: tiles of the outermost buffer x DRAM loop orders; the same
  /// restricted to tiles that fit the outermost buffer; and the DRAM layouts
  /// (a dimension order per tensor), a separate factor.
  BigInt offchip;
  BigInt offchip_fitting;
  BigInt offchip_fitting_tiles;  ///< the fitting tiles alone (orders derived, §5.1)
  BigInt layouts;
  /// On-chip, for one fixed outermost-buffer tile: lower tiles, splits and
  /// on-chip loop orders; and the same after capacity.
  BigInt onchip;
  BigInt onchip_valid;
};

class Mapspace {
 public:
  /// Throws InputError when the options contradict the architecture (e.g.
  /// rules for a different number of levels).
  Mapspace(const Operator& op, const Architecture& arch, MapspaceOptions options = {});
  ~Mapspace();
  Mapspace(const Mapspace&) = delete;
  Mapspace& operator=(const Mapspace&) = delete;

  const Operator& op() const { return *op_; }
  const Architecture& arch() const { return *arch_; }
  const MapspaceOptions& options() const { return options_; }

  /// Exact number of mappings that satisfy every rule except buffer
  /// capacity (chains, fan-outs, parallel dimensions, fixed values, loop
  /// order rules, PE utilisation). No enumeration.
  const BigInt& size() const;
  /// Exact number that also fit every buffer: walks the chain choices (not
  /// the orders), so it costs about one step per valid tiling. Equals
  /// size() when capacity is not checked.
  BigInt count_valid() const;
  /// The space after each constraint in turn, ending with count_valid()
  /// (when `with_capacity`).
  std::vector<CountStep> count_steps(bool with_capacity = true) const;

  /// When the space holds no valid mapping: why, naming the constraint that
  /// emptied it (the first step of count_steps() that reaches zero, buffer
  /// capacity included), as "the mapspace is empty after constraints: ...".
  /// Nothing when a valid mapping exists. Costs the count tables and, when
  /// only capacity could empty the space, a walk to the first valid tiling.
  std::optional<std::string> empty_reason() const;

  /// Number of span chains of dimension `d` (for tests and reports).
  std::size_t num_chains(DimId d) const;
  /// Index of the buffer right below DRAM (Marvel's level 3), or -1 when
  /// the level below DRAM is spatial (a node array).
  int outer_buffer() const { return outer_buffer_; }

  /// The rule a mapping breaks, or nothing: "structure", "fixed",
  /// "parallel_dims", "fanout", "order", "utilization", "capacity" (with
  /// detail after a colon).
  std::optional<std::string> reject_reason(const Mapping& mapping) const;
  /// The part of reject_reason for factor bounds and pinned innermost
  /// loops ("limit: ..." or "order: ..."), or nothing. SearchContext applies
  /// it to every mapping a searcher evaluates, so searchers that build
  /// mappings outside the mapspace honour these rules too. Expects a
  /// structurally sound mapping.
  std::optional<std::string> limit_reject_reason(const Mapping& mapping) const;
  /// Whether any level has factor bounds or pinned innermost loops.
  bool has_limits_or_pins() const;

  /// A disjoint part of the space: fixed chain choices for the first
  /// dimensions. Chunks come in enumeration order and cover the space.
  struct Chunk {
    std::vector<std::uint32_t> prefix;
    /// The keep/bypass combination the chunk covers (chunks() sets it);
    /// -1: every combination.
    int keep_combo = -1;
  };
  /// At least `min_chunks` chunks when the space allows (fewer when it is
  /// small), in enumeration order.
  std::vector<Chunk> chunks(std::size_t min_chunks) const;
  /// The first `max_chunks` of those chunks only: the split stops there, so
  /// a sweep whose budget covers the start of a large space does not cut
  /// the whole space (the same chunks, in the same order, as the prefix of
  /// chunks(min_chunks)).
  std::vector<Chunk> chunks(std::size_t min_chunks, std::size_t max_chunks) const;

  /// Streams the space (or one chunk) in a fixed order: keep/bypass
  /// combinations (when constraints leave any free), then chains in index
  /// order, dimension by dimension, then loop orders level by level. Not
  /// thread-safe; one per thread.
  class Cursor {
   public:
    explicit Cursor(const Mapspace& space);
    Cursor(const Mapspace& space, const Chunk& chunk);
    Cursor(Cursor&&) noexcept;
    Cursor& operator=(Cursor&&) noexcept;
    ~Cursor();
    /// Writes the next valid mapping into `out` (reusing its storage);
    /// false when the space or chunk is exhausted.
    bool next(Mapping& out);
    /// The same for a caller that keeps `out` between calls: `out` must
    /// hold what the previous call of this overload wrote, untouched. Only
    /// the parts that changed are written (along a run of loop orders of
    /// one tiling, the orders that moved), and `change` says what may
    /// differ from the previous mapping (everything on the first call):
    /// the same mappings in the same order as next(out).
    bool next(Mapping& out, MappingChange& change);
    /// Mappings emitted so far.
    std::uint64_t visited() const { return visited_; }
    /// Mappings skipped because a buffer overflows (exact, from the count
    /// table; saturates at 2^64-1).
    std::uint64_t rejected() const { return rejected_; }

   private:
    struct State;
    std::unique_ptr<State> s_;
    std::uint64_t visited_ = 0;
    std::uint64_t rejected_ = 0;
  };

  /// Draws a mapping uniformly from the valid space: a uniform rank in
  /// [0, size()), unranked through the count table; draws that overflow a
  /// buffer are redrawn (at most `max_attempts` times; nothing if none fit).
  std::optional<Mapping> sample(std::mt19937_64& rng, int max_attempts = 1000) const;

  /// Rank and unrank: a bijection between [0, size()) and the mappings
  /// size() counts (every rule but buffer capacity), in the order a Cursor
  /// streams them: keep/bypass combination, then chains dimension by
  /// dimension in index order, then the loop orders of each slot, the last
  /// slot fastest. So the mappings a Cursor emits have increasing ranks,
  /// exactly 0, 1, 2, ... when no buffer overflows. Both walk the count
  /// table (the one size() comes from), one pass over each dimension's
  /// chains at most; nothing is enumerated.
  ///
  /// The mapping of rank `r`; nothing when r >= size(). It may overflow a
  /// buffer: reject_reason says so.
  std::optional<Mapping> unrank(const BigInt& r) const;
  /// The rank of `mapping`, or nothing when it is not a mapping the space
  /// counts (a rule is broken, a value is not one of the space's chains).
  /// Orders that differ only in where one-trip loops sit are one mapping of
  /// the space with one rank; unrank writes them outermost in dimension
  /// order, as the Cursor does. Capacity is not checked.
  std::optional<BigInt> rank(const Mapping& mapping) const;

  /// Marvel's sub-space sizes, with the on-chip space built on the given
  /// outermost-buffer tile (one per dimension).
  SubspaceCounts subspaces(const std::vector<std::int64_t>& outer_tile) const;
  /// The outermost-buffer tile with the largest footprint that still fits
  /// the buffer (Marvel §5.1, footnote 4: without a locality model, the
  /// biggest tile that fits moves the least off-chip data); ties go to the
  /// first in enumeration order. Empty when no tile fits.
  std::vector<std::int64_t> largest_outer_tile() const;

  // --- Level-by-level enumeration (moves for searchers; issues 21, 22) ---
  // A search fixes the mapping from DRAM inward: the value of every
  // dimension at one level (a buffer's tile, a spatial level's split), then
  // the loop orders that have become known (a data level's loops run over
  // its child's span, so its order is chosen once that span is fixed). The
  // counts below say exactly how many mappings a partial choice still
  // covers, so a search can drop a whole subtree and account for it.

  /// Whether level-by-level enumeration covers this space: it does not
  /// enumerate cluster levels (FLASH's T^out), so spaces with one are refused.
  bool supports_level_enumeration() const;
  /// The values dimension `d` may take at `level` (not DRAM) when the levels
  /// above it (level + 1 .. DRAM - 1) hold `partial`'s values: every chain of
  /// the dimension allowed by fixed values, parallel dimensions and factor
  /// limits, ascending. Couplings across dimensions (fan-out, number of split
  /// dimensions, utilisation, capacity) are left to count_completions.
  std::vector<std::int64_t> allowed_values(DimId d, int level, const Mapping& partial) const;
  /// The values dimension `d` may take at `level` (not DRAM) with nothing
  /// fixed above it: its tile (buffer levels) or split (spatial levels) over
  /// every chain of the dimension that fixed values, parallel dimensions and
  /// factor limits allow at every level, ascending. A value is listed only
  /// when the other levels of its dimension can still be completed around
  /// it. Reads the chains alone (no count table), so a searcher can list a
  /// level's candidates on any space the constructor accepted.
  std::vector<std::int64_t> level_values(DimId d, int level) const;
  /// The distinct loop orders of data level `level` when exactly the loops in
  /// `free_mask` (bit d: dimension d) have more than one trip, under the
  /// level's order rules: one-trip loops outermost in dimension order, then
  /// each allowed order of the free loops, in enumeration order.
  std::vector<std::vector<DimId>> level_orders(int level, std::uint32_t free_mask) const;
  /// Bit d set when dimension d's loop at data level `level` has more than
  /// one trip in `partial` (its tile over its child's span), as the order
  /// rules see it; the child's span must be fixed.
  std::uint32_t free_loops(const Mapping& partial, int level) const;
  /// Exact number of mappings of the space (every rule but buffer capacity,
  /// as size() counts them) whose tiles and splits at levels >= `first_fixed`
  /// equal `partial`'s, whose loop orders equal `partial`'s at the data
  /// levels flagged in `order_fixed` (indexed by level), and whose keep/bypass
  /// choice is `partial`'s. No enumeration: the count table's dynamic
  /// programme restricted to the matching chains. first_fixed = DRAM's index
  /// and no fixed orders gives size() / keep combinations.
  BigInt count_completions(const Mapping& partial, int first_fixed,
                           const std::vector<char>& order_fixed) const;
  /// Whether count_completions would be above zero, without counting: the
  /// same dynamic programme over reachable states only (no big-integer
  /// weights), stopping at the first state that completes.
  bool has_completion(const Mapping& partial, int first_fixed,
                      const std::vector<char>& order_fixed) const;
  /// The keep/bypass choices the space enumerates (1 when none is free), and
  /// writing choice `k` into a mapping.
  std::size_t keep_choices() const;
  void apply_keep_choice(Mapping& mapping, std::size_t k) const;

  struct Impl;

 private:
  /// reject_reason's part for the cluster level of spatial level i.
  std::optional<std::string> cluster_reject_reason(const Mapping& mapping, int i,
                                                   const LevelRule* r, int max_parallel) const;
  /// rank()'s chain of dimension `d` for the mapping's values, if any.
  std::optional<std::size_t> chain_index(const Mapping& mapping, DimId d) const;
  const Operator* op_;
  const Architecture* arch_;
  MapspaceOptions options_;
  int outer_buffer_ = -1;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mapex
