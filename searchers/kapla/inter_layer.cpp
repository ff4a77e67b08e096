// KAPLA's inter-layer solver (KAPLA §III-A, §IV-B). See inter_layer.hpp and
// README.md ("Inter-layer scheduling") for the model it implements.

#include "inter_layer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mapex/error.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/parallel.hpp>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>

#include "intra_layer.hpp"

namespace kapla {
namespace {

using mapex::LevelKind;
using mapex::NodeRegion;

std::int64_t ceil_div(double bytes, std::int64_t parts) {
  return static_cast<std::int64_t>(std::ceil(bytes / static_cast<double>(parts)));
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

/// All ways to cut `total` rows into `parts` bands of at least one row, in
/// order (the compositions of `total`): the node allocations tried for a
/// segment, including the one proportional to the layers' MACs.
void for_each_composition(int total, int parts,
                          const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> cut(static_cast<size_t>(parts), 1);
  std::function<void(int, int)> rec = [&](int index, int left) {
    if (index == parts - 1) {
      cut[static_cast<size_t>(index)] = left;
      f(cut);
      return;
    }
    const int rest = parts - index - 1;
    for (int r = 1; r <= left - rest; ++r) {
      cut[static_cast<size_t>(index)] = r;
      rec(index + 1, left - r);
    }
  };
  if (parts >= 1 && total >= parts) rec(0, total);
}

/// Elements of tensor `t` the loop nest touches: per subscript, the
/// smaller of its bounding box and the number of index combinations of the
/// loops it uses (a strided 1x1 convolution skips input pixels, which the
/// bounding box counts). The minimum any scheme must move.
double touched_words(const mapex::Operator& op, int t) {
  const auto extents = op.bounds_as_extents();
  double words = 1;
  for (const auto& sub : op.tensors()[static_cast<size_t>(t)].subscripts) {
    double combinations = 1;
    for (const auto& term : sub.terms)
      if (term.coeff != 0)
        combinations *= static_cast<double>(op.dims()[static_cast<size_t>(term.dim)].bound);
    words *= std::min(sub.extent(extents), combinations);
  }
  return words;
}

double row_center(const NodeRegion& r) { return r.row + r.rows / 2.0; }

/// Hops a forwarded word travels between two bands: at least one.
double hops_between(const NodeRegion& a, const NodeRegion& b) {
  return std::max(1.0, std::abs(row_center(a) - row_center(b)));
}

/// Smallest GBUF footprint any intra-layer scheme of the layer can have:
/// one word of every tensor, twice when the buffer is double-buffered.
double min_tile_bytes(const LayerFacts& f, const Chip& chip, bool double_buffered) {
  return static_cast<double>(f.tensor_words.size()) * chip.word_bytes * (double_buffered ? 2 : 1);
}

/// What stays on chip in a segment, independent of the allocation (§III-A 2):
/// a layer's first input when all its producers are in the segment; its
/// output when every consumer reads it on chip. A layer whose output some
/// consumer in the segment reads on chip keeps one pipeline step of it.
struct OnChip {
  std::vector<bool> input;
  std::vector<bool> output;
  std::vector<bool> forwarded;
};

OnChip on_chip_flags(const std::vector<LayerFacts>& facts, int first, int last) {
  const auto in_segment = [&](int x) { return x >= first && x <= last; };
  const int n = last - first + 1;
  OnChip o{std::vector<bool>(static_cast<size_t>(n)), std::vector<bool>(static_cast<size_t>(n)),
           std::vector<bool>(static_cast<size_t>(n))};
  for (int l = first; l <= last && n > 1; ++l) {
    const auto& f = facts[static_cast<size_t>(l)];
    o.input[static_cast<size_t>(l - first)] =
        f.first_input >= 0 && !f.producers.empty() &&
        std::all_of(f.producers.begin(), f.producers.end(), in_segment);
  }
  for (int l = first; l <= last && n > 1; ++l) {
    const auto& f = facts[static_cast<size_t>(l)];
    const auto reads_on_chip = [&](int c) {
      return in_segment(c) && o.input[static_cast<size_t>(c - first)];
    };
    o.forwarded[static_cast<size_t>(l - first)] =
        std::any_of(f.consumers.begin(), f.consumers.end(), reads_on_chip);
    o.output[static_cast<size_t>(l - first)] =
        !f.consumers.empty() && std::all_of(f.consumers.begin(), f.consumers.end(), reads_on_chip);
  }
  return o;
}

/// Samples forwarded one at a time through the pipeline (§III-A 2): the
/// common batch of the segment's layers, 1 when they differ.
std::int64_t pipeline_steps(const std::vector<LayerFacts>& facts, int first, int last) {
  if (first == last) return 1;
  const std::int64_t b = facts[static_cast<size_t>(first)].batch;
  for (int l = first; l <= last; ++l)
    if (facts[static_cast<size_t>(l)].batch != b) return 1;
  return b;
}

/// nn_dataflow's `no_time_mux` (PipelineSegment._alloc_resource): a segment
/// holding every layer of the network, each on its own band, runs the same
/// layers on the same nodes for every input, so a layer's filters kept
/// whole in its GBUFs stay there from one run to the next (filter pinning,
/// Architecture::no_time_mux).
bool whole_network(int first, int last, int num_layers) {
  return first == 0 && last == num_layers - 1;
}

/// Lower-bound energy and latency of one layer of a scheme (§IV-B "fast
/// cost estimation"): every PE of the region busy, every tensor moved
/// once between DRAM (or the producer's GBUF, for an fmap forwarded on
/// chip) and the region, the region's share of the DRAM bandwidth. In a
/// segment holding the whole network with filter pinning, the weights may
/// stay on chip from one run to the next, so the least they cost is nothing.
void estimate_layer(const Chip& chip, const std::vector<LayerFacts>& facts, int first,
                    SegmentScheme& s, int index) {
  const auto i = static_cast<size_t>(index);
  const LayerFacts& f = facts[static_cast<size_t>(first + index)];
  const double nodes = s.regions[i].nodes();
  const double share = nodes / chip.nodes();
  double energy = f.macs * chip.mac_pj;
  double dram_words = 0;
  const bool pinned =
      chip.pin_whole_network && whole_network(first, first + static_cast<int>(s.regions.size()) - 1,
                                              static_cast<int>(facts.size()));
  for (int t : f.inputs) {
    const double w = f.tensor_words[static_cast<size_t>(t)];
    if (pinned && t != f.first_input) continue;
    if (t == f.first_input && s.input_on_chip[i]) {
      double hops = std::numeric_limits<double>::infinity();
      for (int p : f.producers)
        hops =
            std::min(hops, hops_between(s.regions[static_cast<size_t>(p - first)], s.regions[i]));
      energy += w * (chip.gbuf_read_pj + hops * chip.hop_pj);
    } else {
      dram_words += w;
      energy += w * chip.dram_read_pj;
    }
  }
  const double out = f.tensor_words[static_cast<size_t>(f.output)];
  if (s.output_on_chip[i]) {
    energy += out * chip.gbuf_write_pj;
  } else {
    dram_words += out;
    energy += out * chip.dram_write_pj;
  }
  const double compute = f.macs / (nodes * chip.pes_per_node * chip.macs_per_pe);
  const double dram_cycles = chip.dram_bytes_per_cycle > 0 ? dram_words * chip.word_bytes /
                                                                 (chip.dram_bytes_per_cycle * share)
                                                           : 0;
  // Calibrated (when the layer was solved on the whole chip): the energy
  // the solve needed beyond the bound, and its latency scaled to the
  // region's share of the chip, which has that share of every PE, link and
  // the DRAM bandwidth.
  s.energy_pj[i] = energy + f.energy_gap_pj;
  s.latency_cycles[i] =
      std::max({compute, dram_cycles, f.whole_chip_cycles * chip.nodes() / nodes});
}

/// Keeps the schemes no other scheme beats in both estimated energy and
/// latency (§IV-B, non-Pareto pruning), best by the objective first.
std::vector<SegmentScheme> pareto_front(std::vector<SegmentScheme> all,
                                        mapex::Objective objective) {
  std::stable_sort(all.begin(), all.end(), [](const SegmentScheme& a, const SegmentScheme& b) {
    return std::tie(a.total_energy_pj, a.total_latency_cycles) <
           std::tie(b.total_energy_pj, b.total_latency_cycles);
  });
  std::vector<SegmentScheme> front;
  double best_latency = std::numeric_limits<double>::infinity();
  for (auto& s : all)
    if (s.total_latency_cycles < best_latency) {
      best_latency = s.total_latency_cycles;
      front.push_back(std::move(s));
    }
  if (objective == mapex::Objective::kLatency) std::reverse(front.begin(), front.end());
  return front;
}

double estimate_value(const SegmentScheme& s, mapex::Objective objective) {
  return objective == mapex::Objective::kLatency ? s.total_latency_cycles : s.total_energy_pj;
}

}  // namespace

Chip describe_chip(const mapex::Architecture& arch) {
  Chip chip;
  const auto& levels = arch.levels();
  for (int i = 0; i < arch.num_levels(); ++i) {
    const auto& level = levels[static_cast<size_t>(i)];
    if (level.kind == LevelKind::kBuffer) chip.top_buffer = i;
    if (level.kind == LevelKind::kDram) chip.dram = i;
  }
  if (chip.top_buffer < 0 || chip.dram < 0)
    throw mapex::InputError("architecture '" + arch.name() +
                            "': inter-layer scheduling needs an on-chip buffer and DRAM");
  for (int i = chip.top_buffer + 1; i < chip.dram; ++i)
    if (levels[static_cast<size_t>(i)].kind == LevelKind::kSpatial) {
      chip.node_level = i;
      break;
    }
  if (chip.node_level >= 0) {
    const auto& shape = levels[static_cast<size_t>(chip.node_level)].shape;
    chip.rows = static_cast<int>(shape.front());
    chip.cols =
        static_cast<int>(levels[static_cast<size_t>(chip.node_level)].fanout() / shape.front());
    chip.hop_pj = levels[static_cast<size_t>(chip.node_level)].noc.hop_energy_pj;
  }
  const auto& gbuf = levels[static_cast<size_t>(chip.top_buffer)];
  const auto& dram = levels[static_cast<size_t>(chip.dram)];
  chip.gbuf_bytes = gbuf.size_bytes;
  chip.gbuf_double_buffered = gbuf.double_buffered;
  chip.word_bytes = arch.word_bytes();
  chip.pes_per_node = static_cast<double>(arch.num_pes()) / chip.nodes();
  chip.macs_per_pe = arch.macs_per_pe();
  chip.mac_pj = arch.mac_energy_pj();
  chip.gbuf_read_pj = gbuf.read_energy_pj;
  chip.gbuf_write_pj = gbuf.write_energy_pj;
  chip.dram_read_pj = dram.read_energy_pj;
  chip.dram_write_pj = dram.write_energy_pj;
  chip.dram_bytes_per_cycle = dram.bandwidth_gbps ? arch.bytes_per_cycle(*dram.bandwidth_gbps) : 0;
  for (const auto& level : levels) chip.idle_pj_per_cycle += level.idle_energy_pj_per_cycle;
  return chip;
}

mapex::Architecture region_architecture(const mapex::Architecture& arch, const Chip& chip,
                                        const NodeRegion& region,
                                        std::int64_t reserved_bytes_per_node) {
  std::vector<mapex::Level> levels = arch.levels();
  const double share = static_cast<double>(region.nodes()) / chip.nodes();
  // The idle energy of the region's share of the chip (§IV-A counts idle
  // energy in a scheme's cost): the intra-layer solver then weighs a
  // faster scheme's saving in idle energy, exactly so for a layer alone on
  // the chip. The figures of the segment charge the chip's idle energy over
  // its pipeline latency instead (adjust_for_forwarding drops this share).
  for (auto& level : levels) level.idle_energy_pj_per_cycle *= share;
  if (chip.node_level >= 0) {
    auto& nodes = levels[static_cast<size_t>(chip.node_level)];
    nodes.shape = nodes.shape.size() == 1 ? std::vector<std::int64_t>{region.rows}
                                          : std::vector<std::int64_t>{region.rows, region.cols};
    nodes.noc.bandwidth_gbps *= share;
  }
  auto& gbuf = levels[static_cast<size_t>(chip.top_buffer)];
  if (reserved_bytes_per_node >= gbuf.size_bytes)
    throw mapex::InputError("region of " + std::to_string(region.nodes()) +
                            " nodes: " + std::to_string(reserved_bytes_per_node) +
                            " B of forwarded fmap per node leave nothing of " + gbuf.name);
  gbuf.size_bytes -= reserved_bytes_per_node;
  auto& dram = levels[static_cast<size_t>(chip.dram)];
  if (dram.bandwidth_gbps) *dram.bandwidth_gbps *= share;
  return mapex::Architecture::make(
      arch.name() + "[" + std::to_string(region.rows) + "x" + std::to_string(region.cols) + "]",
      arch.clock_mhz(), arch.word_bits(), arch.mac_energy_pj(), arch.macs_per_pe(),
      std::move(levels), arch.word_widths());
}

std::vector<LayerFacts> layer_facts(const mapex::Network& net) {
  std::vector<LayerFacts> facts(net.layers().size());
  for (size_t l = 0; l < facts.size(); ++l) {
    const auto& layer = net.layers()[l];
    const auto& op = layer.op;
    LayerFacts& f = facts[l];
    f.macs = static_cast<double>(op.macs());
    const mapex::DimId n = op.find_dim("N");
    if ((starts_with(op.kind(), "conv2d") || starts_with(op.kind(), "fc")) && n >= 0)
      f.batch = op.dims()[static_cast<size_t>(n)].bound;
    for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
      f.tensor_words.push_back(touched_words(op, t));
      if (op.tensors()[static_cast<size_t>(t)].role == mapex::TensorRole::kInput)
        f.inputs.push_back(t);
      else
        f.output = t;
    }
    if (!f.inputs.empty()) f.first_input = f.inputs.front();
    f.producers = layer.producers;
    for (int p : layer.producers) {
      auto& c = facts[static_cast<size_t>(p)].consumers;
      if (std::find(c.begin(), c.end(), static_cast<int>(l)) == c.end())
        c.push_back(static_cast<int>(l));
    }
  }
  return facts;
}

double pipeline_latency(const std::vector<double>& cycles, std::int64_t steps) {
  const double sum = std::accumulate(cycles.begin(), cycles.end(), 0.0);
  const double slowest = cycles.empty() ? 0 : *std::max_element(cycles.begin(), cycles.end());
  const double k = static_cast<double>(std::max<std::int64_t>(steps, 1));
  return sum / k + (k - 1) / k * slowest;
}

std::vector<std::vector<NodeRegion>> allocations(const Chip& chip, int layers) {
  std::vector<std::vector<NodeRegion>> out;
  if (layers == 1) {
    out.push_back({NodeRegion{0, 0, chip.rows, chip.cols}});
    return out;
  }
  for_each_composition(chip.rows, layers, [&](const std::vector<int>& rows) {
    std::vector<NodeRegion> regions;
    int row = 0;
    for (int r : rows) {
      regions.push_back(NodeRegion{row, 0, r, chip.cols});
      row += r;
    }
    out.push_back(std::move(regions));
  });
  return out;
}

std::optional<std::vector<std::int64_t>> reserve_or_prune(const Chip& chip,
                                                          const std::vector<LayerFacts>& facts,
                                                          int first, int last,
                                                          const std::vector<NodeRegion>& regions) {
  // The final check (ceil per node + the scheme's tiles <= GBUF) is never
  // looser than this aggregate one, so nothing pruned here could fit.
  const OnChip on_chip = on_chip_flags(facts, first, last);
  const std::int64_t steps = pipeline_steps(facts, first, last);
  std::vector<std::int64_t> reserved;
  for (int l = first; l <= last; ++l) {
    const auto i = static_cast<size_t>(l - first);
    const auto& f = facts[static_cast<size_t>(l)];
    const std::int64_t nodes = regions[i].nodes();
    const double forwarded = on_chip.forwarded[i] ? f.tensor_words[static_cast<size_t>(f.output)] /
                                                        static_cast<double>(steps) * chip.word_bytes
                                                  : 0;
    const double need =
        forwarded + static_cast<double>(nodes) * min_tile_bytes(f, chip, chip.gbuf_double_buffered);
    if (need > static_cast<double>(nodes * chip.gbuf_bytes)) return std::nullopt;
    reserved.push_back(ceil_div(forwarded, nodes));
  }
  return reserved;
}

SegmentOptions explore_segment(const Chip& chip, const std::vector<LayerFacts>& facts, int first,
                               int last, mapex::Objective objective, bool pareto_prune) {
  SegmentOptions out;
  const int n = last - first + 1;
  const OnChip on_chip = on_chip_flags(facts, first, last);
  const std::int64_t steps = pipeline_steps(facts, first, last);
  std::vector<SegmentScheme> valid;
  for (auto& regions : allocations(chip, n)) {
    const std::size_t allocation = out.counts.candidates;
    ++out.counts.candidates;
    auto reserved = reserve_or_prune(chip, facts, first, last, regions);
    if (!reserved) continue;
    ++out.counts.valid;
    SegmentScheme s;
    s.allocation = allocation;
    s.regions = std::move(regions);
    s.reserved_bytes = std::move(*reserved);
    s.input_on_chip = on_chip.input;
    s.output_on_chip = on_chip.output;
    s.pipeline_steps = steps;
    s.energy_pj.resize(static_cast<size_t>(n));
    s.latency_cycles.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) estimate_layer(chip, facts, first, s, i);
    s.total_latency_cycles = pipeline_latency(s.latency_cycles, steps);
    s.total_energy_pj = std::accumulate(s.energy_pj.begin(), s.energy_pj.end(), 0.0) +
                        chip.idle_pj_per_cycle * s.total_latency_cycles;
    valid.push_back(std::move(s));
  }
  if (pareto_prune) {
    out.schemes = pareto_front(std::move(valid), objective);
  } else {
    std::stable_sort(valid.begin(), valid.end(), [&](const auto& a, const auto& b) {
      return estimate_value(a, objective) < estimate_value(b, objective);
    });
    out.schemes = std::move(valid);
  }
  out.counts.pareto = out.schemes.size();
  return out;
}

