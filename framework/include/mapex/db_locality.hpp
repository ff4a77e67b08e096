#pragma once
/// \file
/// The distinct-block (DB) locality model of off-chip data movement
/// (Marvel, TACO 2021, §5.1; Ferrante, Sarkar and Thrash 1991): for one
/// level-3 (outermost on-chip buffer, "L2") tile of a perfectly nested
/// operator and a DRAM layout of every tensor, the number of distinct DRAM
/// blocks each tensor's reference touches, the data-movement cost per
/// iteration (DMC), the L2 capacity constraint with double buffering, the
/// partial derivatives of DMC that give the level-3 inter-tile order, and
/// the off-chip traffic of a whole DRAM loop nest.
///
/// Everything here is pure and thread-safe. The marvel searcher calls it
/// directly; the `db_locality` cost-model plugin exposes it as a stand-alone
/// off-chip traffic model.

#include <cstdint>
#include <functional>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex::db {

/// The DRAM layout of one tensor: its subscript positions (tensor
/// dimensions), outermost first; the last one is contiguous in DRAM.
using Layout = std::vector<int>;

/// A level-3 tile with one layout per tensor and what the DB model says of it.
struct OffchipChoice {
  std::vector<std::int64_t> tile;  ///< per loop dimension
  std::vector<Layout> layouts;     ///< per tensor, in operator order
  std::vector<double> blocks;      ///< distinct DRAM blocks per tensor
  double total_blocks = 0;
  double dmc = 0;  ///< blocks per iteration of the tile (§5.1)
  /// Bytes of L2 the tile's blocks occupy, double-buffered when L2 is.
  double required_bytes = 0;
  /// Level-3 inter-tile order, outermost first (§5.1, from the derivatives).
  std::vector<DimId> order;
};

/// Off-chip traffic of a DRAM loop nest over level-3 tiles, in blocks.
struct Traffic {
  std::vector<double> read_blocks;   ///< per tensor
  std::vector<double> write_blocks;  ///< per tensor (outputs only)
  double total_blocks() const;
};

/// The DB model bound to one operator, a DRAM block size and a word size.
class Model {
 public:
  /// `block_bytes` and `word_bytes` must be positive; throws InputError
  /// otherwise. A block holds block_bytes / word_bytes elements (at least 1).
  Model(const Operator& op, std::int64_t block_bytes, double word_bytes);

  const Operator& op() const { return *op_; }
  double block_words() const { return block_words_; }
  std::int64_t block_bytes() const { return block_bytes_; }

  /// Every layout of tensor `t`: the permutations of its subscript
  /// positions in lexicographic order (the first is row-major).
  std::vector<Layout> layouts(int t) const;
  static Layout row_major(const Tensor& tensor);

  /// Distinct DRAM blocks tensor `t` touches in a tile (§5.1): each
  /// subscript spans its affine extent (sliding windows such as p+s span
  /// Tp+Ts-1); the contiguous run is the innermost layout dimension, grown
  /// through every further dimension the tile covers whole (those rows are
  /// adjacent in DRAM), and is rounded up to whole blocks; the other
  /// dimensions multiply. With block size 1 the layout does not matter
  /// (§5.1, footnote 5).
  double blocks(int t, const std::vector<std::int64_t>& tile, const Layout& layout) const;
  /// The same with the ceiling replaced by its mean over alignments,
  /// (run - 1) / b + 1: smooth in the tile sizes, used for the derivatives.
  double blocks_smooth(int t, const std::vector<double>& tile, const Layout& layout) const;

  /// DMC (§5.1): distinct blocks of all references over the iterations of
  /// the tile.
  double dmc(const std::vector<std::int64_t>& tile, const std::vector<Layout>& layouts) const;
  /// Partial derivatives of the smooth DMC with respect to each tile size,
  /// at `tile`.
  std::vector<double> dmc_gradient(const std::vector<std::int64_t>& tile,
                                   const std::vector<Layout>& layouts) const;
  /// The level-3 inter-tile order (§5.1): loops with one trip outermost (in
  /// dimension order, their place changes nothing), then the others by
  /// decreasing derivative, so the most negative (most reuse) is innermost;
  /// ties keep dimension order.
  std::vector<DimId> order(const std::vector<std::int64_t>& tile,
                           const std::vector<Layout>& layouts) const;

  /// The layout of each tensor that touches the fewest blocks for `tile`
  /// (ties to the first in lexicographic order), with the figures filled
  /// in. Tensors are independent in the DB model, so this is the optimum
  /// over all layout combinations.
  OffchipChoice best_layouts(const std::vector<std::int64_t>& tile) const;
  /// The figures for given layouts.
  OffchipChoice evaluate(const std::vector<std::int64_t>& tile, std::vector<Layout> layouts) const;

  /// Traffic of the DRAM loop nest that walks the operator in tiles of
  /// `tile` in `order` (outermost first): a tensor's tile is fetched again
  /// whenever a loop at or outside its innermost relevant loop (with more
  /// than one trip) advances; loops inside it reuse the tile in L2. Outputs
  /// are written once per fetch and read back as partial sums on every
  /// fetch but the first of each block. Edge tiles count as full ones.
  Traffic traffic(const std::vector<std::int64_t>& tile, const std::vector<DimId>& order,
                  const std::vector<Layout>& layouts) const;

 private:
  std::vector<double> extents(int t, const std::vector<double>& tile) const;
  const Operator* op_;
  std::int64_t block_bytes_;
  double word_bytes_;
  double block_words_;
  std::vector<std::vector<double>> full_;  ///< per tensor, per subscript: extent at full bounds
};

/// Bytes of `level` that tiles may fill: its size, halved when it is
/// double-buffered.
double usable_bytes(const Level& level);

/// The off-chip sub-space search (§5.1): every level-3 tile allowed by
/// `tile_values` (one list of candidate sizes per dimension) with its best
/// layouts, kept when its blocks fit the buffer (`capacity_bytes`, already
/// halved for double buffering); returns the `keep` with the lowest DMC
/// (ties: larger tile volume, then enumeration order), each with its
/// derived order. `considered` receives the number of (tile, layout
/// combination) points the search covered.
std::vector<OffchipChoice> search_offchip(const Model& model,
                                          const std::vector<std::vector<std::int64_t>>& tile_values,
                                          double capacity_bytes, std::size_t keep,
                                          double* considered = nullptr);

/// Decides whether a level-3 tile may be kept (e.g. whether the on-chip
/// space under it can reach a PE-utilisation bound); called from the
/// searching thread, only for tiles that fit and would enter the kept list.
using TileFilter = std::function<bool(const std::vector<std::int64_t>& tile)>;

/// The same search keeping only the tiles `admit` accepts (an empty filter
/// accepts every tile). `rejected` receives how many fitting tiles that
/// would have been kept the filter turned away.
std::vector<OffchipChoice> search_offchip(const Model& model,
                                          const std::vector<std::vector<std::int64_t>>& tile_values,
                                          double capacity_bytes, std::size_t keep,
                                          const TileFilter& admit, double* considered = nullptr,
                                          std::uint64_t* rejected = nullptr);

/// The smallest possible tile (every size 1, or the smallest allowed) and
/// the bytes its blocks need: for the message when nothing fits.
OffchipChoice minimal_choice(const Model& model,
                             const std::vector<std::vector<std::int64_t>>& tile_values);

/// Formats a layout by the tensor's subscripts, e.g. `[K][C][R][S]`.
std::string format_layout(const Operator& op, int t, const Layout& layout);

}  // namespace mapex::db
