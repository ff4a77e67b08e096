#pragma once
/// \file
/// Loop-nest analysis shared by cost models: tile counts with edge tiles,
/// compute time of a spatially unrolled nest, and the data each level moves
/// given its tiles and loop orders (temporal reuse across innermost loops
/// that do not index a tensor, spatial multicast and reduction).

#include <boost/container/flat_map.hpp>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/metrics.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex {

/// How a dimension is cut at one level: extent -> number of tiles with that
/// extent. The extents always add up to the bound. Edge tiles show up as a
/// second, smaller extent (17 on tiles of 16: {16: 1, 1: 1}).
/// A sorted flat map kept inline (a partition has at most a few distinct
/// extents), so the analysis of one mapping allocates little.
using ExtentCounts =
    boost::container::flat_map<std::int64_t, double, std::less<std::int64_t>,
                               boost::container::small_vector<std::pair<std::int64_t, double>, 4>>;

/// Words of one tensor moved across one boundary.
struct TensorTraffic {
  double fills = 0;          ///< words written into the child level (all instances)
  double parent_reads = 0;   ///< words read from the parent to serve the fills
  double updates = 0;        ///< output words the child sends up (before spatial reduction)
  double parent_writes = 0;  ///< output words written into the parent (after reduction)
};

/// A level's energy and the cycles its bandwidth needs, as in level_metrics.
struct LevelCost {
  double transfer_cycles = 0;
  double energy_pj = 0;
};

/// One tensor's part of a level's accounts (level_costs): its reads and
/// writes at the level, their energy and the bytes they move through the
/// level's ports.
struct TensorTerms {
  double reads = 0, writes = 0;
  double energy_pj = 0;
  double bytes = 0, read_bytes = 0, write_bytes = 0;
};

/// What analyse_traffic_into keeps on a NestAnalysis between two calls, so
/// that the next mapping of the enumeration stream (same tiling, another
/// loop order) recomputes only the boundaries whose reuse scan reads a
/// level whose order changed. Internal state: analyse_tiling_into empties
/// it, and the figures it gives equal a computation from scratch.
struct TrafficMemo {
  /// One tensor's boundary between data level `child` (-1: the MACs) and
  /// the next level above that keeps the tensor.
  struct Boundary {
    int child = -1;
    int parent = 0;
    // From the tiling and the keep chain only.
    double footprint = 1;          ///< words of one child tile
    double distinct = 1;           ///< distinct (child instance, tile) pairs
    double shared = 1;             ///< multicast/reduction factor up to the parent
    double shared_if_reduced = 1;  ///< the same had every network reduced
    boost::container::small_vector<std::pair<int, double>, 4> cumulative;
    /// The reuse scan over the loops above the child: reuse_at[m * n + d]
    /// is the reuse along d before the scan enters level m; `stop` is the
    /// level where it met a loop indexing the tensor (the number of levels
    /// when none did). Only the orders of levels child+1..stop were read.
    /// Inline for up to 6 levels of 8 dimensions: a fresh analysis (analyse)
    /// builds one per boundary, and heap vectors here made it 1.5 us slower.
    boost::container::small_vector<double, 48> reuse_at;
    boost::container::small_vector<double, 16> reuse;
    int stop = 0;
    TensorTraffic traffic;
    double readback = 0;  ///< outputs: partial sums read back down
    /// What the scan did: reused[m] (m from child+1 to stop), bit d: it
    /// multiplied the reuse along d by level m's trip count. Where it stops,
    /// and what it multiplies at the levels below, depend on the tiling
    /// alone; only reused[stop] depends on an order, the stop level's.
    boost::container::small_vector<std::uint64_t, 8> reused;
    /// The words for each reused[stop] computed for this tiling and keep
    /// chain: along the stream the same few come back again and again.
    struct Outcome {
      std::uint64_t key = 0;  ///< reused[stop]
      TensorTraffic traffic;
      double readback = 0;
    };
    boost::container::small_vector<Outcome, 8> seen;
    std::uint32_t next_evicted = 0;  ///< round robin once `seen` is full
  };
  bool valid = false;
  /// Per level, the loop order the scan reads (a spatial level's cluster
  /// order; empty without a cluster level) and the keep choices.
  std::vector<std::vector<DimId>> orders;
  /// `orders` holds the previous mapping's orders (a call told what changed
  /// does not record them).
  bool orders_known = false;
  std::vector<std::vector<bool>> keep;
  /// Per tensor: its MAC boundary, then one per level of its keep chain.
  std::vector<std::vector<Boundary>> boundaries;
  /// trips[m * n + d]: the trip count the reuse scan reads at level m along
  /// d (a spatial level's cluster steps), divided out once per tiling.
  std::vector<double> trips;
  /// What a level's accounts take from the operator and the architecture
  /// (energies per tensor, word widths, each port's bytes per cycle over
  /// the level's instances), looked up once per tiling instead of once per
  /// mapping (level_costs).
  struct LevelConstants {
    LevelKind kind = LevelKind::kBuffer;
    double hop_energy_pj = 0;
    boost::container::small_vector<double, 4> read_energy_pj, write_energy_pj, word_bytes;
    bool has_port = false, has_read_port = false, has_write_port = false;
    double port = 0, read_port = 0, write_port = 0;  // bytes per cycle
  };
  /// The level accounts are brought up to date by level_costs when it is
  /// asked (a one-off analysis feeding level_metrics never needs them), so
  /// the members below are mutable: a NestAnalysis is not shared between
  /// threads. `levels` is rebuilt per tiling, `below[i * tensors + t]` (the
  /// data level under level i that keeps t, -1: the MACs) per keep choice;
  /// `terms[i * tensors + t]` is tensor t's part of level i's accounts, and
  /// `stale[i]` bit t says it needs recomputing (a recomputed boundary of t
  /// touched its child, its parent or a network in between; bit 63 stands
  /// for tensors 63 and up).
  mutable std::vector<LevelConstants> levels;
  mutable std::vector<int> below;
  mutable std::vector<TensorTerms> terms;
  mutable std::vector<LevelCost> costs;
  mutable std::vector<std::uint64_t> stale;
  mutable bool levels_valid = false, below_valid = false;
};