namespace {

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// splitmix64 over the seed and a segment's coordinates.
std::uint64_t segment_hash(std::uint64_t seed, int first, int last) {
  std::uint64_t h = splitmix64(seed);
  for (std::uint64_t part : {static_cast<std::uint64_t>(first), static_cast<std::uint64_t>(last)})
    h = splitmix64(h ^ part);
  return h;
}

}  // namespace

bool keep_allocation(std::uint64_t seed, int first, int last, std::size_t index,
                     double probability) {
  if (probability >= 1) return true;
  // splitmix64 over the seed and the allocation's coordinates: uniform,
  // independent per allocation, and the same on every run and thread count.
  const std::uint64_t h =
      splitmix64(segment_hash(seed, first, last) ^ static_cast<std::uint64_t>(index));
  return static_cast<double>(h >> 11) * 0x1.0p-53 < probability;
}

std::size_t fallback_allocation(std::uint64_t seed, int first, int last, std::size_t count) {
  // Another stream than keep_allocation's draws (which hash an index, not
  // a constant, after the segment).
  const std::uint64_t h = splitmix64(splitmix64(segment_hash(seed, first, last)) ^ 0x6b31);
  return static_cast<std::size_t>(h % static_cast<std::uint64_t>(count));
}

std::vector<Chain> best_chains(int num_layers, int max_len, int k_s,
                               const std::function<std::vector<double>(int, int)>& costs) {
  // entries[j]: the k_s cheapest chains covering layers [0, j), each as
  // (cost, previous end, rank there, step).
  struct Entry {
    double cost;
    int prev_end;
    int prev_rank;
    ChainStep step;
  };
  std::vector<std::vector<Entry>> entries(static_cast<size_t>(num_layers) + 1);
  entries[0].push_back(Entry{0, -1, -1, {}});
  for (int end = 1; end <= num_layers; ++end) {
    std::vector<Entry> cands;
    for (int len = 1; len <= std::min(max_len, end); ++len) {
      const int begin = end - len;
      const auto& before = entries[static_cast<size_t>(begin)];
      if (before.empty()) continue;
      const auto scheme_costs = costs(begin, end - 1);
      for (int r = 0; r < static_cast<int>(before.size()); ++r)
        for (int s = 0; s < static_cast<int>(scheme_costs.size()); ++s)
          cands.push_back(
              Entry{before[static_cast<size_t>(r)].cost + scheme_costs[static_cast<size_t>(s)],
                    begin, r, ChainStep{begin, end - 1, s}});
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Entry& a, const Entry& b) { return a.cost < b.cost; });
    if (static_cast<int>(cands.size()) > k_s) cands.resize(static_cast<size_t>(k_s));
    entries[static_cast<size_t>(end)] = std::move(cands);
  }
  std::vector<Chain> out;
  const auto& last = entries[static_cast<size_t>(num_layers)];
  for (int r = 0; r < static_cast<int>(last.size()); ++r) {
    Chain chain{last[static_cast<size_t>(r)].cost, {}};
    for (int end = num_layers, rank = r; end > 0;) {
      const Entry& e = entries[static_cast<size_t>(end)][static_cast<size_t>(rank)];
      chain.steps.push_back(e.step);
      end = e.prev_end;
      rank = e.prev_rank;
    }
    std::reverse(chain.steps.begin(), chain.steps.end());
    out.push_back(std::move(chain));
  }
  return out;
}

