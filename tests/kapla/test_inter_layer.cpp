// KAPLA's inter-layer solver (§IV-B): the dynamic programme against brute
// force over every segmentation, the conservative validity pruning against
// brute force over every allocation, k_S monotonicity, and the structure of
// whole-network schedules under the tensor_centric model.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mapex/mapping.hpp>
#include <mapex/network.hpp>
#include <mapex/schedule.hpp>
#include <random>

#include "host/plugin_registry.hpp"
#include "inter_layer.hpp"

namespace mapex {
namespace {

const std::string kData = MAPEX_TEST_DATA_DIR;

const host::PluginRegistry& registry() {
  static const host::PluginRegistry r = host::load_plugins();
  return r;
}

/// Every chain of segments (at most `max_len` layers each) and scheme
/// choices covering `num_layers` layers, with its total cost.
void all_chains(int num_layers, int max_len,
                const std::function<std::vector<double>(int, int)>& costs, int begin, double sum,
                std::vector<double>& out) {
  if (begin == num_layers) {
    out.push_back(sum);
    return;
  }
  for (int len = 1; len <= max_len && begin + len <= num_layers; ++len)
    for (double c : costs(begin, begin + len - 1))
      all_chains(num_layers, max_len, costs, begin + len, sum + c, out);
}

void expect_dp_matches_brute_force(int num_layers, int max_len, int k_s,
                                   const std::function<std::vector<double>(int, int)>& costs) {
  std::vector<double> brute;
  all_chains(num_layers, max_len, costs, 0, 0, brute);
  std::sort(brute.begin(), brute.end());
  const auto chains = kapla::best_chains(num_layers, max_len, k_s, costs);
  // The k_s cheapest chains overall are among the k_s cheapest ending at
  // every layer, so the programme returns exactly them.
  ASSERT_EQ(chains.size(), std::min<size_t>(static_cast<size_t>(k_s), brute.size()));
  for (size_t i = 0; i < chains.size(); ++i) {
    EXPECT_NEAR(chains[i].cost, brute[i], 1e-9 * std::max(1.0, brute[i])) << "rank " << i;
    double sum = 0;
    int next = 0;
    for (const auto& step : chains[i].steps) {
      EXPECT_EQ(step.first, next);
      EXPECT_LE(step.last - step.first + 1, max_len);
      sum += costs(step.first, step.last)[static_cast<size_t>(step.scheme)];
      next = step.last + 1;
    }
    EXPECT_EQ(next, num_layers);
    EXPECT_NEAR(sum, chains[i].cost, 1e-9 * std::max(1.0, sum));
  }
}

TEST(KaplaInterLayerDp, MatchesBruteForceOnRandomSegmentCosts) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> cost(1, 100);
    std::uniform_int_distribution<int> count(0, 3);  // 0: no valid scheme
    std::map<std::pair<int, int>, std::vector<double>> table;
    const int layers = 7;
    for (int first = 0; first < layers; ++first)
      for (int last = first; last < layers; ++last) {
        auto& v = table[{first, last}];
        const int n = first == last ? 1 + count(rng) % 3 : count(rng);  // single layers always fit
        for (int i = 0; i < n; ++i) v.push_back(cost(rng));
      }
    const auto costs = [&](int f, int l) { return table.at({f, l}); };
    for (int k_s : {1, 2, 4, 9}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", k_S " + std::to_string(k_s));
      expect_dp_matches_brute_force(layers, 3, k_s, costs);
    }
  }
}

TEST(KaplaInterLayerDp, MatchesBruteForceOnTheEstimatesOfAChain) {
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto chip = kapla::describe_chip(arch);
  const auto facts = kapla::layer_facts(net);
  for (Objective objective : {Objective::kEnergy, Objective::kLatency}) {
    const auto costs = [&](int first, int last) {
      std::vector<double> v;
      for (const auto& s : kapla::explore_segment(chip, facts, first, last, objective).schemes)
        v.push_back(objective == Objective::kEnergy ? s.total_energy_pj : s.total_latency_cycles);
      return v;
    };
    for (int k_s : {1, 4}) expect_dp_matches_brute_force(4, 4, k_s, costs);
  }
}

