// Golden tests of the search over nn_dataflow's space (mapex::ndf::search)
// against nn_dataflow's own searches (refdata/nn_dataflow/layers.csv): for
// every reference layer the model covers, the best energy found with the
// run's options (partitioning, bypass, GBUF sharing) over the network-input
// layouts nn_dataflow tries is within 3% of the tool's best L_cost; the
// scheme found scores the same through `evaluate` and, where the canonical
// form can carry it, through a mapping. Speed is measured by
// scripts/bench_nndf_search, not here.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>

#include "nndf_reference.hpp"

namespace {

namespace fs = std::filesystem;
namespace ref = mapex::ndf::reference;

const fs::path kRef = MAPEX_NNDF_REFDATA;
const fs::path kData = MAPEX_TEST_DATA_DIR;
const fs::path kArchs = fs::path(MAPEX_EXPERIMENTS_DIR) / "architectures";

/// Reference layers outside the model, with the reason it gives (none: the
/// pool layer is a local-region layer of the model).
const std::map<std::string, std::string> kExcluded{};

/// How far the best found may sit from nn_dataflow's best.
constexpr double kTolerance = 0.03;

/// How far KAPLA's cost-descending blocking may sit above the exhaustive
/// one on the reference layers (measured worst, with margin).
constexpr double kKaplaWorstOverhead = 0.10;

std::vector<std::string> ids() {
  std::vector<std::string> out;
  for (const auto& row : ref::read_layers(kRef)) out.push_back(row.at("id"));
  return out;
}

class NnDataflowSearchGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NnDataflowSearchGolden, BestEnergyWithinThreePercentOfNnDataflows) {
  const std::string id = GetParam();
  ref::Row row;
  for (const auto& r : ref::read_layers(kRef))
    if (r.at("id") == id) row = r;
  ref::Setup setup;
  if (auto why = ref::load(kRef, kData, kArchs, row, setup)) {
    ASSERT_TRUE(kExcluded.count(id)) << id << " is not searched: " << *why;
    EXPECT_NE(why->find(kExcluded.at(id)), std::string::npos) << *why;
    return;
  }
  ASSERT_FALSE(kExcluded.count(id)) << id << " is searched but listed as excluded";
  const auto& pr = setup.problem;
  const auto out = mapex::ndf::search(pr.layer, pr.hw, pr.options, setup.layouts, setup.options);
  ASSERT_TRUE(out.complete);
  ASSERT_FALSE(out.tops.empty()) << "no scheme fits";
  const auto& best = out.tops.front();
  const double ours = best.cost / setup.scale;
  std::cout << "[ " << id << " ] nn_dataflow " << setup.ref_cost << ", mapex " << ours << ", ratio "
            << ours / setup.ref_cost << ", part " << mapex::ndf::format_layout(best.scheme.part)
            << ", blockings " << out.stats.blockings << ", rotation refused "
            << out.stats.rotation_refused << "\n";
  EXPECT_LE(std::abs(ours - setup.ref_cost), kTolerance * setup.ref_cost)
      << "mapex " << ours << " vs nn_dataflow " << setup.ref_cost;

  // The scheme scores the same through the model's public evaluation.
  const auto& layout = setup.layouts[best.layout];
  const auto r = mapex::ndf::evaluate(pr.layer, pr.hw, pr.options, best.scheme, layout);
  ASSERT_TRUE(r.valid) << r.reason;
  EXPECT_NEAR(r.cost(), best.cost, 1e-9 * best.cost);
  EXPECT_EQ(r.time, best.time);

  // And through a canonical mapping scored as tensor_centric scores it,
  // when the canonical form can carry the scheme.
  const auto& op = setup.net.layers()[static_cast<size_t>(setup.layer)].op;
  mapex::ndf::Problem fixed;
  ASSERT_FALSE(mapex::ndf::make_problem(op, setup.arch, "", mapex::ndf::format_layout(layout.part),
                                        pr.options.forwarding ? "on" : "off", fixed));
  fixed.options = pr.options;
  mapex::Mapping m;
  if (auto err = mapex::ndf::mapping_from_scheme(op, setup.arch, fixed, best.scheme, m)) {
    std::cout << "[ " << id << " ] the best scheme has no canonical mapping: " << *err << "\n";
    return;
  }
  const auto rm = mapex::ndf::evaluate_mapping(fixed, m);
  ASSERT_TRUE(rm.valid) << rm.reason;
  EXPECT_NEAR(rm.cost(), best.cost, 1e-9 * best.cost);
}

