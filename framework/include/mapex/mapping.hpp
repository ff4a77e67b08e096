#pragma once
/// \file
/// The canonical, cost-model-neutral mapping (docs/design.md, Mapping): for each
/// level of the architecture, innermost first,
/// - a buffer or DRAM level holds a tile (size per dimension) and iterates
///   over the tiles of the level below in a loop order (outermost first);
/// - a spatial level splits dimensions over its children (`split[d]`
///   children along d), so the span it covers is child tile x split.
/// Tile sizes need not divide the bounds: edge tiles are real (Marvel §1).

#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex {

/// A spatial level's cluster tile (FLASH §4, Table 2; MAESTRO's Cluster
/// directive, §III): the level's children are grouped into clusters of
/// prod(split) units; one cluster steps in time over `tile` (T^out), each
/// step covering child span x split (T^in over the cluster's units), in
/// `order` (outermost first); the level's own `split` then spreads the
/// clusters, so the level's span is tile x split. Between the two splits
/// there is no buffer: every step refills the children from the data level
/// above (Timeloop's image: a storage level that bypasses every tensor and
/// holds these temporal and spatial loops).
struct ClusterMapping {
  std::vector<std::int64_t> split;  ///< units per cluster along each dimension
  std::vector<std::int64_t> tile;   ///< T^out per dimension
  std::vector<DimId> order;         ///< the cluster's temporal loops, outermost first
  /// Empty (no cluster level): the children of the level form one cluster
  /// whose tile is their span.
  bool active() const { return !tile.empty(); }
  bool operator==(const ClusterMapping&) const = default;
};

struct LevelMapping {
  /// Buffer/DRAM: tile size per dimension (DRAM: the full bounds).
  std::vector<std::int64_t> tile;
  /// Buffer/DRAM: loop order over the child tiles, outermost first; a
  /// permutation of all dimensions.
  std::vector<DimId> order;
  /// Spatial: number of children along each dimension (1 = not split).
  std::vector<std::int64_t> split;
  /// Spatial, optional: where each split lies on the array, as the factor
  /// along each axis of the level's shape (`axes[d][a]`, product over a =
  /// split[d]). Empty: not placed; a model that needs a placement chooses
  /// one. With `order` (spatial: the split dimensions, outermost first) it
  /// fixes each child's coordinate: for d in order, coord = coord x
  /// axes[d] + index[d] on every axis (nn_dataflow's partition scheme).
  std::vector<std::vector<std::int64_t>> axes;
  /// Spatial, optional: a cluster level below the split (see ClusterMapping).
  ClusterMapping cluster;
  /// Buffer levels, optional: keep[t] says whether this level holds tensor
  /// t (Timeloop's keep/bypass per data space, nn_dataflow's GBUF bypass).
  /// A bypassed tensor goes straight between the nearest levels below and
  /// above that keep it; the level's loops still run. Empty: the default,
  /// every tensor (at a partitioned level, every tensor one of its
  /// partitions names). Spatial and DRAM levels: always empty.
  std::vector<bool> keep;
};

/// The span a spatial level covers given its children's span `child`:
/// child x split, or with a cluster level its tile x split; clipped to the
/// bounds. `inner` (optional) receives the span of one cluster step, child
/// x cluster split (child x 1 without a cluster level).
std::vector<std::int64_t> spatial_span(const Operator& op, const LevelMapping& lm,
                                       const std::vector<std::int64_t>& child,
                                       std::vector<std::int64_t>* inner = nullptr);
/// Children of a spatial level that a mapping engages: the product of its
/// split and of its cluster split.
std::int64_t units_used(const LevelMapping& lm);

/// Whether split factors (1s are ignored) can be placed on the axes of a
/// spatial level's shape under its `split_placement`:
/// each factor, or with kAcrossAxes each of its integer factors, goes on
/// an axis, and the factors on an axis multiply to at most its size. With
/// kFlat, or a one-axis shape, only the product against the fan-out
/// counts. The one test of placement: structural_error (so every cost
/// model) and the mapspace's counts, enumeration and sampling use it.
bool splits_fit_array(std::vector<std::int64_t> factors, const Level& level);