TEST(KaplaInterLayerEstimates, PipelineLatency) {
  EXPECT_DOUBLE_EQ(kapla::pipeline_latency({7}, 4), 7);
  EXPECT_DOUBLE_EQ(kapla::pipeline_latency({4, 2}, 1), 6);
  // Two steps: the first half passes both layers (2 + 1), the second
  // follows at the slowest layer's pace (2).
  EXPECT_DOUBLE_EQ(kapla::pipeline_latency({4, 2}, 2), 5);
}

TEST(KaplaInterLayerEstimates, ParetoPruningKeepsOnlyUndominatedSchemes) {
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const auto chip = kapla::describe_chip(Architecture::load(kData + "/kapla_chip4.yaml"));
  const auto facts = kapla::layer_facts(net);
  const auto seg = kapla::explore_segment(chip, facts, 0, 2, Objective::kEnergy);
  EXPECT_EQ(seg.counts.candidates, 3u);  // 4 rows cut into 3 bands
  EXPECT_GE(seg.counts.candidates, seg.counts.valid);
  EXPECT_GE(seg.counts.valid, seg.counts.pareto);
  EXPECT_EQ(seg.counts.pareto, seg.schemes.size());
  for (const auto& a : seg.schemes)
    for (const auto& b : seg.schemes)
      EXPECT_FALSE(&a != &b && b.total_energy_pj <= a.total_energy_pj &&
                   b.total_latency_cycles <= a.total_latency_cycles &&
                   (b.total_energy_pj < a.total_energy_pj ||
                    b.total_latency_cycles < a.total_latency_cycles));
  for (size_t i = 1; i < seg.schemes.size(); ++i)
    EXPECT_LE(seg.schemes[i - 1].total_energy_pj, seg.schemes[i].total_energy_pj);
}

/// Brute force: some intra-layer scheme fits the region when the mapping
/// with the smallest footprint (the trivial one: one element per tensor
/// below, spans passed up) is valid under the cost model on the region's
/// architecture with the forwarded fmap's bytes kept out of every GBUF.
bool fits_by_brute_force(const Network& net, const Architecture& arch, const kapla::Chip& chip,
                         int first, int last, const std::vector<NodeRegion>& regions) {
  const auto model = registry().make_costmodel("tensor_centric", {});
  const auto facts = kapla::layer_facts(net);
  for (int l = first; l <= last; ++l) {
    const auto& f = facts[static_cast<size_t>(l)];
    // In a chain every layer but the segment's last forwards its output,
    // one sample at a time.
    const double fwd_bytes = l < last ? f.tensor_words[static_cast<size_t>(f.output)] /
                                            static_cast<double>(f.batch) * chip.word_bytes
                                      : 0;
    const auto& region = regions[static_cast<size_t>(l - first)];
    const auto reserved =
        static_cast<std::int64_t>(std::ceil(fwd_bytes / static_cast<double>(region.nodes())));
    if (reserved >= chip.gbuf_bytes) return false;
    const Architecture sub = kapla::region_architecture(arch, chip, region, reserved);
    const auto& op = net.layers()[static_cast<size_t>(l)].op;
    const auto bound = model->bind(op, sub);
    if (!bound->evaluate(Mapping::trivial(op, sub)).valid) return false;
  }
  return true;
}

TEST(KaplaInterLayerPruning, NeverRejectsAnAllocationThatFits) {
  // A chain whose fmaps are large next to a 256 B GBUF: many allocations
  // cannot keep one sample of the forwarded fmap on chip.
  const Network net = Network::parse(
      "network: wide\nbatch: 2\nlayers:\n"
      "  - {name: a, type: fc, C: 64, K: 512, inputs: []}\n"
      "  - {name: b, type: fc, C: 512, K: 256}\n"
      "  - {name: c, type: fc, C: 256, K: 600}\n"
      "  - {name: d, type: fc, C: 600, K: 16}\n",
      "wide");
  Architecture full = Architecture::load(kData + "/kapla_chip4.yaml");
  std::vector<Level> levels = full.levels();
  levels[2].size_bytes = 256;
  const Architecture arch = Architecture::make("tight", full.clock_mhz(), full.word_bits(),
                                               full.mac_energy_pj(), full.macs_per_pe(), levels);
  const auto chip = kapla::describe_chip(arch);
  const auto facts = kapla::layer_facts(net);
  int pruned = 0;
  int kept = 0;
  for (int first = 0; first < 4; ++first)
    for (int last = first; last < 4; ++last)
      for (const auto& regions : kapla::allocations(chip, last - first + 1)) {
        const bool passes = kapla::reserve_or_prune(chip, facts, first, last, regions).has_value();
        if (passes) {
          ++kept;
          continue;
        }
        ++pruned;
        EXPECT_FALSE(fits_by_brute_force(net, arch, chip, first, last, regions))
            << "segment " << first << ".." << last << " pruned but fits";
      }
  EXPECT_GT(pruned, 0);
  EXPECT_GT(kept, 0);
}

