#pragma once
/// \file
/// Mapspace constraints (issue "Mapspace at full strength", Marvel §5-6).
/// A ConstraintSpec is what a user writes (in an experiment's `mapspace:`
/// block or a `--constraints` file): dimension, level and tensor *names*,
/// so one spec serves every layer of a network. `resolve` binds it to one
/// operator and architecture, checks it for contradictions, and yields the
/// MapspaceOptions the mapspace enumerates, counts and samples.

#include <cstdint>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex {

/// A spatial level's cluster level in the mapspace (README, "Cluster
/// levels"; FLASH §4 T^out): present turns it on (off by default, so the
/// space is what it was without clusters); each key fixes or bounds a part.
struct ClusterConstraintSpec {
  SourceLocation where;
  /// The only dimensions the cluster may split (absent: any).
  std::optional<std::vector<std::string>> parallel;
  /// Fixed units per cluster (dimension -> split) and fixed cluster tiles
  /// (dimension -> T^out).
  std::map<std::string, std::int64_t> split, tile;
  /// Allowed cluster loop orders, outermost first (absent: any).
  std::vector<std::vector<std::string>> orders;
};

/// A bound on one factor, with where it was written (for messages).
struct FactorLimitSpec {
  std::int64_t value = 0;
  SourceLocation where;
};

/// Constraints on one level, by name.
struct LevelConstraintSpec {
  std::string level;
  SourceLocation where;
  /// Spatial levels: the only dimensions that may be split (absent: any).
  std::optional<std::vector<std::string>> parallel;
  /// Spatial levels: fixed splits (dimension -> children). Buffer levels:
  /// fixed tile sizes (dimension -> tile).
  std::map<std::string, std::int64_t> fixed;
  /// Bounds on the level's factor of a dimension (dimension -> bound):
  /// at a spatial level its split, at a buffer or DRAM the trip count of
  /// its own loop over the tiles below (Timeloop's per-level `factors`,
  /// with `<=` and `>=` instead of `=`). Checked against `fixed`.
  std::map<std::string, FactorLimitSpec> max_factor, min_factor;
  /// Data levels: the innermost loops of the order, outermost first (the
  /// last one innermost); the other loops are free outside them
  /// (Timeloop's partial `permutation`, which it writes innermost first).
  /// One location per name.
  std::vector<std::string> innermost;
  std::vector<SourceLocation> innermost_where;
  /// Data levels: allowed loop orders, outermost first (absent: any). A
  /// mapping's order is allowed when its loops with more than one trip
  /// follow one of these orders.
  std::vector<std::vector<std::string>> orders;
  /// Data levels: the order must keep one of these tensors stationary: all
  /// loops that do not index it inside all loops that do (Marvel §5,
  /// temporal reuse; the weight-, output- and input-stationary styles).
  std::vector<std::string> stationary;
  /// Buffer levels: tensors the level must keep, and tensors it must
  /// bypass (Timeloop's dataspace keep/bypass constraints). A tensor in
  /// neither follows `ConstraintSpec::explore_bypass`.
  std::vector<std::string> keep;
  std::vector<std::string> bypass;
  /// Spatial levels: the cluster level's rules; absent: no cluster level.
  std::optional<ClusterConstraintSpec> cluster;
};

struct ConstraintSpec {
  /// A mapping-style preset applied first (see `style_names`); "" for none.
  std::string style;
  SourceLocation style_where;
  /// Tiles that divide the bounds only (no edge tiles; Marvel §5.2).
  bool factors_only = true;
  /// Reject mappings whose tiles overflow a buffer (double-buffered where
  /// the architecture says so).
  bool check_capacity = true;
  /// Split dimensions per spatial level; 0: the rank of the level's shape.
  int max_parallel_dims = 0;
  /// Marvel's PE-utilisation bound p (§5.2): the spatial splits must use at
  /// least this fraction of the PEs. 0 disables it.
  double min_utilization = 0;
  SourceLocation utilization_where;
  /// Enumerate keep or bypass for every tensor at every buffer level that
  /// no `keep`/`bypass` rule fixes (as Timeloop's mapper does). Off: such
  /// tensors take the mapping default (kept; at a partitioned level, kept
  /// when a partition holds them), and the space is what it was before
  /// keep/bypass existed.
  bool explore_bypass = false;
  std::vector<LevelConstraintSpec> levels;
};