namespace {

/// One layer solved on one region (§IV-C), before on-chip adjustments.
struct LayerSolve {
  bool valid = false;
  std::string reason;
  mapex::Metrics metrics;
  std::string mapping_yaml;
  std::uint64_t evaluations = 0;
  bool cut = false;  ///< the solve ended on its budget
};

/// What an intra-layer solve depends on: the layer, its region's shape,
/// the GBUF bytes per node kept for a forwarded fmap, and whether the
/// segment holds the whole network (no time multiplexing).
using SolveKey = std::tuple<int, int, int, std::int64_t, bool>;

/// Solves the layers of the segments considered, each (layer, region
/// shape, reserved bytes) once.
class FinalPhase {
 public:
  FinalPhase(const mapex::Network& net, const mapex::Architecture& arch, const Chip& chip,
             const std::vector<LayerFacts>& facts, const mapex::CostModel& model,
             const mapex::ScheduleOptions& options)
      : net_(net), arch_(arch), chip_(chip), facts_(facts), model_(model), options_(options) {}

  /// The solves segment [first, last] under scheme `s` needs.
  void add_keys(const SegmentScheme& s, int first, int last, std::vector<SolveKey>& keys) const {
    const bool pinned = pins(first, last);
    for (int l = first; l <= last; ++l) {
      const auto i = static_cast<size_t>(l - first);
      keys.emplace_back(l, s.regions[i].rows, s.regions[i].cols, s.reserved_bytes[i], pinned);
    }
  }