NetworkSchedule schedule(const std::string& workload, int k_s, Objective objective,
                         int max_len = 4) {
  const Network net = Network::load(workload);
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  ScheduleOptions options;
  options.k_s = k_s;
  options.objective = objective;
  options.max_segment_layers = max_len;
  options.layer_by_layer_baseline = false;  // the paper's algorithm alone
  return kapla::schedule_network(net, arch, *model, options);
}

void expect_well_formed(const NetworkSchedule& s, int num_layers, const kapla::Chip& chip) {
  ASSERT_TRUE(s.valid) << s.invalid_reason;
  int next = 0;
  double energy = 0;
  double latency = 0;
  for (const auto& seg : s.segments) {
    EXPECT_EQ(seg.first_layer, next);
    ASSERT_EQ(static_cast<int>(seg.layers.size()), seg.last_layer - seg.first_layer + 1);
    int rows = 0;
    for (const auto& p : seg.layers) {
      EXPECT_EQ(p.layer, next++);
      EXPECT_EQ(p.region.row, rows);  // bands in order, no overlap
      rows += p.region.rows;
      EXPECT_GT(p.energy_pj, 0);
      EXPECT_GT(p.latency_cycles, 0);
      EXPECT_FALSE(p.mapping_yaml.empty());
      if (seg.layers.size() == 1) {
        EXPECT_FALSE(p.input_on_chip || p.output_on_chip);
      }
    }
    EXPECT_LE(rows, chip.rows);
    EXPECT_GT(seg.counts.candidates, 0u);
    energy += seg.energy_pj;
    latency += seg.latency_cycles;
  }
  EXPECT_EQ(next, num_layers);
  EXPECT_NEAR(energy, s.energy_pj, 1e-6 * energy);
  EXPECT_NEAR(latency, s.latency_cycles, 1e-6 * latency);
  EXPECT_GE(s.counts.candidates, s.counts.valid);
  EXPECT_GE(s.counts.valid, s.counts.pareto);
}

TEST(KaplaInterLayerSchedule, LargerKsIsNeverWorse) {
  const auto chip = kapla::describe_chip(Architecture::load(kData + "/kapla_chip4.yaml"));
  for (Objective objective : {Objective::kEnergy, Objective::kLatency}) {
    double previous = std::numeric_limits<double>::infinity();
    for (int k_s : {1, 2, 4, 8}) {
      const auto s = schedule(kData + "/kapla_chain.yaml", k_s, objective);
      expect_well_formed(s, 4, chip);
      EXPECT_LE(s.chains_evaluated, k_s);
      const double v = objective == Objective::kEnergy ? s.energy_pj : s.latency_cycles;
      EXPECT_LE(v, previous * (1 + 1e-12)) << "k_S " << k_s;
      previous = v;
    }
  }
}

TEST(KaplaInterLayerSchedule, KsCoveringEveryChainIsTheBruteForceOptimum) {
  // With k_S at least the number of chains, every segmentation and every
  // Pareto-optimal allocation is solved in detail: brute force under the
  // same model, which no smaller k_S beats.
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const auto chip = kapla::describe_chip(Architecture::load(kData + "/kapla_chip4.yaml"));
  const auto facts = kapla::layer_facts(net);
  std::vector<double> every;
  all_chains(
      4, 4,
      [&](int f, int l) {
        return std::vector<double>(
            kapla::explore_segment(chip, facts, f, l, Objective::kEnergy).schemes.size(), 0.0);
      },
      0, 0, every);
  const auto brute = schedule(kData + "/kapla_chain.yaml", 1000, Objective::kEnergy);
  EXPECT_EQ(brute.chains_evaluated, static_cast<int>(every.size()));
  for (int k_s : {1, 2, 4})
    EXPECT_LE(brute.energy_pj,
              schedule(kData + "/kapla_chain.yaml", k_s, Objective::kEnergy).energy_pj);
}

