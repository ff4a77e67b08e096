#pragma once
/// \file
// nn_dataflow's search of one layer (stanford-mast/nn_dataflow commit
// 198a527, `Scheduling.schedule_search` without the inter-layer options),
// over exactly its space and scored with mapex::ndf's model:
//
// - partitions of the node array as `partition.gen_partition` yields them
//   under the hybrid / batch / ifmaps partitioning options (and its
//   "guaranteed" naive scheme when none is left);
// - per partition, the row-stationary PE mapping and each of its
//   replication choices (MapStrategyEyeriss.gen_nested_loop_desc);
// - per processing pass, every exact 3-level factorisation of the ifmap,
//   ofmap and batch loops and every pair of loop orders that
//   `loop_blocking.skip_conv` keeps (exhaustive loop blocking), or, with
//   BlockingSolver::kCostDescending, the ones KAPLA's greedy intra-layer
//   solver visits in that same set (KAPLA §IV-C);
// - per pass, the top `ntops` blockings by access cost (then time), and
//   over the layer the top `ntops` schemes by total cost (then time), the
//   earlier one winning ties, as nn_dataflow's stable sorts do.
//
// Per-node results depend on the partition only through the per-node layer
// and the sharing groups, so they are computed once per distinct pair and
// reused across partition orders and input layouts (nn_dataflow caches
// `schedule_search_per_node` the same way).

#include <cstdint>
#include <mapex/nn_dataflow.hpp>
#include <string>
#include <vector>