  int num_layers() const { return static_cast<int>(net_.layers().size()); }
  /// Whether segment [first, last] solves its layers with no_time_mux:
  /// filter pinning on, under a model that reads the flag, and the segment
  /// holding the whole network.
  bool pins(int first, int last) const {
    return chip_.pin_whole_network && whole_network(first, last, num_layers());
  }

  /// Runs the solves of `keys` not done yet, in parallel. Each solve is
  /// independent of the others and deterministic, so the results do not
  /// depend on the number of threads; the longest solves dominate, hence
  /// one solve per task.
  void solve_all(std::vector<SolveKey> keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::erase_if(keys, [&](const SolveKey& k) { return memo_.count(k) > 0; });
    std::vector<LayerSolve> solved(keys.size());
    mapex::parallel_for_each(keys.size(), [&](size_t i) { solved[i] = solve_one(keys[i]); });
    for (size_t i = 0; i < keys.size(); ++i) remember(keys[i], std::move(solved[i]));
  }

  /// The segment's final figures, or nothing when a layer has no valid
  /// intra-layer scheme (the reason is kept in `last_reason`).
  std::optional<mapex::SegmentSchedule> segment(const SegmentScheme& s, int first, int last) {
    mapex::SegmentSchedule seg;
    seg.first_layer = first;
    seg.last_layer = last;
    seg.estimate_energy_pj = s.total_energy_pj;
    seg.estimate_latency_cycles = s.total_latency_cycles;
    std::vector<double> cycles;
    for (int l = first; l <= last; ++l) {
      const auto i = static_cast<size_t>(l - first);
      const NodeRegion& region = s.regions[i];
      const LayerSolve& solved =
          solve(SolveKey{l, region.rows, region.cols, s.reserved_bytes[i], pins(first, last)});
      if (!solved.valid) {
        last_reason = "layer '" + net_.layers()[static_cast<size_t>(l)].op.name() + "' on " +
                      std::to_string(region.rows) + "x" + std::to_string(region.cols) +
                      " nodes: " + solved.reason;
        return std::nullopt;
      }
      mapex::LayerPlacement p;
      p.layer = l;
      p.name = net_.layers()[static_cast<size_t>(l)].op.name();
      p.region = region;
      p.input_on_chip = s.input_on_chip[i];
      p.output_on_chip = s.output_on_chip[i];
      p.reserved_bytes_per_node = s.reserved_bytes[i];
      p.estimate_energy_pj = s.energy_pj[i];
      p.estimate_latency_cycles = s.latency_cycles[i];
      p.mapping_yaml = solved.mapping_yaml;
      adjust_for_forwarding(solved.metrics, s, first, l, p);
      cycles.push_back(p.latency_cycles);
      seg.energy_pj += p.energy_pj;
      seg.layers.push_back(std::move(p));
    }
    seg.latency_cycles = pipeline_latency(cycles, s.pipeline_steps);
    seg.energy_pj += chip_.idle_pj_per_cycle * seg.latency_cycles;
    return seg;
  }

