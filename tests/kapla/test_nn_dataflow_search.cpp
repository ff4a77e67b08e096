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

/// Reference layers outside the model, with the reason it gives.
const std::map<std::string, std::string> kExcluded{
    // nn_dataflow's PoolingLayer (LocalRegionLayer): no filters, its own
    // PE mapping; the model scores convolution and FC layers only.
    {"sm4_ex_pool_512_e14_r3_b4", "a pool layer"},
};

/// How far the best found may sit from nn_dataflow's best.
constexpr double kTolerance = 0.03;

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
