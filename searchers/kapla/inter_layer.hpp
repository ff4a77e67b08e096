#pragma once
// KAPLA's inter-layer solver (KAPLA §III-A, §IV-B): segment slicing and
// layer pipelining over regions of the node array, conservative validity
// pruning, lower-bound cost estimates, non-Pareto pruning, and a dynamic
// programme over the layers in topological order keeping the top k_S
// segment chains; the chains kept are then solved layer by layer with the
// intra-layer solver (§IV-C) and the best is returned.

#include <cstdint>
#include <functional>
#include <mapex/schedule.hpp>
#include <optional>
#include <vector>

namespace kapla {

/// What the inter-layer phase needs to know about the chip (§III-C, Fig. 4):
/// the node array (the spatial level between the outermost on-chip buffer
/// and DRAM) and the costs of the levels around it.
struct Chip {
  int node_level = -1;  ///< -1: a single node
  int top_buffer = -1;  ///< the node's global buffer (GBUF)
  int dram = -1;
  int rows = 1;  ///< node rows (first dimension of the node array)
  int cols = 1;  ///< nodes per row (product of the other dimensions)
  std::int64_t gbuf_bytes = 0;
  bool gbuf_double_buffered = false;
  double word_bytes = 1;
  double pes_per_node = 1;
  int macs_per_pe = 1;
  double mac_pj = 0;
  double gbuf_read_pj = 0;
  double gbuf_write_pj = 0;
  double dram_read_pj = 0;
  double dram_write_pj = 0;
  double hop_pj = 0;  ///< per word per hop between nodes
  double dram_bytes_per_cycle = 0;
  double idle_pj_per_cycle = 0;  ///< the whole chip
  /// A segment holding the whole network pins its filters
  /// (ScheduleOptions::filter_pinning, under a model that pins them): its
  /// layers are solved with no_time_mux and its bound reads no weights
  /// from DRAM.
  bool pin_whole_network = false;
  int nodes() const { return rows * cols; }
};

/// Throws InputError when the architecture has no on-chip buffer.
Chip describe_chip(const mapex::Architecture& arch);

/// The chip a layer sees on `region`: the node array cut to the region,
/// `reserved_bytes_per_node` of every GBUF kept for forwarded fmaps, DRAM
/// and node-array bandwidth shared in proportion to the nodes, and the idle
/// energy of its share of the chip (so the intra-layer solver weighs
/// latency against access energy; the schedule's figures charge the chip's
/// idle energy per segment instead). Throws
/// InputError when nothing of the GBUF is left.
mapex::Architecture region_architecture(const mapex::Architecture& arch, const Chip& chip,
                                        const mapex::NodeRegion& region,
                                        std::int64_t reserved_bytes_per_node);

/// What the inter-layer phase needs to know about one layer.
struct LayerFacts {
  double macs = 0;
  /// Samples of the batch (the N loop of conv2d and fc layers and their
  /// gradients); 1 when the layer has no batch.
  std::int64_t batch = 1;
  int first_input = -1;  ///< tensor index of the first input (the fmap)
  std::vector<int> inputs;
  std::vector<double> tensor_words;  ///< per tensor: the elements the loops touch
  int output = 0;                    ///< tensor index of the output
  std::vector<int> producers;
  std::vector<int> consumers;
  /// Calibration of the estimates by the layer's intra-layer solve on the
  /// whole chip (mapex's addition, `ScheduleOptions::calibrate_estimates`):
  /// the energy beyond the estimate that solve needed, idle energy aside,
  /// and its latency. 0 when not calibrated.
  double energy_gap_pj = 0;
  double whole_chip_cycles = 0;
};

std::vector<LayerFacts> layer_facts(const mapex::Network& net);

/// One inter-layer scheme of a segment (§III-A): a band of node rows per
/// layer, in topological order, and what stays on chip.
struct SegmentScheme {
  std::size_t allocation = 0;  ///< index in the order `allocations` enumerates
  std::vector<mapex::NodeRegion> regions;
  std::vector<bool> input_on_chip;
  std::vector<bool> output_on_chip;
  std::vector<std::int64_t> reserved_bytes;  ///< per node, per layer
  std::vector<double> energy_pj;             ///< lower bound per layer
  std::vector<double> latency_cycles;        ///< lower bound per layer
  std::int64_t pipeline_steps = 1;
  double total_energy_pj = 0;  ///< lower bound, idle included
  double total_latency_cycles = 0;
};

struct SegmentOptions {
  /// Valid and (when pruning) Pareto-optimal, best estimate first.
  std::vector<SegmentScheme> schemes;
  mapex::PruningCounts counts;
};

/// The node allocations tried for a segment of `layers` layers (§III-A,
/// layer pipelining): every cut of the node rows into one band per layer,
/// in topological order, each at least one row (so the allocation
/// proportional to the layers' MACs is among them). A single layer gets
/// the whole array; more layers than rows get none.
std::vector<std::vector<mapex::NodeRegion>> allocations(const Chip& chip, int layers);

/// Conservative validity pruning (§IV-B) of one allocation of segment
/// [first, last]: one pipeline step of every fmap forwarded on chip plus
/// the smallest possible tile of every tensor in each node must fit the
/// aggregated GBUF capacity of the layer's region. Returns the GBUF bytes
/// per node each layer keeps for its forwarded fmap, or nothing when the
/// allocation is pruned. Never prunes an allocation for which some
/// intra-layer scheme fits on every region architecture.
std::optional<std::vector<std::int64_t>> reserve_or_prune(
    const Chip& chip, const std::vector<LayerFacts>& facts, int first, int last,
    const std::vector<mapex::NodeRegion>& regions);

/// Enumerates, prunes and estimates the schemes of segment [first, last];
/// without `pareto_prune`, every valid scheme is kept (the exhaustive
/// inter-layer search; `counts.pareto` then counts them all).
SegmentOptions explore_segment(const Chip& chip, const std::vector<LayerFacts>& facts, int first,
                               int last, mapex::Objective objective, bool pareto_prune = true);

/// Whether the exhaustive inter-layer search with `probability` < 1 keeps
/// allocation `index` of segment [first, last] (KAPLA §V's random search R):
/// a deterministic function of the seed, the segment and the index, so the
/// same seed keeps the same allocations at any thread count.
bool keep_allocation(std::uint64_t seed, int first, int last, std::size_t index,
                     double probability);

/// ScheduleOptions::allocation_keep_one: the allocation, of the `count`
/// kept by validity, that segment [first, last] keeps when the draws of
/// keep_allocation keep none; uniform, from a hash of the seed and the
/// segment.
std::size_t fallback_allocation(std::uint64_t seed, int first, int last, std::size_t count);

/// Pipeline latency of layers taking `cycles` each for the whole batch,
/// forwarding one of `steps` equal parts at a time (§III-A 2): the first
/// part passes every layer, the others follow at the pace of the slowest.
double pipeline_latency(const std::vector<double>& cycles, std::int64_t steps);

/// One segment of a chain and the index of its scheme.
struct ChainStep {
  int first = 0;
  int last = 0;
  int scheme = 0;
};
struct Chain {
  double cost = 0;
  std::vector<ChainStep> steps;
};

/// The dynamic programme of §IV-B: layers in topological order; for every
/// layer, the `k_s` cheapest chains of segments ending at it, each segment
/// at most `max_len` layers. `costs(first, last)` gives the estimated cost
/// of each scheme of segment [first, last] (empty when none is valid).
/// Returns up to `k_s` chains covering all layers, cheapest first (ties to
/// the chain found first).
std::vector<Chain> best_chains(int num_layers, int max_len, int k_s,
                               const std::function<std::vector<double>(int, int)>& costs);

/// The whole solver (KAPLA §IV-B then §IV-C).
mapex::NetworkSchedule schedule_network(const mapex::Network& net, const mapex::Architecture& arch,
                                        const mapex::CostModel& model,
                                        const mapex::ScheduleOptions& options);

}  // namespace kapla