  /// A solve already done, or nullptr.
  const LayerSolve* find(const SolveKey& key) const {
    const auto it = memo_.find(key);
    return it == memo_.end() ? nullptr : &it->second;
  }

  std::string last_reason;
  int solves() const { return static_cast<int>(memo_.size()); }
  int solves_cut() const { return cut_; }
  std::uint64_t evaluations() const { return evaluations_; }

 private:
  const mapex::Network& net_;
  const mapex::Architecture& arch_;
  const Chip& chip_;
  const std::vector<LayerFacts>& facts_;
  const mapex::CostModel& model_;
  const mapex::ScheduleOptions& options_;
  std::map<SolveKey, LayerSolve> memo_;
  std::uint64_t evaluations_ = 0;
  int cut_ = 0;

  const LayerSolve& remember(const SolveKey& key, LayerSolve solved) {
    evaluations_ += solved.evaluations;
    cut_ += solved.cut ? 1 : 0;
    return memo_.emplace(key, std::move(solved)).first->second;
  }

  const LayerSolve& solve(const SolveKey& key) {
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    return remember(key, solve_one(key));
  }

  /// One intra-layer solve on the region's architecture, by the options'
  /// solver or KAPLA's own (§IV-C). Reads only shared constant state.
  LayerSolve solve_one(const SolveKey& key) const {
    const auto [layer, rows, cols, reserved, pinned] = key;
    LayerSolve out;
    const auto& op = net_.layers()[static_cast<size_t>(layer)].op;
    const mapex::Architecture sub =
        region_architecture(arch_, chip_, NodeRegion{0, 0, rows, cols}, reserved)
            .with_no_time_mux(pinned);
    const auto bound = model_.bind(op, sub);
    const mapex::Mapspace space(op, sub);
    mapex::SearchContext ctx(op, sub, space, *bound, options_.objective, options_.seed,
                             options_.intra_layer_budget);
    const auto outcome = options_.intra_layer ? options_.intra_layer(ctx) : solve_intra_layer(ctx);
    out.evaluations = ctx.evaluations();
    out.cut = outcome.stop_reason.starts_with("budget") || ctx.exhausted();
    if (ctx.best_mapping()) {
      out.metrics = bound->evaluate(*ctx.best_mapping());
      out.valid = out.metrics.valid;
      out.reason = out.metrics.invalid_reason;
      out.mapping_yaml = ctx.best_mapping()->to_yaml(op, sub);
    } else {
      out.reason = outcome.stop_reason;
    }
    return out;
  }