TEST(KaplaInterLayerSchedule, LayerByLayerHasOnlySingleLayerSegmentsOnTheWholeChip) {
  const auto chip = kapla::describe_chip(Architecture::load(kData + "/kapla_chip4.yaml"));
  const auto s = schedule(kData + "/kapla_chain.yaml", 4, Objective::kEnergy, 1);
  expect_well_formed(s, 4, chip);
  ASSERT_EQ(s.segments.size(), 4u);
  for (const auto& seg : s.segments) EXPECT_EQ(seg.layers.front().region.nodes(), chip.nodes());
}

TEST(KaplaInterLayerSchedule, ForwardedFmapsSkipDram) {
  // With segments allowed, the best energy schedule of the chain keeps
  // some fmap on chip, and doing so beats going layer by layer here.
  const auto segmented = schedule(kData + "/kapla_chain.yaml", 4, Objective::kEnergy);
  const auto layerwise = schedule(kData + "/kapla_chain.yaml", 4, Objective::kEnergy, 1);
  ASSERT_TRUE(segmented.valid && layerwise.valid);
  bool forwarded = false;
  for (const auto& seg : segmented.segments)
    for (const auto& p : seg.layers) forwarded = forwarded || p.output_on_chip;
  EXPECT_TRUE(forwarded);
  EXPECT_LT(segmented.energy_pj, layerwise.energy_pj);
}

TEST(KaplaInterLayerSchedule, TheBaselineMakesItNeverWorseThanLayerByLayer) {
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  for (Objective objective : {Objective::kEnergy, Objective::kLatency})
    for (int k_s : {1, 4}) {
      ScheduleOptions o;
      o.objective = objective;
      o.k_s = k_s;
      const auto s = kapla::schedule_network(net, arch, *model, o);
      const auto lw = schedule(kData + "/kapla_chain.yaml", 1, objective, 1);
      ASSERT_TRUE(s.valid && s.layer_by_layer_valid && lw.valid);
      EXPECT_NEAR(s.layer_by_layer_energy_pj, lw.energy_pj, 1e-9 * lw.energy_pj);
      if (objective == Objective::kEnergy)
        EXPECT_LE(s.energy_pj, lw.energy_pj);
      else
        EXPECT_LE(s.latency_cycles, lw.latency_cycles);
    }
}

TEST(KaplaInterLayerSchedule, TrainingGraphsAreScheduled) {
  const Network net = Network::parse(
      "network: t\nbatch: 2\ntraining: true\nlayers:\n"
      "  - {name: c1, type: conv2d, C: 4, K: 8, H: 8, W: 8, R: 3, S: 3, padding: 1, inputs: []}\n"
      "  - {name: c2, type: conv2d, C: 8, K: 8, H: 8, W: 8, R: 1, S: 1}\n",
      "t");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  const auto s = kapla::schedule_network(net, arch, *model, {});
  expect_well_formed(s, static_cast<int>(net.layers().size()), kapla::describe_chip(arch));
}

TEST(KaplaInterLayerSchedule, RejectsEdpAndBadOptions) {
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  ScheduleOptions o;
  o.objective = Objective::kEdp;
  EXPECT_THROW(kapla::schedule_network(net, arch, *model, o), InputError);
  o = {};
  o.k_s = 0;
  EXPECT_THROW(kapla::schedule_network(net, arch, *model, o), InputError);
}

TEST(KaplaInterLayerExhaustive, KeepAllocationIsDeterministicAndHasTheGivenRate) {
  for (double p : {0.1, 0.5, 0.85}) {
    int kept = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const bool k = kapla::keep_allocation(7, 2, 5, static_cast<std::size_t>(i), p);
      EXPECT_EQ(k, kapla::keep_allocation(7, 2, 5, static_cast<std::size_t>(i), p));
      kept += k ? 1 : 0;
    }
    // Binomial(20000, p): 5 standard deviations at most.
    EXPECT_NEAR(kept, p * n, 5 * std::sqrt(n * p * (1 - p))) << "p " << p;
  }
  // Another seed or segment keeps other allocations.
  int differ = 0;
  for (std::size_t i = 0; i < 200; ++i)
    differ += kapla::keep_allocation(7, 2, 5, i, 0.5) != kapla::keep_allocation(8, 2, 5, i, 0.5);
  EXPECT_GT(differ, 50);
  for (std::size_t i = 0; i < 100; ++i) EXPECT_TRUE(kapla::keep_allocation(1, 0, 3, i, 1.0));
}