/// The named mapping styles the papers compare against (Marvel §6):
/// row_stationary (Eyeriss-like), weight_stationary (NVDLA-like),
/// output_stationary (ShiDianNao-like), interstellar (parallel C and K
/// only), dmazerunner (parallel K only, stationary orders only).
const std::vector<std::string>& style_names();

/// A spatial level's cluster level, resolved (ClusterConstraintSpec).
struct ClusterRule {
  bool enabled = false;
  std::uint64_t parallel_mask = ~std::uint64_t{0};
  /// Per dimension, 0 = free (empty: nothing fixed).
  std::vector<std::int64_t> fixed_split, fixed_tile;
  std::vector<std::vector<DimId>> orders;
};

/// A constraint on one level, resolved to indices.
struct LevelRule {
  /// Spatial: bit d set when dimension d may be split.
  std::uint64_t parallel_mask = ~std::uint64_t{0};
  /// Per dimension: fixed tile (buffer) or split (spatial); 0 = free.
  std::vector<std::int64_t> fixed;
  /// Per dimension, bounds on the level's factor (its split, or the trip
  /// count of its loop: ceil(span / span below)); 0 = none; empty: none.
  std::vector<std::int64_t> max_factor, min_factor;
  /// Allowed loop orders (outermost first, permutations of all dimensions).
  std::vector<std::vector<DimId>> orders;
  /// Pinned innermost loops, outermost first: the loops of more than one
  /// trip among them must close the order, in this order.
  std::vector<DimId> innermost;
  /// Tensor indices of which one must stay stationary.
  std::vector<int> stationary;
  /// Buffer levels, per tensor: 1 must keep, 0 must bypass, -1 not fixed;
  /// empty: nothing fixed.
  std::vector<std::int8_t> keep;
  /// Spatial levels: the cluster level (off unless a constraint turns it on).
  ClusterRule cluster;
  bool order_constrained() const {
    return !orders.empty() || !stationary.empty() || !innermost.empty();
  }
  bool has_factor_limits() const { return !max_factor.empty() || !min_factor.empty(); }
};

/// Resolved constraints of one mapspace.
struct MapspaceOptions {
  bool factors_only = true;
  int max_parallel_dims = 0;
  bool check_capacity = true;
  double min_utilization = 0;
  /// ConstraintSpec::explore_bypass.
  bool explore_bypass = false;
  /// One per architecture level, or empty (no per-level rules).
  std::vector<LevelRule> levels;
  /// The style the rules came from, for reports.
  std::string style;
};

/// Binds a spec to an operator and architecture. Throws InputError (with
/// the spec's locations) for an unknown level, dimension or tensor, a rule
/// on a level of the wrong kind, a fixed split beyond the fan-out or a
/// fixed tile beyond the bound, a utilisation bound outside [0, 1], an
/// order that is not a permutation, and a style that does not apply; and
/// for fixed values no mapping can meet together: splits on one level
/// whose product exceeds its fan-out or that split more dimensions than
/// `max_parallel_dims` allows, a fixed tile or split that does not divide
/// the bound (factors-only), and a fixed tile smaller than what it must
/// hold (a fixed tile below times the fixed splits between). Factor bounds
/// and pins (each error at the entry's location): a bound below 1, a
/// minimum above the maximum or above what the level can reach, a bound the
/// fixed values already break, a loop pinned twice or on a spatial level.
MapspaceOptions resolve(const ConstraintSpec& spec, const Operator& op, const Architecture& arch);

/// For searchers that build their own candidates instead of walking the
/// mapspace (FLASH's §4 candidates, nn_dataflow's schemes): the first rule
/// of `options` they cannot honour, as "level 'X': key" (a style, fixed
/// tiles or splits, parallel dimensions, allowed or stationary orders,
/// keep/bypass, cluster rules), so they refuse the job instead of silently
/// searching a different space. Factor limits and pinned innermost loops
/// are not reported: the framework checks them on every evaluated mapping.
std::optional<std::string> rule_outside_limits(const MapspaceOptions& options,
                                               const Architecture& arch);

/// Loads a constraints file (the keys of an experiment's `mapspace:` block;
/// README, "Mapspace constraints"). Throws InputError with file, line,
/// column and key.
ConstraintSpec load_constraint_spec(const std::string& path);

}  // namespace mapex