  /// The intra-layer figures with the segment's on-chip forwarding (§III-A
  /// 2): DRAM accesses of a forwarded fmap become GBUF accesses in the
  /// producer's region plus the hops between the regions; the DRAM time
  /// shrinks with its traffic.
  void adjust_for_forwarding(const mapex::Metrics& m, const SegmentScheme& s, int first, int l,
                             mapex::LayerPlacement& p) const {
    const LayerFacts& f = facts_[static_cast<size_t>(l)];
    const auto& op = net_.layers()[static_cast<size_t>(l)].op;
    const std::string& dram_name = arch_.levels()[static_cast<size_t>(chip_.dram)].name;
    double energy = m.energy_pj;
    for (const auto& [part, pj] : m.energy_breakdown_pj)
      if (part == "idle") energy -= pj;  // charged per segment
    double dram_words = 0;
    double dram_words_kept = 0;
    double dram_cycles = 0;
    double other_cycles = m.compute_cycles;
    for (const auto& level : m.levels) {
      if (level.level != dram_name) {
        other_cycles = std::max(other_cycles, level.transfer_cycles);
        continue;
      }
      dram_cycles = level.transfer_cycles;
      for (const auto& t : level.tensors) {
        dram_words += t.reads + t.writes;
        const bool fmap_in = p.input_on_chip && f.first_input >= 0 &&
                             t.tensor == op.tensors()[static_cast<size_t>(f.first_input)].name;
        const bool fmap_out = p.output_on_chip && t.tensor == op.output().name;
        if (fmap_in) {
          double hops = std::numeric_limits<double>::infinity();
          for (int q : f.producers)
            hops =
                std::min(hops, hops_between(s.regions[static_cast<size_t>(q - first)], p.region));
          energy += t.reads * (chip_.gbuf_read_pj + hops * chip_.hop_pj - chip_.dram_read_pj);
        } else if (fmap_out) {
          energy += t.reads * (chip_.gbuf_read_pj - chip_.dram_read_pj) +
                    t.writes * (chip_.gbuf_write_pj - chip_.dram_write_pj);
        } else {
          dram_words_kept += t.reads + t.writes;
        }
      }
    }
    const double kept = dram_words > 0 ? dram_words_kept / dram_words : 0;
    p.energy_pj = energy;
    p.latency_cycles = std::max(other_cycles, dram_cycles * kept);
  }
};

/// A chain solved in detail.
struct SolvedChain {
  std::vector<mapex::SegmentSchedule> segments;
  double energy_pj = 0;
  double latency_cycles = 0;
};

using SegmentTable = std::map<std::pair<int, int>, SegmentOptions>;

/// Solves every segment of `chain` (§IV-C); nothing when a layer has no
/// valid intra-layer scheme on its region.
std::optional<SolvedChain> solve_chain(FinalPhase& final_phase, const SegmentTable& segments,
                                       const Chain& chain) {
  SolvedChain out;
  for (const ChainStep& step : chain.steps) {
    const SegmentOptions& opts = segments.at({step.first, step.last});
    if (opts.schemes.empty()) return std::nullopt;
    auto seg =
        final_phase.segment(opts.schemes[static_cast<size_t>(step.scheme)], step.first, step.last);
    if (!seg) return std::nullopt;
    seg->counts = opts.counts;
    out.energy_pj += seg->energy_pj;
    out.latency_cycles += seg->latency_cycles;
    out.segments.push_back(std::move(*seg));
  }
  return out;
}

}  // namespace