ScheduleOptions exhaustive_options(Objective objective, double probability = 1) {
  ScheduleOptions o;
  o.objective = objective;
  o.inter_layer = InterLayerSearch::kExhaustive;
  o.allocation_probability = probability;
  return o;
}

TEST(KaplaInterLayerExhaustive, IsTheOptimumOverEverySegmentationAndAllocation) {
  // Exhaustive over the inter-layer space: no k_S, Pareto or estimate can
  // beat it, and it solves every valid allocation of every segment.
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto chip = kapla::describe_chip(arch);
  const auto facts = kapla::layer_facts(net);
  const auto model = registry().make_costmodel("tensor_centric", {});
  for (Objective objective : {Objective::kEnergy, Objective::kLatency}) {
    const auto s = kapla::schedule_network(net, arch, *model, exhaustive_options(objective));
    expect_well_formed(s, 4, chip);
    std::uint64_t valid = 0;
    for (int first = 0; first < 4; ++first)
      for (int last = first; last < 4; ++last)
        valid += kapla::explore_segment(chip, facts, first, last, objective).counts.valid;
    EXPECT_EQ(s.counts.valid, valid);
    EXPECT_EQ(s.counts.pareto, valid);  // nothing pruned beyond validity
    const auto value = [&](const NetworkSchedule& x) {
      return objective == Objective::kEnergy ? x.energy_pj : x.latency_cycles;
    };
    for (int k_s : {1, 4, 1000})
      EXPECT_LE(value(s),
                value(schedule(kData + "/kapla_chain.yaml", k_s, objective)) * (1 + 1e-12))
          << "k_S " << k_s;
    ASSERT_TRUE(s.layer_by_layer_valid);
    EXPECT_LE(value(s), objective == Objective::kEnergy ? s.layer_by_layer_energy_pj
                                                        : s.layer_by_layer_latency_cycles);
  }
}

TEST(KaplaInterLayerExhaustive, AllocationProbabilityKeepsASubsetAndSingleLayers) {
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  const auto all =
      kapla::schedule_network(net, arch, *model, exhaustive_options(Objective::kEnergy));
  const auto some =
      kapla::schedule_network(net, arch, *model, exhaustive_options(Objective::kEnergy, 0.3));
  ASSERT_TRUE(all.valid && some.valid) << some.invalid_reason;
  EXPECT_EQ(some.counts.valid, all.counts.valid);
  EXPECT_LT(some.counts.pareto, all.counts.pareto);
  EXPECT_GE(some.counts.pareto, 4u);  // the four single-layer segments always stay
  EXPECT_LE(some.intra_layer_solves, all.intra_layer_solves);
  EXPECT_GE(some.energy_pj, all.energy_pj);
  // Same seed, same schedule.
  const auto again =
      kapla::schedule_network(net, arch, *model, exhaustive_options(Objective::kEnergy, 0.3));
  EXPECT_EQ(again.energy_pj, some.energy_pj);
  EXPECT_EQ(again.counts.pareto, some.counts.pareto);
  ScheduleOptions bad = exhaustive_options(Objective::kEnergy, 0);
  EXPECT_THROW(kapla::schedule_network(net, arch, *model, bad), InputError);
}

TEST(KaplaInterLayerExhaustive, FallbackAllocationIsDeterministicAndUniform) {
  // The allocation a segment keeps when its draws keep none: in range, the
  // same on every call, and spread evenly over segments and seeds.
  std::vector<int> hits(7, 0);
  for (std::uint64_t seed = 1; seed <= 700; ++seed)
    for (int last = 1; last < 11; ++last) {
      const std::size_t i = kapla::fallback_allocation(seed, 0, last, 7);
      ASSERT_LT(i, 7u);
      EXPECT_EQ(i, kapla::fallback_allocation(seed, 0, last, 7));
      ++hits[i];
    }
  // 7000 draws over 7 values: 1000 each, 5 standard deviations at most.
  for (int h : hits) EXPECT_NEAR(h, 1000, 5 * std::sqrt(7000 * (1.0 / 7) * (6.0 / 7)));
  EXPECT_EQ(kapla::fallback_allocation(3, 1, 2, 1), 0u);
}