/// Why the splits of a spatial level cannot be placed on its array, or
/// nothing. Without an explicit placement (`axes`) some placement of the
/// split (and cluster split) factors must exist (splits_fit_array); with
/// one, it must be complete, multiply to the splits, fit every axis, and
/// under kOneAxis put each split on one axis.
std::optional<std::string> placement_error(const Operator& op, const Level& level,
                                           const LevelMapping& lm);

class Mapping {
 public:
  Mapping() = default;
  explicit Mapping(std::vector<LevelMapping> levels) : levels_(std::move(levels)) {}

  const std::vector<LevelMapping>& levels() const { return levels_; }
  std::vector<LevelMapping>& levels() { return levels_; }
  const LevelMapping& level(int i) const { return levels_[static_cast<size_t>(i)]; }
  LevelMapping& level(int i) { return levels_[static_cast<size_t>(i)]; }

  /// The trivial mapping: everything in the innermost buffer is one element,
  /// no spatial split, every level passes its child's span up unchanged and
  /// DRAM holds the whole problem. Always structurally valid.
  static Mapping trivial(const Operator& op, const Architecture& arch);

  /// Whether data level `level` holds tensor `tensor`: `keep` when given,
  /// else the default (see LevelMapping::keep); DRAM always, spatial never.
  bool keeps(const Operator& op, const Architecture& arch, int level, int tensor) const;
  /// The data levels holding `tensor`, innermost first (DRAM last).
  std::vector<int> keeping_levels(const Operator& op, const Architecture& arch, int tensor) const;

  /// Span of level i per dimension: its tile for buffers/DRAM, child span x
  /// split (clipped to the bound) for spatial levels.
  std::vector<std::int64_t> span(const Operator& op, const Architecture& arch, int level) const;

  /// Returns why the mapping does not fit the operator and architecture
  /// (wrong number of levels, a tile smaller than the span below it or larger
  /// than the bound, a split over more children than the fan-out or that
  /// cannot be placed on the array's axes (placement_error), an order that
  /// is not a permutation, a `keep` on a level other than a buffer or
  /// keeping a tensor no partition of the level holds, a partitioned level
  /// none of whose partitions holds a tensor of the operator), or nothing
  /// when it is well formed. Capacity is not checked here: it is a
  /// cost-model matter.
  std::optional<std::string> structural_error(const Operator& op, const Architecture& arch) const;

  /// Writes YAML (see README, "Mapping files"): one entry per level keyed by
  /// its name.
  std::string to_yaml(const Operator& op, const Architecture& arch) const;
  /// A one-line human summary, e.g. `L1[K1 C3 R3 S3] PE[K12 P14] L2[...]`.
  std::string summary(const Operator& op, const Architecture& arch) const;

  /// Loads a mapping file; levels and dimensions are named. Levels and keys
  /// left out take the trivial defaults. Validates structure; throws
  /// InputError with file, line, column and key.
  static Mapping load(const std::string& path, const Operator& op, const Architecture& arch);
  static Mapping parse(const std::string& yaml_text, const std::string& origin, const Operator& op,
                       const Architecture& arch);

  bool operator==(const Mapping& other) const;

 private:
  std::vector<LevelMapping> levels_;
};

bool operator==(const LevelMapping& a, const LevelMapping& b);

/// What may differ between a mapping and the one before it in a stream
/// (Mapspace::Cursor::next with a change report): a cost model scoring the
/// stream redoes only the part of its analysis that reads what changed.
/// The default says everything may have changed.
struct MappingChange {
  /// Tiles, splits, cluster tiles and splits or keep choices may differ.
  bool tiling = true;
  /// The keep/bypass choices may differ (never without `tiling`).
  bool keep = true;
  /// The lowest level whose loop order (a spatial level's cluster order)
  /// may differ; the number of levels or more when no order differs.
  int lowest_order = 0;
  /// Adds `next`, the change from the mapping this one leads to onwards:
  /// the result is the change across both steps.
  void merge(const MappingChange& next) {
    tiling = tiling || next.tiling;
    keep = keep || next.keep;
    lowest_order = lowest_order < next.lowest_order ? lowest_order : next.lowest_order;
  }
};

}  // namespace mapex