namespace {

/// Calibrates the estimates of every layer by its intra-layer solve on the
/// whole chip, which the layer-by-layer chain needs anyway (mapex's
/// addition beyond §IV-B). The analytical bound assumes every PE busy and
/// every tensor fetched once; the layers where it is furthest off (depthwise
/// convolutions, layers bound by DRAM) are exactly those whose narrow bands
/// it then favours, and the chip's idle energy over the latency it
/// underestimates can outweigh what forwarding saves.
void calibrate(const Chip& chip, std::vector<LayerFacts>& facts, FinalPhase& final_phase,
               mapex::Objective objective) {
  const int num_layers = static_cast<int>(facts.size());
  std::vector<SolveKey> keys;
  for (int l = 0; l < num_layers; ++l)
    keys.emplace_back(l, chip.rows, chip.cols, 0, final_phase.pins(l, l));
  final_phase.solve_all(keys);
  for (int l = 0; l < num_layers; ++l) {
    const LayerSolve* solved = final_phase.find(keys[static_cast<size_t>(l)]);
    const auto alone = explore_segment(chip, facts, l, l, objective);
    if (!solved || !solved->valid || alone.schemes.empty()) continue;
    double dynamic = solved->metrics.energy_pj;
    for (const auto& [part, pj] : solved->metrics.energy_breakdown_pj)
      if (part == "idle") dynamic -= pj;
    auto& f = facts[static_cast<size_t>(l)];
    f.energy_gap_pj = std::max(0.0, dynamic - alone.schemes.front().energy_pj.front());
    f.whole_chip_cycles = solved->metrics.latency_cycles;
  }
}

/// KAPLA's own inter-layer search (§IV-B): the top-k_S chains by the
/// estimates are solved in detail (and the layer-by-layer chain, when
/// asked), the best by the objective wins.
void choose_pruned(const mapex::ScheduleOptions& options, int num_layers,
                   const SegmentTable& segments, FinalPhase& final_phase,
                   mapex::NetworkSchedule& result) {
  const auto chains =
      best_chains(num_layers, options.max_segment_layers, options.k_s, [&](int first, int last) {
        std::vector<double> costs;
        for (const auto& s : segments.at({first, last}).schemes)
          costs.push_back(estimate_value(s, options.objective));
        return costs;
      });
  Chain layer_by_layer;
  for (int l = 0; l < num_layers; ++l) layer_by_layer.steps.push_back(ChainStep{l, l, 0});

  // Every solve the chains need, run in parallel before they are put together.
  std::vector<SolveKey> keys;
  const auto add_chain = [&](const Chain& chain) {
    for (const ChainStep& step : chain.steps) {
      const auto& schemes = segments.at({step.first, step.last}).schemes;
      if (!schemes.empty())
        final_phase.add_keys(schemes[static_cast<size_t>(step.scheme)], step.first, step.last,
                             keys);
    }
  };
  for (const Chain& chain : chains) add_chain(chain);
  if (options.layer_by_layer_baseline) add_chain(layer_by_layer);
  final_phase.solve_all(std::move(keys));

  double best_value = std::numeric_limits<double>::infinity();
  const auto keep_if_better = [&](SolvedChain& c) {
    const double value =
        options.objective == mapex::Objective::kLatency ? c.latency_cycles : c.energy_pj;
    if (value >= best_value) return false;
    best_value = value;
    result.valid = true;
    result.segments = std::move(c.segments);
    result.energy_pj = c.energy_pj;
    result.latency_cycles = c.latency_cycles;
    return true;
  };
  for (const Chain& chain : chains) {
    ++result.chains_evaluated;
    if (auto solved = solve_chain(final_phase, segments, chain)) keep_if_better(*solved);
  }
  if (options.layer_by_layer_baseline) {
    const bool kept_already = std::any_of(chains.begin(), chains.end(), [&](const Chain& c) {
      return c.steps.size() == layer_by_layer.steps.size();
    });
    if (!kept_already) ++result.chains_evaluated;
    if (auto solved = solve_chain(final_phase, segments, layer_by_layer)) {
      result.layer_by_layer_valid = true;
      result.layer_by_layer_energy_pj = solved->energy_pj;
      result.layer_by_layer_latency_cycles = solved->latency_cycles;
      result.layer_by_layer_chosen = keep_if_better(*solved) && !kept_already;
    }
  }
  if (!result.valid)
    result.invalid_reason =
        chains.empty() ? "no segment chain passes the validity pruning"
                       : "none of the " + std::to_string(chains.size()) +
                             " segment chains kept has a valid intra-layer scheme for every "
                             "layer; last failure: " +
                             final_phase.last_reason;
}

/// The exhaustive inter-layer search (KAPLA §V's S; R with an allocation
/// probability below 1): every scheme kept is solved in detail, and since
/// segments run one after another and their costs add up, a dynamic
/// programme over the exact segment costs (k = 1) finds the optimum chain
/// of the schemes kept.
void choose_exhaustive(const mapex::ScheduleOptions& options, int num_layers,
                       const SegmentTable& segments, FinalPhase& final_phase,
                       mapex::NetworkSchedule& result) {
  std::vector<SolveKey> keys;
  for (const auto& [range, opts] : segments)
    for (const auto& scheme : opts.schemes)
      final_phase.add_keys(scheme, range.first, range.second, keys);
  final_phase.solve_all(std::move(keys));

  // Exact cost of every scheme (+infinity when a layer has no valid scheme).
  std::map<std::pair<int, int>, std::vector<double>> exact;
  for (const auto& [range, opts] : segments) {
    auto& costs = exact[range];
    for (const auto& scheme : opts.schemes) {
      const auto seg = final_phase.segment(scheme, range.first, range.second);
      costs.push_back(!seg ? std::numeric_limits<double>::infinity()
                      : options.objective == mapex::Objective::kLatency ? seg->latency_cycles
                                                                        : seg->energy_pj);
    }
  }
  const auto chains =
      best_chains(num_layers, options.max_segment_layers, 1, [&](int first, int last) {
        return exact.at({first, last});
      });
  result.chains_evaluated = 1;
  if (!chains.empty() && std::isfinite(chains.front().cost))
    if (auto solved = solve_chain(final_phase, segments, chains.front())) {
      result.valid = true;
      result.segments = std::move(solved->segments);
      result.energy_pj = solved->energy_pj;
      result.latency_cycles = solved->latency_cycles;
    }
  // The layer-by-layer chain is among the chains searched: report it too.
  double lbl_energy = 0, lbl_latency = 0;
  bool lbl_valid = true;
  for (int l = 0; l < num_layers && lbl_valid; ++l) {
    const auto& schemes = segments.at({l, l}).schemes;
    const auto seg = schemes.empty() ? std::nullopt : final_phase.segment(schemes.front(), l, l);
    lbl_valid = seg.has_value();
    if (seg) {
      lbl_energy += seg->energy_pj;
      lbl_latency += seg->latency_cycles;
    }
  }
  result.layer_by_layer_valid = lbl_valid;
  if (lbl_valid) {
    result.layer_by_layer_energy_pj = lbl_energy;
    result.layer_by_layer_latency_cycles = lbl_latency;
    result.layer_by_layer_chosen =
        result.valid && result.segments.size() == static_cast<size_t>(num_layers);
  }
  if (!result.valid)
    result.invalid_reason =
        "no chain of the segment schemes kept has a valid intra-layer scheme for every layer; "
        "last failure: " +
        final_phase.last_reason;
}

}  // namespace