TEST(KaplaInterLayerExhaustive, AllocationKeepOneKeepsOneWhereTheDrawsKeepNone) {
  // At a probability at which no draw keeps an allocation, every
  // multi-layer segment with a valid allocation keeps exactly one of them
  // with allocation_keep_one and none without; the single-layer segments
  // keep theirs either way.
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto chip = kapla::describe_chip(arch);
  const auto facts = kapla::layer_facts(net);
  const auto model = registry().make_costmodel("tensor_centric", {});
  std::uint64_t single = 0, multi_with_valid = 0;
  for (int first = 0; first < 4; ++first)
    for (int last = first; last < 4; ++last) {
      const auto e = kapla::explore_segment(chip, facts, first, last, Objective::kEnergy, false);
      if (first == last)
        single += e.schemes.size();
      else if (!e.schemes.empty())
        ++multi_with_valid;
    }
  ASSERT_GT(multi_with_valid, 0u);
  ScheduleOptions off = exhaustive_options(Objective::kEnergy, 1e-12);
  ScheduleOptions on = off;
  on.allocation_keep_one = true;
  const auto a = kapla::schedule_network(net, arch, *model, off);
  const auto b = kapla::schedule_network(net, arch, *model, on);
  ASSERT_TRUE(a.valid && b.valid);
  EXPECT_EQ(a.counts.pareto, single);
  EXPECT_EQ(b.counts.pareto, single + multi_with_valid);
  EXPECT_LE(b.energy_pj, a.energy_pj);
  // Where the draws keep some, nothing is added: at p = 1 it is B.
  ScheduleOptions all = exhaustive_options(Objective::kEnergy);
  all.allocation_keep_one = true;
  const auto c = kapla::schedule_network(net, arch, *model, all);
  const auto d = kapla::schedule_network(net, arch, *model, exhaustive_options(Objective::kEnergy));
  EXPECT_EQ(c.counts.pareto, d.counts.pareto);
  EXPECT_EQ(c.energy_pj, d.energy_pj);
}