struct NestAnalysis {
  /// span[level][dim]: extent covered by one instance of the level.
  std::vector<std::vector<std::int64_t>> span;
  /// tiles[level][dim]: all tiles over all instances and time (data view).
  std::vector<std::vector<ExtentCounts>> tiles;
  /// time[level][dim]: the same cut as seen by the clock: the children of a
  /// spatial level run side by side, so only the largest chunk counts.
  std::vector<std::vector<ExtentCounts>> time;
  /// tile_counts[level + 1][dim]: number of tiles of the level along dim
  /// over all instances and time; row 0 is the MACs (tiles of 1).
  std::vector<std::vector<double>> tile_counts;
  /// For a spatial level with a cluster level (mapping.hpp, ClusterMapping):
  /// cluster_counts[level][dim] counts its clusters' tiles (T^out) and
  /// step_counts[level][dim] their steps (child span x cluster split) along
  /// dim over all instances and time; for other levels both equal the
  /// level's own tile count, so the cluster level has one trip.
  std::vector<std::vector<double>> cluster_counts;
  std::vector<std::vector<double>> step_counts;
  /// Cycles if each PE does `macs_per_pe` MACs per cycle and the spatial
  /// levels run their children in lock step (edge tiles idle some PEs).
  double compute_cycles = 0;
  double macs = 0;
  /// traffic[level][tensor]: for each data-holding level, what it exchanges
  /// with the next data-holding level above it (DRAM: nothing). The MAC
  /// units are treated as a level of span 1 below level 0, so level 0's
  /// reads include the operand reads of the MACs.
  std::vector<std::vector<TensorTraffic>> traffic;
  /// Operand traffic between the MACs and the innermost data level.
  std::vector<TensorTraffic> mac_traffic;
  /// noc_down[level][tensor] / noc_up[level][tensor]: for spatial levels,
  /// words their network carries to the children (after multicast) and back
  /// up (after reduction); zero for other levels.
  std::vector<std::vector<double>> noc_down;
  std::vector<std::vector<double>> noc_up;
  /// required_bytes[level]: space the level's tiles need (x2 if double-buffered).
  std::vector<double> required_bytes;
  /// keeps[level][tensor]: the level holds the tensor (Mapping::keeps); a
  /// bypassed tensor has no traffic at the level and crosses from the
  /// nearest keeping level below straight to the nearest one above.
  std::vector<std::vector<char>> keeps;
  /// State of the incremental traffic analysis (TrafficMemo).
  TrafficMemo memo;
};