mapex::NetworkSchedule schedule_network(const mapex::Network& net, const mapex::Architecture& arch,
                                        const mapex::CostModel& model,
                                        const mapex::ScheduleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (options.objective == mapex::Objective::kEdp)
    throw mapex::InputError(
        "whole-network scheduling minimises energy or latency (both add up over segments; "
        "EDP does not)");
  if (options.k_s < 1) throw mapex::InputError("k_S must be at least 1");
  if (options.max_segment_layers < 1)
    throw mapex::InputError("the longest segment must have at least one layer");
  if (!(options.allocation_probability > 0 && options.allocation_probability <= 1))
    throw mapex::InputError("the allocation probability must be in (0, 1]");
  if (net.layers().empty()) throw mapex::InputError("network '" + net.name() + "' has no layers");

  // The segment estimates (§V) count buffers and DRAM traffic in words of one size.
  for (const auto& layer : net.layers())
    mapex::require_uniform_word_bits(layer.op, arch, "the inter-layer scheduler (KAPLA §V)");
  Chip chip = describe_chip(arch);
  chip.pin_whole_network = options.filter_pinning && model.pins_on_no_time_mux();
  std::vector<LayerFacts> facts = layer_facts(net);
  const int num_layers = static_cast<int>(facts.size());
  const bool exhaustive = options.inter_layer == mapex::InterLayerSearch::kExhaustive;
  mapex::NetworkSchedule result;
  FinalPhase final_phase(net, arch, chip, facts, model, options);
  if (!exhaustive && options.layer_by_layer_baseline && options.calibrate_estimates)
    calibrate(chip, facts, final_phase, options.objective);

  // Inter-layer phase (§IV-B): every segment up to the longest allowed,
  // enumerated, pruned and estimated once. The exhaustive search keeps
  // every valid scheme (or, for R, a random share of the multi-layer ones).
  SegmentTable segments;
  for (int last = 0; last < num_layers; ++last)
    for (int first = last; first >= 0 && last - first < options.max_segment_layers; --first) {
      auto explored = explore_segment(chip, facts, first, last, options.objective, !exhaustive);
      if (exhaustive && first < last) {
        const std::size_t valid = explored.schemes.size();
        std::optional<SegmentScheme> fallback;
        if (options.allocation_keep_one && options.allocation_probability < 1 && valid > 0)
          fallback = explored.schemes[fallback_allocation(options.seed, first, last, valid)];
        std::erase_if(explored.schemes, [&](const SegmentScheme& s) {
          return !keep_allocation(options.seed, first, last, s.allocation,
                                  options.allocation_probability);
        });
        if (explored.schemes.empty() && fallback) explored.schemes.push_back(std::move(*fallback));
        explored.counts.pareto = explored.schemes.size();
      }
      result.counts.candidates += explored.counts.candidates;
      result.counts.valid += explored.counts.valid;
      result.counts.pareto += explored.counts.pareto;
      ++result.segments_considered;
      segments.emplace(std::make_pair(first, last), std::move(explored));
    }

  // Intra-layer phase (§IV-C).
  if (exhaustive)
    choose_exhaustive(options, num_layers, segments, final_phase, result);
  else
    choose_pruned(options, num_layers, segments, final_phase, result);
  result.intra_layer_solves = final_phase.solves();
  result.intra_layer_solves_cut = final_phase.solves_cut();
  result.evaluations = final_phase.evaluations();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kapla