namespace mapex::ndf {

/// What the search ranks by (nn_dataflow's `--goal`).
enum class Goal { kEnergy, kDelay, kEnergyDelay };

/// How the loop blocking of each processing pass is chosen.
enum class BlockingSolver {
  /// nn_dataflow's: every exact factorisation and every order pair that
  /// skip_conv keeps (KAPLA §V's baseline B).
  kExhaustive,
  /// KAPLA's intra-layer solver (§IV-C, Algorithm 1) over the same
  /// factors and orders: bottom-up, REGF then GBUF, per candidate loop
  /// order a greedy caching pass that enlarges one loop at a time to its
  /// next blocked size, choosing the loop that most reduces the traffic of
  /// the most accessed data category above the level (ties to the second,
  /// then the third), while it fits; the best order per level by the
  /// pass's rank key. Every blocking it scores is one the exhaustive
  /// solver also scores, so per pass it is never better than kExhaustive.
  kCostDescending,
};

/// nn_dataflow's partitioning options and ranking.
struct SearchOptions {
  bool hybrid = false;    ///< --hybrid-partition (else naive: OFMP for conv, OUTP for FC)
  bool batch = false;     ///< --batch-partition
  bool ifmaps = false;    ///< --ifmaps-partition (needs hybrid)
  std::size_t ntops = 1;  ///< --top: schemes kept per pass and per layer (at least 1)
  Goal goal = Goal::kEnergy;
  BlockingSolver blocking = BlockingSolver::kExhaustive;
  /// Stop after scoring this many loop blockings (0: no limit); the
  /// result then holds the best of those scored.
  std::uint64_t max_blockings = 0;
  /// Stop after this much wall time (0: no limit); checked every few
  /// thousand blockings.
  double max_seconds = 0;
  /// KAPLA §V's random search R (after Timeloop's): below 1, each partition
  /// and each loop blocking of the exhaustive enumeration is kept with this
  /// probability and the rest are never scored. Which ones is a hash of
  /// `seed` and their place in the enumeration, so a seed gives the same
  /// result on every run. Exhaustive blocking only.
  double keep_probability = 1;
  /// How R draws a loop blocking: false, one draw per blocking (factors
  /// and orders together); true, one draw per memory level, as a
  /// level-by-level walk of the mapspace tree (KAPLA §V: "evaluates
  /// candidates at each level with a given probability"): the REGF tile,
  /// the GBUF tile with its loop order under it, the DRAM loop order under
  /// that. A blocking is kept when all three draws keep it (about p^3 of
  /// them), and a tile left out drops every blocking under it. The walk
  /// descends only into kept choices: its cost follows what it keeps.
  bool keep_per_memory_level = false;
  /// With one draw per blocking: false, a hash of each blocking's place
  /// decides it, so every blocking of the pass is visited; true, the gap
  /// to the next kept blocking is drawn instead (geometric, from a hash of
  /// the seed, the pass and the last kept place), so the ones between are
  /// passed over without being visited. Each blocking is still kept with
  /// `keep_probability`, independently, but a seed keeps other blockings
  /// than with false.
  bool skip_sampling = false;
  /// How R draws a loop blocking, as KAPLA's released random searcher
  /// (tsinghua-ideal/kapla, random_searcher.py) draws a factorisation and
  /// the tuple of loop orders under it apart, each with its probability:
  /// true, one draw per factorisation of the loops over the blocking
  /// levels, then, under a kept one, one draw per pair of loop orders that
  /// skip_conv keeps (about p^2 of the blockings). Takes precedence over
  /// keep_per_memory_level and skip_sampling.
  bool keep_per_factorization = false;
  /// The partitions' keep probability; below 0, keep_probability.
  double partition_probability = -1;
  /// When a level's draws keep none of its candidates (a pass's
  /// factorisations, a kept factorisation's order pairs, a layer's
  /// partitions; with keep_per_memory_level, a pass's REGF tiles, the GBUF
  /// tiles and orders under a kept REGF tile, the DRAM orders under a kept
  /// GBUF choice), keep one of them, drawn uniformly from a hash of the
  /// seed and the level (KAPLA's released code, util.random_collect).
  bool keep_at_least_one = false;
  std::uint64_t seed = 0;
};

/// The partitions nn_dataflow considers for a layer on `nodes`, in its
/// order. `conv` is false for the network's input layer, whose input
/// channels nn_dataflow does not check against the INPP factor.
std::vector<Partition> gen_partitions(const Layer& layer, const Dim2& nodes,
                                      const SearchOptions& options, bool conv = true);

/// The DRAM layouts nn_dataflow tries for the network input when `layer` is
/// the first layer (NNDataflow._gen_input_layout): each partition of the
/// input over the memory channels, projected onto them.
std::vector<Layout> network_input_layouts(const Layer& layer, const Hardware& hw,
                                          const SearchOptions& options);

/// One scheme found, with its total cost and time under the model.
struct Found {
  Scheme scheme;
  std::size_t layout = 0;  ///< index of the input layout it was scored with
  double cost = 0, time = 0;
};

struct SearchStats {
  std::uint64_t partitions = 0;        ///< partitions generated (over all input layouts once)
  std::uint64_t node_layers = 0;       ///< distinct per-node problems searched
  std::uint64_t pe_refused = 0;        ///< partitions whose PE mapping uses half the array or less
  std::uint64_t blockings = 0;         ///< loop blockings scored
  std::uint64_t fitting = 0;           ///< of them, the ones that fit the buffers
  std::uint64_t rotation_refused = 0;  ///< fit only with GBUF rotation, which the model refuses
  /// Partitions and blockings `keep_probability` left out (with
  /// keep_per_memory_level, those of every pass searched, a limit
  /// notwithstanding).
  std::uint64_t sampled_out = 0;
  std::uint64_t passes = 0;  ///< processing passes searched (over the per-node layers)
  /// With keep_per_factorization: the factorisations of the passes
  /// searched that R drew for, and those it kept.
  std::uint64_t factorizations = 0, factorizations_kept = 0;
};

struct SearchOutput {
  std::vector<Found> tops;  ///< best first, at most `ntops`
  SearchStats stats;
  bool complete = true;  ///< false when a limit stopped the search
};

/// Searches the layer for every input layout in `ifmaps` (a layout whose
/// order starts with -1 stands for "the layer's own partition projected
/// onto memory", as the tensor_centric model's unset `ifmap_layout`), and
/// ranks all schemes found together. Deterministic; single-threaded.
SearchOutput search(const Layer& layer, const Hardware& hw, const Options& options,
                    const std::vector<Layout>& ifmaps, const SearchOptions& search_options);

/// The rank key of a scheme's total cost and time under `goal`; smaller is
/// better, compared lexicographically.
std::pair<double, double> rank_key(Goal goal, double cost, double time);

}  // namespace mapex::ndf