INSTANTIATE_TEST_SUITE_P(RefData, NnDataflowSearchGolden, ::testing::ValuesIn(ids()),
                         [](const auto& p) { return p.param; });

}  // namespace

namespace {

using mapex::ndf::Dim2;
using mapex::ndf::Layer;
using mapex::ndf::SearchOptions;

// Partitions as nn_dataflow generates them, counted by hand.
TEST(NnDataflowPartitions, NaiveSplitsFmapsOfConvolutionsAndChannelsOfFcLayers) {
  Layer conv;
  conv.nifm = 8;
  conv.nofm = 8;
  conv.hofm = conv.wofm = 4;
  conv.hfil = conv.wfil = 3;
  const auto c = mapex::ndf::gen_partitions(conv, Dim2{2, 2}, SearchOptions{});
  ASSERT_EQ(c.size(), 1u);  // OFMP 2x2; the trivial ones first, in enum order
  EXPECT_EQ(c[0].pdims[mapex::ndf::kOfmp], (Dim2{2, 2}));
  EXPECT_EQ(c[0].order, (std::array<int, 4>{0, 2, 3, 1}));
  Layer fc;
  fc.nifm = 8;
  fc.nofm = 8;
  const auto f = mapex::ndf::gen_partitions(fc, Dim2{2, 2}, SearchOptions{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pdims[mapex::ndf::kOutp], (Dim2{2, 2}));
  EXPECT_EQ(f[0].order, (std::array<int, 4>{1, 2, 3, 0}));
}

TEST(NnDataflowPartitions, HybridWithInputChannelsOnOneRow) {
  // 1 x 4 nodes, an FC layer: OUTP x INPP in {4 x 1, 2 x 2, 1 x 4} along
  // the width; 2 x 2 has two orders (either non-trivial one outermost),
  // the others one.
  Layer fc;
  fc.nifm = 8;
  fc.nofm = 8;
  SearchOptions so;
  so.hybrid = so.ifmaps = true;
  EXPECT_EQ(mapex::ndf::gen_partitions(fc, Dim2{1, 4}, so).size(), 4u);
  so.ifmaps = false;
  EXPECT_EQ(mapex::ndf::gen_partitions(fc, Dim2{1, 4}, so).size(), 1u);
}

/// One node with one PE: an FC layer of 2 inputs and 1 output is a pass
/// with an ifmap loop of 2 and nothing else.
mapex::ndf::Hardware one_pe() {
  mapex::ndf::Hardware hw;
  hw.nodes = Dim2{1, 1};
  hw.array = Dim2{1, 1};
  hw.regf_words = 100;
  hw.gbuf_words = 1000;
  hw.dram.dim = Dim2{1, 1};
  hw.mac_cost = 1;
  hw.mem_cost = {200, 6, 2, 1};
  return hw;
}

TEST(NnDataflowSearch, ScoresEveryRegularBlockingOnce) {
  // The ifmap loop of 2 blocked over three levels: (2,1,1), (1,2,1),
  // (1,1,2); with one non-trivial loop each level has one regular order,
  // so skip_conv leaves 3 blockings.
  Layer fc;
  fc.nifm = 2;
  mapex::ndf::Layout unset;
  unset.end = {1, 2, 1, 1};
  unset.part.order = {-1, -1, -1, -1};
  const auto out =
      mapex::ndf::search(fc, one_pe(), mapex::ndf::Options{}, {unset}, SearchOptions{});
  EXPECT_EQ(out.stats.partitions, 1u);
  EXPECT_EQ(out.stats.blockings, 3u);
  EXPECT_EQ(out.stats.fitting, 3u);
  ASSERT_EQ(out.tops.size(), 1u);
  EXPECT_TRUE(out.complete);
}

TEST(NnDataflowSearch, StopsAtItsBlockingLimit) {
  Layer fc;
  fc.nifm = 2;
  mapex::ndf::Layout unset;
  unset.end = {1, 2, 1, 1};
  unset.part.order = {-1, -1, -1, -1};
  SearchOptions so;
  so.max_blockings = 2;
  const auto out = mapex::ndf::search(fc, one_pe(), mapex::ndf::Options{}, {unset}, so);
  EXPECT_EQ(out.stats.blockings, 2u);
  EXPECT_FALSE(out.complete);
  EXPECT_EQ(out.tops.size(), 1u);
}

}  // namespace

// KAPLA's cost-descending loop blocking (BlockingSolver::kCostDescending)
// against the exhaustive one, in the same space and model.
namespace {

namespace ref = mapex::ndf::reference;
using mapex::ndf::BlockingSolver;

mapex::ndf::SearchOutput search_with(const ref::Setup& s, BlockingSolver solver,
                                     const mapex::ndf::Hardware& hw) {
  SearchOptions so = s.options;
  so.blocking = solver;
  const auto& pr = s.problem;
  return mapex::ndf::search(pr.layer, hw, pr.options, s.layouts, so);
}

std::vector<ref::Setup> reference_setups() {
  std::vector<ref::Setup> out;
  for (const auto& row : ref::read_layers(kRef)) {
    ref::Setup s;
    if (!ref::load(kRef, kData, kArchs, row, s)) out.push_back(std::move(s));
  }
  return out;
}

TEST(KaplaBlocking, OneLoopOfTwoOnOnePeCountedByHand) {
  // The ifmap loop of 2: at the REGF level each of the six orders scores
  // the unit blocking (t0 = (2,1,1), t1 = t2 = (1,1,1)) and the one step
  // that moves the 2 into the REGF (the only loop with anything left). The
  // step is not taken: with one non-trivial loop every category is
  // stationary across it wherever it runs, so no traffic above the REGF
  // drops (two units of filters and inputs either way, the output once).
  // At the GBUF level the REGF's best is the unit blocking and the step
  // moving the 2 into the GBUF lowers nothing either: 6 x 2 + 6 x 2 = 24.
  Layer fc;
  fc.nifm = 2;
  mapex::ndf::Layout unset;
  unset.end = {1, 2, 1, 1};
  unset.part.order = {-1, -1, -1, -1};
  SearchOptions so;
  so.blocking = BlockingSolver::kCostDescending;
  const auto out = mapex::ndf::search(fc, one_pe(), mapex::ndf::Options{}, {unset}, so);
  EXPECT_EQ(out.stats.blockings, 24u);
  EXPECT_EQ(out.stats.fitting, 24u);
  ASSERT_EQ(out.tops.size(), 1u);
  const auto& t = out.tops.front().scheme.blocking.t;
  EXPECT_EQ(t[0], (std::array<std::int64_t, 3>{2, 1, 1}));
  EXPECT_EQ(t[2], (std::array<std::int64_t, 3>{1, 1, 1}));
  // The exhaustive search's best is the same blocking here.
  const auto ex = mapex::ndf::search(fc, one_pe(), mapex::ndf::Options{}, {unset}, SearchOptions{});
  ASSERT_EQ(ex.tops.size(), 1u);
  EXPECT_DOUBLE_EQ(out.tops.front().cost, ex.tops.front().cost);
}

TEST(KaplaBlocking, NeverBelowExhaustiveWhenTheCostIsTheRankedAccessCost) {
  // Without NoC and idle cost a scheme's cost is MACs plus the access cost
  // each pass is ranked by, and every blocking K scores is in B's space:
  // K can tie B but never beat it.
  for (const auto& s : reference_setups()) {
    auto hw = s.problem.hw;
    hw.hop_cost = 0;
    hw.idle_cost = 0;
    const auto b = search_with(s, BlockingSolver::kExhaustive, hw);
    const auto k = search_with(s, BlockingSolver::kCostDescending, hw);
    ASSERT_FALSE(b.tops.empty()) << s.id;
    ASSERT_FALSE(k.tops.empty()) << s.id;
    EXPECT_GE(k.tops.front().cost, b.tops.front().cost * (1 - 1e-12)) << s.id;
    // K's descent scores each candidate order's steps on its own, so on a
    // space of a few hundred blockings (the pool layer's single loop of
    // output channels and batch: 143) it scores more than B's whole
    // enumeration; on the others it scores fewer.
    if (b.stats.blockings > 1000) {
      EXPECT_LT(k.stats.blockings, b.stats.blockings) << s.id;
    }
  }
}

TEST(KaplaBlocking, CloseToExhaustiveOnTheReferenceLayers) {
  // With the chips' real costs: how far K's best sits above B's on
  // nn_dataflow's reference layers, each scheme re-scored by `evaluate`.
  // The bound is what docs/results/kapla_fair.md reports with margin; a
  // solver change that loses more fails here.
  double worst = 0;
  for (const auto& s : reference_setups()) {
    const auto& hw = s.problem.hw;
    const auto b = search_with(s, BlockingSolver::kExhaustive, hw);
    const auto k = search_with(s, BlockingSolver::kCostDescending, hw);
    ASSERT_FALSE(k.tops.empty()) << s.id;
    const auto& kb = k.tops.front();
    const auto r = mapex::ndf::evaluate(s.problem.layer, hw, s.problem.options, kb.scheme,
                                        s.layouts[kb.layout]);
    ASSERT_TRUE(r.valid) << s.id << ": " << r.reason;
    EXPECT_NEAR(r.cost(), kb.cost, 1e-9 * kb.cost) << s.id;
    const double over = kb.cost / b.tops.front().cost - 1;
    std::cout << "[ " << s.id << " ] K over B " << over * 100 << "%, blockings "
              << k.stats.blockings << " vs " << b.stats.blockings << "\n";
    worst = std::max(worst, over);
  }
  EXPECT_LE(worst, kKaplaWorstOverhead);
}

TEST(KaplaBlocking, Deterministic) {
  const auto setups = reference_setups();
  ASSERT_FALSE(setups.empty());
  const auto& s = setups.front();
  const auto a = search_with(s, BlockingSolver::kCostDescending, s.problem.hw);
  const auto b = search_with(s, BlockingSolver::kCostDescending, s.problem.hw);
  ASSERT_FALSE(a.tops.empty());
  ASSERT_EQ(a.tops.size(), b.tops.size());
  EXPECT_EQ(a.tops.front().cost, b.tops.front().cost);
  EXPECT_EQ(a.tops.front().scheme.blocking.t, b.tops.front().scheme.blocking.t);
  EXPECT_EQ(a.tops.front().scheme.blocking.ord, b.tops.front().scheme.blocking.ord);
  EXPECT_EQ(a.stats.blockings, b.stats.blockings);
}

}  // namespace

// KAPLA §V's random search R in nn_dataflow's space
// (SearchOptions::keep_probability): the exhaustive enumeration, each
// partition and blocking kept with a probability.
namespace {

namespace ref = mapex::ndf::reference;

mapex::ndf::SearchOutput search_sampled(const ref::Setup& s, double p, std::uint64_t seed,
                                        bool per_memory_level = false, bool gap = false) {
  SearchOptions so = s.options;
  so.keep_probability = p;
  so.keep_per_memory_level = per_memory_level;
  so.skip_sampling = gap;
  so.seed = seed;
  const auto& pr = s.problem;
  return mapex::ndf::search(pr.layer, pr.hw, pr.options, s.layouts, so);
}

TEST(RandomBlocking, ProbabilityOneIsTheExhaustiveSearch) {
  const auto setups = reference_setups();
  ASSERT_FALSE(setups.empty());
  const auto& s = setups.front();
  const auto b = search_sampled(s, 1, 0);
  const auto r = search_sampled(s, 1, 7);
  EXPECT_EQ(r.stats.sampled_out, 0u);
  EXPECT_EQ(r.stats.blockings, b.stats.blockings);
  ASSERT_FALSE(r.tops.empty());
  EXPECT_EQ(r.tops.front().cost, b.tops.front().cost);
}

TEST(RandomBlocking, ScoresAboutTheKeptShareAndNeverBeatsExhaustive) {
  // On every reference layer at p = 0.1: of the blockings enumerated in the
  // partitions R keeps, it scores each with probability 0.1, so over all
  // layers the scored share of scored plus left out is about a tenth (the
  // left-out count also has the few partitions dropped); its best is in
  // B's space, never below B's.
  std::uint64_t scored = 0, left_out = 0;
  for (const auto& s : reference_setups()) {
    const auto b = search_sampled(s, 1, 0);
    const auto r = search_sampled(s, 0.1, 1);
    EXPECT_LT(r.stats.blockings, b.stats.blockings) << s.id;
    if (!r.tops.empty()) {
      EXPECT_GE(r.tops.front().cost, b.tops.front().cost * (1 - 1e-12)) << s.id;
    }
    scored += r.stats.blockings;
    left_out += r.stats.sampled_out;
  }
  ASSERT_GT(scored + left_out, 1000u);
  const double kept = static_cast<double>(scored) / static_cast<double>(scored + left_out);
  EXPECT_GT(kept, 0.08);
  EXPECT_LT(kept, 0.12);
}

TEST(RandomBlocking, TheSeedDecides) {
  const auto setups = reference_setups();
  ASSERT_FALSE(setups.empty());
  const auto& s = setups.front();
  const auto a = search_sampled(s, 0.1, 3);
  const auto again = search_sampled(s, 0.1, 3);
  const auto other = search_sampled(s, 0.1, 4);
  EXPECT_EQ(a.stats.blockings, again.stats.blockings);
  EXPECT_EQ(a.stats.sampled_out, again.stats.sampled_out);
  ASSERT_EQ(a.tops.size(), again.tops.size());
  if (!a.tops.empty()) {
    EXPECT_EQ(a.tops.front().cost, again.tops.front().cost);
  }
  EXPECT_NE(a.stats.blockings, other.stats.blockings);
}

TEST(RandomBlocking, PerMemoryLevelDrawsKeepAboutTheCubeOfTheProbability) {
  // keep_per_memory_level: three draws per blocking (REGF tile, GBUF tile
  // and order, DRAM order), so at p = 0.5 about 0.5^3 = 1/8 of the
  // blockings of the kept partitions are scored, against about 1/2 with
  // one draw per blocking; blockings sharing a tile share its draw, so
  // the share varies more per layer and the bounds are wider. Never below
  // B; p = 1 is B.
  std::uint64_t scored = 0, left_out = 0, flat_scored = 0, flat_left_out = 0;
  for (const auto& s : reference_setups()) {
    const auto b = search_sampled(s, 1, 0);
    const auto all = search_sampled(s, 1, 1, true);
    EXPECT_EQ(all.stats.blockings, b.stats.blockings) << s.id;
    const auto r = search_sampled(s, 0.5, 1, true);
    const auto flat = search_sampled(s, 0.5, 1);
    if (!r.tops.empty()) {
      EXPECT_GE(r.tops.front().cost, b.tops.front().cost * (1 - 1e-12)) << s.id;
    }
    scored += r.stats.blockings;
    left_out += r.stats.sampled_out;
    flat_scored += flat.stats.blockings;
    flat_left_out += flat.stats.sampled_out;
  }
  ASSERT_GT(scored + left_out, 1000u);
  const double kept = static_cast<double>(scored) / static_cast<double>(scored + left_out);
  const double flat_kept =
      static_cast<double>(flat_scored) / static_cast<double>(flat_scored + flat_left_out);
  EXPECT_GT(kept, 0.07);
  EXPECT_LT(kept, 0.2);
  EXPECT_GT(flat_kept, 0.4);
  EXPECT_LT(flat_kept, 0.6);
}

/// One node of 4 x 4 PEs and an FC layer whose pass has non-trivial ifmap,
/// ofmap and batch loops: one partition, so every blocking R does not
/// score is one its draws left out.
mapex::ndf::SearchOutput one_partition_search(const SearchOptions& so) {
  mapex::ndf::Hardware hw = one_pe();
  hw.array = Dim2{4, 4};
  hw.regf_words = 64;
  hw.gbuf_words = 1 << 14;
  Layer fc;
  fc.batch = 16;
  fc.nifm = 96;
  fc.nofm = 64;
  mapex::ndf::Layout unset;
  unset.end = {16, 96, 1, 1};
  unset.part.order = {-1, -1, -1, -1};
  return mapex::ndf::search(fc, hw, mapex::ndf::Options{}, {unset}, so);
}

mapex::ndf::SearchOutput one_partition(double p, std::uint64_t seed, bool per_memory_level,
                                       bool gap) {
  SearchOptions so;
  so.keep_probability = p;
  so.keep_per_memory_level = per_memory_level;
  so.skip_sampling = gap;
  so.seed = seed;
  return one_partition_search(so);
}

TEST(RandomBlocking, WhatIsNotScoredIsCountedAsLeftOut) {
  // Both samplers that pass over candidates unvisited (the walk per
  // memory level down kept tiles only, and the gaps between kept
  // blockings) count what they pass over from the factorisations alone:
  // scored plus left out is B's whole pass whenever the one partition is
  // kept, at several probabilities and seeds.
  const auto b = one_partition(1, 0, false, false);
  ASSERT_GT(b.stats.blockings, 1000u);
  int checked = 0;
  for (double p : {0.5, 0.2, 0.05})
    for (std::uint64_t seed = 1; seed <= 4; ++seed)
      for (bool level : {true, false}) {
        const auto r = one_partition(p, seed, level, !level);
        if (r.stats.blockings == 0 && r.stats.sampled_out == 1) continue;  // partition left out
        ++checked;
        EXPECT_EQ(r.stats.blockings + r.stats.sampled_out, b.stats.blockings)
            << "p " << p << " seed " << seed << (level ? " per memory level" : " gap");
        EXPECT_LT(r.stats.blockings, b.stats.blockings);
        if (!r.tops.empty()) {
          EXPECT_GE(r.tops.front().cost, b.tops.front().cost * (1 - 1e-12));
        }
      }
  EXPECT_GE(checked, 8);
}

TEST(RandomBlocking, PerMemoryLevelKeepsNestedTiles) {
  // The walk per memory level draws a choice once for every blocking under
  // it: at a higher probability the kept REGF tiles are a superset, and so
  // what a seed scores at p = 0.1 is never more than at p = 0.3; p = 1 is
  // B exactly.
  const auto b = one_partition(1, 0, false, false);
  const auto all = one_partition(1, 5, true, false);
  EXPECT_EQ(all.stats.blockings, b.stats.blockings);
  EXPECT_EQ(all.stats.sampled_out, 0u);
  ASSERT_FALSE(all.tops.empty());
  EXPECT_EQ(all.tops.front().cost, b.tops.front().cost);
  int compared = 0;
  // The one partition itself is kept with the same probability: enough
  // seeds that several keep it at p = 0.1.
  for (std::uint64_t seed = 1; seed <= 80; ++seed) {
    const auto low = one_partition(0.1, seed, true, false);
    const auto high = one_partition(0.3, seed, true, false);
    if (low.stats.blockings == 0) continue;  // the partition itself left out at 0.1
    ++compared;
    EXPECT_LE(low.stats.blockings, high.stats.blockings) << "seed " << seed;
    EXPECT_LE(low.stats.fitting, high.stats.fitting) << "seed " << seed;
    if (!low.tops.empty()) {
      ASSERT_FALSE(high.tops.empty()) << "seed " << seed;
      EXPECT_LE(high.tops.front().cost, low.tops.front().cost) << "seed " << seed;
    }
    const auto same = one_partition(0.1, seed, true, false);
    EXPECT_EQ(same.stats.blockings, low.stats.blockings) << "seed " << seed;
  }
  EXPECT_GE(compared, 3);
}

/// R as KAPLA's released random searcher draws it
/// (keep_per_factorization): one draw per factorisation, one per order
/// pair under a kept one, partitions kept with `partition_p`.
mapex::ndf::SearchOutput search_factorized(const ref::Setup& s, double p, std::uint64_t seed,
                                           bool at_least_one, double partition_p = 1) {
  SearchOptions so = s.options;
  so.keep_probability = p;
  so.keep_per_factorization = true;
  so.partition_probability = partition_p;
  so.keep_at_least_one = at_least_one;
  so.seed = seed;
  const auto& pr = s.problem;
  return mapex::ndf::search(pr.layer, pr.hw, pr.options, s.layouts, so);
}

TEST(RandomBlocking, PerFactorizationKeepsAboutPOfTheFactorisationsAndPSquaredOfTheBlockings) {
  // With every partition kept: of the factorisations R draws for, about p
  // are kept, and of the blockings about p^2 are scored (a factorisation's
  // draw, then one per order pair under it), against about p with one
  // draw per blocking; never below B. p = 1 is B.
  for (double p : {0.1, 0.3}) {
    std::uint64_t facts = 0, kept_facts = 0, scored = 0, left_out = 0;
    for (const auto& s : reference_setups()) {
      const auto b = search_sampled(s, 1, 0);
      const auto r = search_factorized(s, p, 1, false);
      EXPECT_EQ(r.stats.passes, b.stats.passes) << s.id;
      if (!r.tops.empty()) {
        EXPECT_GE(r.tops.front().cost, b.tops.front().cost * (1 - 1e-12)) << s.id;
      }
      // Nothing but blockings is left out, so the two add up to B's.
      EXPECT_EQ(r.stats.blockings + r.stats.sampled_out, b.stats.blockings) << s.id;
      facts += r.stats.factorizations;
      kept_facts += r.stats.factorizations_kept;
      scored += r.stats.blockings;
      left_out += r.stats.sampled_out;
    }
    ASSERT_GT(facts, 2000u);
    const double fact_share = static_cast<double>(kept_facts) / static_cast<double>(facts);
    const double share = static_cast<double>(scored) / static_cast<double>(scored + left_out);
    // Binomial over the factorisations: 5 standard deviations.
    EXPECT_NEAR(fact_share, p, 5 * std::sqrt(p * (1 - p) / static_cast<double>(facts))) << p;
    // Blockings share their factorisation's draw: wider bounds, but far
    // from p.
    EXPECT_GT(share, 0.8 * p * p) << p;
    EXPECT_LT(share, 1.25 * p * p) << p;
  }
  const auto setups = reference_setups();
  ASSERT_FALSE(setups.empty());
  const auto b = search_sampled(setups.front(), 1, 0);
  const auto all = search_factorized(setups.front(), 1, 3, true);
  EXPECT_EQ(all.stats.blockings, b.stats.blockings);
  EXPECT_EQ(all.stats.sampled_out, 0u);
  ASSERT_FALSE(all.tops.empty());
  EXPECT_EQ(all.tops.front().cost, b.tops.front().cost);
}

TEST(RandomBlocking, KeepAtLeastOneKeepsExactlyOneWhereTheDrawsKeepNone) {
  // At a probability so small that no draw keeps anything, each pass of
  // the one partition keeps one factorisation and, under it, one order
  // pair; without keep_at_least_one nothing is scored.
  const auto none = one_partition(1, 0, false, false);
  ASSERT_GT(none.stats.passes, 0u);
  auto tiny = [](bool at_least_one, std::uint64_t seed) {
    SearchOptions so;
    so.keep_probability = 1e-12;
    so.keep_per_factorization = true;
    so.partition_probability = 1e-12;
    so.keep_at_least_one = at_least_one;
    so.seed = seed;
    return one_partition_search(so);
  };
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto off = tiny(false, seed);
    EXPECT_EQ(off.stats.blockings, 0u) << seed;
    EXPECT_TRUE(off.tops.empty()) << seed;
    const auto on = tiny(true, seed);
    EXPECT_EQ(on.stats.passes, none.stats.passes) << seed;  // the one partition kept
    EXPECT_EQ(on.stats.factorizations_kept, on.stats.passes) << seed;
    EXPECT_EQ(on.stats.blockings, on.stats.passes) << seed;
    EXPECT_EQ(on.stats.blockings + on.stats.sampled_out, none.stats.blockings) << seed;
    const auto again = tiny(true, seed);
    EXPECT_EQ(again.stats.blockings, on.stats.blockings);
    if (!on.tops.empty()) {
      ASSERT_FALSE(again.tops.empty());
      EXPECT_EQ(again.tops.front().cost, on.tops.front().cost);
    }
  }
  // Partitions: on the reference layers with several, a partition
  // probability that keeps none keeps exactly one (blockings all kept, so
  // every one left out is a partition).
  int checked = 0;
  for (const auto& s : reference_setups()) {
    SearchOptions so = s.options;
    so.keep_probability = 1;
    so.partition_probability = 1e-12;
    const auto& pr = s.problem;
    so.keep_at_least_one = false;
    const auto off = mapex::ndf::search(pr.layer, pr.hw, pr.options, s.layouts, so);
    so.keep_at_least_one = true;
    const auto on = mapex::ndf::search(pr.layer, pr.hw, pr.options, s.layouts, so);
    EXPECT_EQ(off.stats.node_layers, 0u) << s.id;
    EXPECT_EQ(on.stats.node_layers, 1u) << s.id;
    ASSERT_GT(on.stats.partitions, 0u) << s.id;
    EXPECT_EQ(on.stats.sampled_out, on.stats.partitions - 1) << s.id;
    if (on.stats.partitions > 1) ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(RandomBlocking, KeepAtLeastOneOnlyAddsWhereADrawKeptNone) {
  // The draws are those without keep_at_least_one; one candidate is added
  // only where they keep none, so at the same seed at least as many
  // blockings are scored, every pass keeps a factorisation, and the best
  // is no worse.
  for (const auto& s : reference_setups()) {
    const auto off = search_factorized(s, 0.1, 2, false, 0.04);
    const auto on = search_factorized(s, 0.1, 2, true, 0.04);
    EXPECT_GE(on.stats.blockings, off.stats.blockings) << s.id;
    EXPECT_GE(on.stats.factorizations_kept, off.stats.factorizations_kept) << s.id;
    EXPECT_GE(on.stats.factorizations_kept, on.stats.passes) << s.id;
    EXPECT_GE(on.stats.node_layers, 1u) << s.id;
    if (!off.tops.empty()) {
      ASSERT_FALSE(on.tops.empty()) << s.id;
      EXPECT_LE(on.tops.front().cost, off.tops.front().cost) << s.id;
    }
  }
}

TEST(RandomBlocking, PerMemoryLevelKeepAtLeastOneKeepsOnePathPerPass) {
  // Drawn per memory level at a probability that keeps nothing: with
  // keep_at_least_one each pass keeps one REGF tile, one GBUF choice under
  // it and one DRAM order under that, so exactly one blocking per pass is
  // scored; without it none. At p = 0.1 it only adds where a level kept
  // none: at least the blockings of the plain draws, and a best no worse.
  auto tiny = [](bool at_least_one, std::uint64_t seed, double p) {
    SearchOptions so;
    so.keep_probability = p;
    so.keep_per_memory_level = true;
    so.partition_probability = 1;
    so.keep_at_least_one = at_least_one;
    so.seed = seed;
    return one_partition_search(so);
  };
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto off = tiny(false, seed, 1e-12);
    EXPECT_EQ(off.stats.blockings, 0u) << seed;
    const auto on = tiny(true, seed, 1e-12);
    ASSERT_GT(on.stats.passes, 0u);
    EXPECT_EQ(on.stats.blockings, on.stats.passes) << seed;
    const auto again = tiny(true, seed, 1e-12);
    EXPECT_EQ(again.stats.blockings, on.stats.blockings) << seed;
    ASSERT_EQ(again.tops.empty(), on.tops.empty()) << seed;
    if (!on.tops.empty()) {
      EXPECT_EQ(again.tops.front().cost, on.tops.front().cost) << seed;
    }
    const auto plain = tiny(false, seed, 0.1), one = tiny(true, seed, 0.1);
    EXPECT_GE(one.stats.blockings, plain.stats.blockings) << seed;
    if (!plain.tops.empty()) {
      ASSERT_FALSE(one.tops.empty()) << seed;
      EXPECT_LE(one.tops.front().cost, plain.tops.front().cost) << seed;
    }
  }
}

TEST(RandomBlocking, GapDrawKeepsAboutTheProbabilityAndOtherBlockings) {
  // keep_draw=gap: each blocking still kept with probability p (over the
  // reference layers about a tenth of scored plus left out at p = 0.1),
  // the same on every run of a seed, but other blockings than one draw
  // per blocking keeps for that seed; never below B.
  std::uint64_t scored = 0, left_out = 0;
  int differ = 0;
  for (const auto& s : reference_setups()) {
    const auto b = search_sampled(s, 1, 0);
    const auto g = search_sampled(s, 0.1, 1, false, true);
    const auto again = search_sampled(s, 0.1, 1, false, true);
    const auto each = search_sampled(s, 0.1, 1);
    EXPECT_EQ(g.stats.blockings, again.stats.blockings) << s.id;
    EXPECT_EQ(g.stats.sampled_out, again.stats.sampled_out) << s.id;
    if (g.stats.blockings != each.stats.blockings) ++differ;
    if (!g.tops.empty()) {
      EXPECT_GE(g.tops.front().cost, b.tops.front().cost * (1 - 1e-12)) << s.id;
      EXPECT_EQ(g.tops.front().cost, again.tops.front().cost) << s.id;
    }
    scored += g.stats.blockings;
    left_out += g.stats.sampled_out;
  }
  ASSERT_GT(scored + left_out, 1000u);
  const double kept = static_cast<double>(scored) / static_cast<double>(scored + left_out);
  EXPECT_GT(kept, 0.08);
  EXPECT_LT(kept, 0.12);
  EXPECT_GT(differ, 0);
}

}  // namespace
