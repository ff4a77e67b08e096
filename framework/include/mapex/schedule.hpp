#pragma once
/// \file
/// Whole-network scheduling (KAPLA §III-A, §IV-B): a network is cut into
/// segments, runs of consecutive layers in topological order that execute
/// together (segment slicing); within a segment every layer gets its own
/// region of the node array and the layers run as a pipeline, forwarding
/// their intermediate fmaps on chip (layer pipelining). Segments time-share
/// the chip one after another.
///
/// How a scheduler reaches the host: a searcher plugin that can schedule
/// whole networks also derives from `NetworkScheduler`; the host finds the
/// capability with `dynamic_cast` on the Searcher it made (as with
/// `mdc::DirectiveEvaluator`). The class is new (no existing type changed)
/// and its key function lives in the core library, so its type_info is
/// shared across the plugin boundary.

#include <boost/config.hpp>
#include <cstdint>
#include <functional>
#include <mapex/architecture.hpp>
#include <mapex/costmodel.hpp>
#include <mapex/network.hpp>
#include <mapex/search.hpp>
#include <string>
#include <vector>

namespace mapex {

/// A rectangle of the node array: rows [row, row + rows) and columns
/// [col, col + cols).
struct NodeRegion {
  int row = 0;
  int col = 0;
  int rows = 1;
  int cols = 1;
  int nodes() const { return rows * cols; }
};

/// Solves one layer on one region's architecture in place of the
/// scheduler's own intra-layer solver. The host makes it from a per-layer
/// searcher plugin (`mapex schedule --intra-searcher`), so that KAPLA's
/// whole-network baselines (§V: exhaustive S, random R) and KAPLA itself
/// share the inter-layer space, the intra-layer mapspace and the model.
/// Called concurrently for different layers: it must be thread-safe.
using IntraLayerSolver = std::function<SearchOutcome(SearchContext&)>;

/// How the inter-layer space is searched.
enum class InterLayerSearch {
  /// KAPLA §IV-B: estimates, non-Pareto pruning, the top-k_S chains solved.
  kPruned,
  /// Every allocation that passes validity pruning, of every segment, is
  /// solved in detail and the exact optimum chain is found (KAPLA §V's
  /// exhaustive S at the inter-layer level). With
  /// `allocation_probability` < 1, each multi-layer allocation is kept
  /// with that probability instead (§V's R: candidates at each level kept
  /// with a probability, segment slicing excepted).
  kExhaustive,
};

struct ScheduleOptions {
  /// Energy or latency; both add up over segments (EDP does not).
  Objective objective = Objective::kEnergy;
  /// Segment chains kept by the dynamic programme (KAPLA §IV-B, default 4).
  int k_s = 4;
  /// Longest segment tried, in layers.
  int max_segment_layers = 4;
  /// Also solve the layer-by-layer chain (every layer alone on the whole
  /// chip) and keep it when it beats the k_S chains: the estimates only
  /// rank, so this guarantees a schedule no worse than going layer by
  /// layer, at the price of one whole-chip solve per layer. Off: the
  /// paper's algorithm alone (as for KAPLA Fig. 11).
  bool layer_by_layer_baseline = true;
  /// With the layer-by-layer chain: solve it first and calibrate the
  /// inter-layer estimates of every layer by its solve on the whole chip
  /// (its energy beyond the bound, its latency scaled to a region's share)
  /// before pruning and ranking (mapex's addition beyond KAPLA §IV-B).
  bool calibrate_estimates = true;
  std::uint64_t seed = 1;
  InterLayerSearch inter_layer = InterLayerSearch::kPruned;
  /// With kExhaustive: the probability of keeping each valid allocation of
  /// a segment of two or more layers (a deterministic function of the
  /// seed, the segment and the allocation). Single-layer segments keep
  /// their one allocation, so a chain always exists.
  double allocation_probability = 1;
  /// With `allocation_probability` < 1: where a multi-layer segment's
  /// draws keep none of its valid allocations, keep one of them, drawn
  /// uniformly from a hash of the seed and the segment (KAPLA's released
  /// random searcher keeps one of a segment's pipelining constraints so,
  /// util.random_collect).
  bool allocation_keep_one = false;
  /// A segment holding the whole network solves its layers on chips with
  /// Architecture::no_time_mux set, as nn_dataflow's PipelineSegment does:
  /// filters kept whole in the GBUFs are pinned there across runs (read by
  /// the nn_dataflow model only). Off: every layer pays its filter reads.
  bool filter_pinning = true;
  /// Empty: the scheduler's own intra-layer solver.
  IntraLayerSolver intra_layer;
  /// Budget of every intra-layer solve (0: unlimited).
  Budget intra_layer_budget;
};

/// Inter-layer schemes of one segment, counted before and after pruning
/// (KAPLA Table VI).
struct PruningCounts {
  std::uint64_t candidates = 0;  ///< node allocations enumerated
  std::uint64_t valid = 0;       ///< left by conservative validity pruning
  std::uint64_t pareto = 0;      ///< left by non-Pareto pruning as well
};

/// One layer of a schedule.
struct LayerPlacement {
  int layer = 0;  ///< index in the network
  std::string name;
  NodeRegion region;
  /// Its first input is forwarded on chip from producers in the segment.
  bool input_on_chip = false;
  /// Every consumer is in the segment: the output never goes to DRAM.
  bool output_on_chip = false;
  /// GBUF bytes per node kept for the forwarded output (one pipeline step).
  std::int64_t reserved_bytes_per_node = 0;
  /// Final figures (intra-layer scheme under the cost model, with on-chip
  /// forwarding accounted, idle energy excluded: it is charged per segment).
  double energy_pj = 0;
  double latency_cycles = 0;
  /// The lower bound the inter-layer phase ranked the scheme by.
  double estimate_energy_pj = 0;
  double estimate_latency_cycles = 0;
  /// The intra-layer scheme, as `Mapping::to_yaml` prints it.
  std::string mapping_yaml;
};

struct SegmentSchedule {
  int first_layer = 0;  ///< index of the first layer
  int last_layer = 0;   ///< index of the last layer (inclusive)
  std::vector<LayerPlacement> layers;
  double energy_pj = 0;  ///< layers, forwarding and the chip's idle energy
  double latency_cycles = 0;
  double estimate_energy_pj = 0;
  double estimate_latency_cycles = 0;
  PruningCounts counts;
};

struct NetworkSchedule {
  bool valid = false;
  std::string invalid_reason;
  std::vector<SegmentSchedule> segments;
  double energy_pj = 0;
  double latency_cycles = 0;
  /// Over every segment the dynamic programme considered.
  PruningCounts counts;
  std::uint64_t segments_considered = 0;
  int chains_evaluated = 0;  ///< chains solved in detail (at most k_S, plus the baseline)
  /// The layer-by-layer chain, when solved (`layer_by_layer_baseline`);
  /// `valid` false when it was not solved or a layer does not fit.
  bool layer_by_layer_valid = false;
  double layer_by_layer_energy_pj = 0;
  double layer_by_layer_latency_cycles = 0;
  /// True when the layer-by-layer chain won over the k_S chains.
  bool layer_by_layer_chosen = false;
  int intra_layer_solves = 0;
  /// Intra-layer solves that ended on their budget (`intra_layer_budget`).
  int intra_layer_solves_cut = 0;
  std::uint64_t evaluations = 0;  ///< cost-model evaluations, all solves
  double seconds = 0;
};

/// A whole-network scheduler. The host makes one through the plugin
/// registry and calls `schedule` from one thread; evaluations may run on
/// the calling thread's TBB arena, and distinct intra-layer solves run in
/// parallel on it.
class BOOST_SYMBOL_VISIBLE NetworkScheduler {
 public:
  virtual ~NetworkScheduler();
  /// Schedules `net` on `arch` under `model`. Returns a schedule with
  /// `valid == false` and a reason when nothing fits; throws InputError on
  /// input it cannot handle (e.g. an unknown objective).
  virtual NetworkSchedule schedule(const Network& net, const Architecture& arch,
                                   const CostModel& model,
                                   const ScheduleOptions& options) const = 0;
};

}  // namespace mapex