/// Splits every extent of `parent` into chunks of `chunk`; when `parallel`
/// the chunks run side by side, so for time only the largest counts.
ExtentCounts partition(const ExtentCounts& parent, std::int64_t chunk, bool parallel);
double total_count(const ExtentCounts& counts);

/// Bytes the tiles of data level `level` need, given its span.
double required_bytes(const Operator& op, const Architecture& arch, int level,
                      const std::vector<std::int64_t>& span);

/// Bytes the tiles of the tensors buffer level `level` keeps need (x2 if
/// double-buffered); with `partition` (a partition of the level), only the
/// tensors it holds.
double kept_bytes(const Operator& op, const Architecture& arch, const Mapping& mapping, int level,
                  const std::vector<std::int64_t>& span, const Partition* partition = nullptr);

/// Why buffer level `level` cannot hold its tiles of span `span`: the
/// level, or on a partitioned level the first partition, that overflows
/// (naming the tensors), or nothing.
std::optional<std::string> level_capacity_error(const Operator& op, const Architecture& arch,
                                                const Mapping& mapping, int level,
                                                const std::vector<std::int64_t>& span);

/// Returns the first buffer (or partition) whose tiles do not fit, as a
/// reason, or nothing. Only the tensors a level keeps take its space.
std::optional<std::string> capacity_error(const Operator& op, const Architecture& arch,
                                          const Mapping& mapping);

/// Runs the analysis. The mapping must be structurally valid.
NestAnalysis analyse(const Operator& op, const Architecture& arch, const Mapping& mapping);
/// The same into `out`, reusing its storage: a sweep keeps one per thread.
/// It is analyse_tiling_into followed by analyse_traffic_into.
void analyse_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                  NestAnalysis& out);
/// The part of the analysis that depends only on the tiling (buffer tiles,
/// spatial splits, cluster tiles and splits): span, tiles, time, the tile,
/// cluster and step counts, macs and compute_cycles.
void analyse_tiling_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                         NestAnalysis& out);
/// The rest (traffic, mac_traffic, noc_down, noc_up, required_bytes,
/// keeps), from the loop orders and keep choices, on an `out` whose tiling
/// part was computed for a mapping with the same tiling (same_tiling).
/// The enumeration streams every loop order of one tiling in a row
/// (mapspace.hpp, Cursor), so a sweep redoes only this part for most
/// mappings and gets the same numbers as analyse_into. Called again on the
/// same `out` without a new tiling, it recomputes only the boundaries whose
/// reuse reaches a level whose loop order changed (TrafficMemo): the cursor
/// varies the outermost order fastest, so mostly DRAM's boundaries.
void analyse_traffic_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                          NestAnalysis& out);
/// The same, told what differs from the mapping of the previous call on
/// `out` (a stream's MappingChange with `tiling` false), instead of
/// comparing every level's order and keep choices to find out.
void analyse_traffic_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                          NestAnalysis& out, const MappingChange& change);
/// Whether two mappings of one operator and architecture share the inputs of
/// analyse_tiling_into.
bool same_tiling(const Mapping& a, const Mapping& b);

/// The roofline peak of an operator on an architecture, independent of any
/// mapping: every MAC unit busy every cycle, and every tensor crossing each
/// bandwidth-limited level (DRAM, networks, buffers with a bandwidth)
/// exactly once. No mapping is faster; papers normalise to it (Marvel §6,
/// Fig. 9: "roof-line peak").
struct RooflinePeak {
  double cycles = 0;
  double compute_cycles = 0;
  std::string bound_by;  ///< "compute" or the level name
};
RooflinePeak roofline_peak(const Operator& op, const Architecture& arch);

/// Per-level accounts of an analysis: reads and writes per tensor, the
/// energy they cost at the level's per-word energies (hops for networks),
/// the cycles the level's bandwidth needs (per instance; unlimited gives 0)
/// and the buffer space required. One entry per architecture level.
std::vector<LevelMetrics> level_metrics(const Operator& op, const Architecture& arch,
                                        const NestAnalysis& analysis);
/// Only those two figures per level, into `out` (one entry per level),
/// without assembling per-tensor accounts: the lean path of a sweep.
void level_costs(const Operator& op, const Architecture& arch, const NestAnalysis& analysis,
                 std::vector<LevelCost>& out);

}  // namespace mapex