TEST(KaplaInterLayerSchedule, AnIntraLayerSolverReplacesKaplasOwn) {
  // The host's per-layer searcher does every intra-layer solve, with the
  // budget given; exhaustive intra-layer search is never worse than
  // KAPLA's solver on the same chain of regions.
  const Network net = Network::load(kData + "/kapla_tiny_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  const auto exhaustive = registry().make_searcher("exhaustive", {});
  std::atomic<int> calls{0};
  ScheduleOptions o = exhaustive_options(Objective::kEnergy);
  o.intra_layer = [&](SearchContext& ctx) {
    ++calls;
    return exhaustive->search(ctx);
  };
  const auto s = kapla::schedule_network(net, arch, *model, o);
  ASSERT_TRUE(s.valid) << s.invalid_reason;
  EXPECT_EQ(calls.load(), s.intra_layer_solves);
  EXPECT_EQ(s.intra_layer_solves_cut, 0);
  ScheduleOptions own_options = o;
  own_options.intra_layer = nullptr;
  const auto own = kapla::schedule_network(net, arch, *model, own_options);
  EXPECT_LE(s.energy_pj, own.energy_pj * (1 + 1e-12));
  EXPECT_GT(s.evaluations, own.evaluations);
  // A budget of 5 evaluations per solve cuts every solve.
  o.intra_layer_budget.max_evaluations = 5;
  calls = 0;
  const auto cut = kapla::schedule_network(net, arch, *model, o);
  EXPECT_EQ(cut.intra_layer_solves_cut, cut.intra_layer_solves);
  EXPECT_LE(cut.evaluations, 5u * static_cast<std::uint64_t>(cut.intra_layer_solves));
}

TEST(KaplaInterLayerSchedule, TheSameScheduleAtAnyThreadCount) {
  // Intra-layer solves run in parallel; each is deterministic and
  // independent, so one thread and two give the same schedule.
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  for (auto inter : {InterLayerSearch::kPruned, InterLayerSearch::kExhaustive}) {
    ScheduleOptions o;
    o.inter_layer = inter;
    NetworkSchedule one, two;
    tbb::task_arena(1).execute([&] { one = kapla::schedule_network(net, arch, *model, o); });
    tbb::task_arena(2).execute([&] { two = kapla::schedule_network(net, arch, *model, o); });
    ASSERT_TRUE(one.valid && two.valid);
    EXPECT_EQ(one.energy_pj, two.energy_pj);
    EXPECT_EQ(one.latency_cycles, two.latency_cycles);
    EXPECT_EQ(one.evaluations, two.evaluations);
    ASSERT_EQ(one.segments.size(), two.segments.size());
    for (size_t i = 0; i < one.segments.size(); ++i)
      for (size_t l = 0; l < one.segments[i].layers.size(); ++l)
        EXPECT_EQ(one.segments[i].layers[l].mapping_yaml, two.segments[i].layers[l].mapping_yaml);
  }
}

TEST(KaplaInterLayerSchedule, ReleasedRandomSearchIsTheSameAtOneAndTwoThreads) {
  // KAPLA's released R in nn_dataflow's space: allocations and partitions
  // kept with 0.04, factorisations and order pairs with 0.1, one kept
  // where a draw keeps none. Every draw is a hash of the seed and the
  // candidate's place, so one thread and two give the same schedule, and
  // another seed another one.
  const Network net = Network::load(kData + "/kapla_tiny_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {{"model", "nn_dataflow"}});
  const auto intra = registry().make_searcher("nn_dataflow", {{"hybrid_partition", "true"},
                                                              {"batch_partition", "true"},
                                                              {"loop_blocking", "exhaustive"},
                                                              {"keep_probability", "0.1"},
                                                              {"keep_per", "factorization"},
                                                              {"partition_probability", "0.04"},
                                                              {"keep_at_least_one", "true"}});
  const auto schedule_at = [&](int threads, std::uint64_t seed) {
    ScheduleOptions o = exhaustive_options(Objective::kEnergy, 0.04);
    o.allocation_keep_one = true;
    o.seed = seed;
    o.intra_layer = [&](SearchContext& ctx) { return intra->search(ctx); };
    NetworkSchedule s;
    tbb::task_arena(threads).execute([&] { s = kapla::schedule_network(net, arch, *model, o); });
    return s;
  };
  // A seed may keep, for some layer, only partitions whose schemes the
  // canonical mapping cannot carry: no schedule, the same at both counts.
  const auto first = schedule_at(1, 1);
  int differ = 0, valid = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto one = schedule_at(1, seed), two = schedule_at(2, seed);
    ASSERT_EQ(one.valid, two.valid) << seed;
    EXPECT_EQ(one.invalid_reason, two.invalid_reason) << seed;
    EXPECT_EQ(one.evaluations, two.evaluations) << seed;
    EXPECT_EQ(one.counts.pareto, two.counts.pareto) << seed;
    if (one.evaluations != first.evaluations || one.counts.pareto != first.counts.pareto) ++differ;
    if (!one.valid) continue;
    ++valid;
    EXPECT_EQ(one.energy_pj, two.energy_pj) << seed;
    EXPECT_EQ(one.latency_cycles, two.latency_cycles) << seed;
    ASSERT_EQ(one.segments.size(), two.segments.size()) << seed;
    for (size_t i = 0; i < one.segments.size(); ++i)
      for (size_t l = 0; l < one.segments[i].layers.size(); ++l)
        EXPECT_EQ(one.segments[i].layers[l].mapping_yaml, two.segments[i].layers[l].mapping_yaml);
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(differ, 0);
}

TEST(KaplaInterLayerEstimates, CalibrationAddsTheSolvedGapAndScalesTheSolvedLatency) {
  // A layer calibrated by its solve on the whole chip: alone on the chip
  // its estimate is the solve's figures; on a band of half the rows its
  // latency is at least twice the solve's (half of every resource).
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const auto chip = kapla::describe_chip(Architecture::load(kData + "/kapla_chip4.yaml"));
  auto facts = kapla::layer_facts(net);
  const auto plain = kapla::explore_segment(chip, facts, 0, 1, Objective::kEnergy, false);
  const auto alone = kapla::explore_segment(chip, facts, 0, 0, Objective::kEnergy);
  ASSERT_EQ(alone.schemes.size(), 1u);
  const double bound_energy = alone.schemes[0].energy_pj[0];
  facts[0].energy_gap_pj = 1000;
  facts[0].whole_chip_cycles = 1e6;  // far above the bound's latency
  const auto calibrated = kapla::explore_segment(chip, facts, 0, 0, Objective::kEnergy);
  EXPECT_DOUBLE_EQ(calibrated.schemes[0].energy_pj[0], bound_energy + 1000);
  EXPECT_DOUBLE_EQ(calibrated.schemes[0].latency_cycles[0], 1e6);
  const auto pair = kapla::explore_segment(chip, facts, 0, 1, Objective::kEnergy, false);
  ASSERT_EQ(pair.schemes.size(), plain.schemes.size());
  for (const auto& s : pair.schemes)
    EXPECT_GE(s.latency_cycles[0], 1e6 * chip.nodes() / s.regions[0].nodes() * (1 - 1e-12));
}

TEST(KaplaInterLayerSchedule, CalibrationNeedsTheLayerByLayerChain) {
  // Calibrated by default; the paper's algorithm alone (no layer-by-layer
  // chain) and --no-calibration rank by the analytical bound only, and both
  // stay within the space: valid schedules of every layer.
  const Network net = Network::load(kData + "/kapla_chain.yaml");
  const Architecture arch = Architecture::load(kData + "/kapla_chip4.yaml");
  const auto model = registry().make_costmodel("tensor_centric", {});
  ScheduleOptions calibrated, plain;
  plain.calibrate_estimates = false;
  const auto a = kapla::schedule_network(net, arch, *model, calibrated);
  const auto b = kapla::schedule_network(net, arch, *model, plain);
  expect_well_formed(a, 4, kapla::describe_chip(arch));
  expect_well_formed(b, 4, kapla::describe_chip(arch));
  // The same whole-chip solves serve calibration and the layer-by-layer chain.
  EXPECT_EQ(a.layer_by_layer_energy_pj, b.layer_by_layer_energy_pj);
  EXPECT_LE(a.energy_pj, a.layer_by_layer_energy_pj);
  const auto estimates = [](const NetworkSchedule& s) {
    double sum = 0;
    for (const auto& seg : s.segments) sum += seg.estimate_energy_pj;
    return sum;
  };
  // On a single layer alone on the chip the calibrated estimate is at
  // least the solve itself (its latency; its energy beyond the bound).
  ScheduleOptions alone = calibrated;
  alone.max_segment_layers = 1;
  plain.max_segment_layers = 1;
  const auto ca = kapla::schedule_network(net, arch, *model, alone);
  const auto pa = kapla::schedule_network(net, arch, *model, plain);
  ASSERT_TRUE(ca.valid && pa.valid);
  ASSERT_EQ(ca.segments.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_GE(ca.segments[i].estimate_latency_cycles,
              pa.segments[i].estimate_latency_cycles * (1 - 1e-12));
    EXPECT_GE(ca.segments[i].estimate_latency_cycles, ca.segments[i].latency_cycles * (1 - 1e-9));
  }
  EXPECT_GT(estimates(ca), estimates(pa));
  // Without the layer-by-layer chain nothing is calibrated.
  ScheduleOptions paper = calibrated;
  paper.layer_by_layer_baseline = false;
  ScheduleOptions paper_plain = plain;
  paper_plain.layer_by_layer_baseline = false;
  paper_plain.max_segment_layers = paper.max_segment_layers;
  EXPECT_EQ(estimates(kapla::schedule_network(net, arch, *model, paper)),
            estimates(kapla::schedule_network(net, arch, *model, paper_plain)));
}

TEST(KaplaNetworkConnectivity, NamesTheFirstUnconnectedLayer) {
  const Network net =
      Network::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/workloads/kapla_small.yaml");
  try {
    require_connected(net);
    FAIL() << "kapla_small has two components";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'conv1x1'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(require_connected(Network::load(kData + "/kapla_chain.yaml")));
}

}  // namespace
}  // namespace mapex
