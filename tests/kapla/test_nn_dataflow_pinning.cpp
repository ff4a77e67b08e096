// nn_dataflow's filter pinning (LoopBlockingScheme with Resource.no_time_mux,
// set by PipelineSegment on a segment holding the whole network): filters
// whose loops above the GBUF are all trivial stay in the GBUFs across runs
// and cost no DRAM reads nor hops from memory; nothing else changes. Checked
// on the model, on the architecture file key, and on whole-network
// schedules, where only a segment holding every layer pins.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/network.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>
#include <mapex/schedule.hpp>

#include "host/plugin_registry.hpp"
#include "inter_layer.hpp"

namespace mapex {
namespace {

namespace fs = std::filesystem;
const fs::path kData = MAPEX_TEST_DATA_DIR;

const host::PluginRegistry& registry() {
  static const host::PluginRegistry r = host::load_plugins();
  return r;
}

const char* kTwoLayers = R"(
network: pinning
batch: 4
layers:
  - {name: a, type: fc, C: 512, K: 512, inputs: []}
  - {name: b, type: fc, C: 512, K: 256}
)";

/// Every loop over the filters trivial above the GBUF.
bool pinnable(const ndf::Scheme& s, const ndf::Result& r) {
  for (size_t l = 0; l < 3; ++l)
    if (r.nld.data_loops[ndf::kFil][l] && s.blocking.t[0][l] != 1) return false;
  return true;
}

TEST(NnDataflowPinning, OnlyFiltersKeptWholeInTheGbufsAreNotFetched) {
  const Network net = Network::parse(kTwoLayers, "pinning.yaml");
  const Architecture arch = Architecture::load((kData / "nn_dataflow/sm4.yaml").string());
  ndf::Problem pr;
  ASSERT_FALSE(ndf::make_problem(net.layers()[0].op, arch, "", "", "on", pr));
  EXPECT_FALSE(pr.hw.no_time_mux);
  ndf::SearchOptions so;
  so.hybrid = so.batch = true;
  so.ntops = 200;
  const auto found = ndf::search(pr.layer, pr.hw, pr.options, {pr.ifmaps}, so);
  ASSERT_FALSE(found.tops.empty());
  ndf::Hardware pinned_hw = pr.hw;
  pinned_hw.no_time_mux = true;
  int pinned = 0, kept = 0;
  for (const auto& f : found.tops) {
    const ndf::Result plain = ndf::evaluate(pr.layer, pr.hw, pr.options, f.scheme, pr.ifmaps);
    const ndf::Result pin = ndf::evaluate(pr.layer, pinned_hw, pr.options, f.scheme, pr.ifmaps);
    ASSERT_TRUE(plain.valid && pin.valid) << plain.reason << pin.reason;
    ASSERT_GT(plain.access[ndf::kDram][ndf::kFil], 0);
    for (int m = 0; m < 4; ++m)
      for (int d = 0; d < 3; ++d) {
        if (m == ndf::kDram && d == ndf::kFil) continue;
        EXPECT_EQ(plain.access[static_cast<size_t>(m)][static_cast<size_t>(d)],
                  pin.access[static_cast<size_t>(m)][static_cast<size_t>(d)]);
      }
    EXPECT_EQ(plain.nhops[ndf::kIfm], pin.nhops[ndf::kIfm]);
    EXPECT_EQ(plain.nhops[ndf::kOfm], pin.nhops[ndf::kOfm]);
    if (pinnable(f.scheme, plain)) {
      ++pinned;
      EXPECT_EQ(pin.fetch[0][ndf::kFil], 0);
      EXPECT_EQ(pin.access[ndf::kDram][ndf::kFil], 0);
      EXPECT_EQ(pin.nhops[ndf::kFil], 0);
      EXPECT_LT(pin.cost(), plain.cost());
    } else {
      ++kept;
      EXPECT_EQ(pin.access[ndf::kDram][ndf::kFil], plain.access[ndf::kDram][ndf::kFil]);
      EXPECT_EQ(pin.cost(), plain.cost());
    }
  }
  EXPECT_GT(pinned, 0);
  EXPECT_GT(kept, 0);
  // The search ranks with pinning: never worse than without.
  const auto best = ndf::search(pr.layer, pinned_hw, pr.options, {pr.ifmaps}, so);
  ASSERT_FALSE(best.tops.empty());
  EXPECT_LE(best.tops.front().cost, found.tops.front().cost);
}

TEST(NnDataflowPinning, TheArchitectureKeyReachesTheModel) {
  const std::string base = (kData / "nn_dataflow/sm4.yaml").string();
  const Architecture plain = Architecture::load(base);
  EXPECT_FALSE(plain.no_time_mux());
  const Architecture pinned = plain.with_no_time_mux(true);
  EXPECT_TRUE(pinned.no_time_mux());
  EXPECT_NE(plain.content_hash(), pinned.content_hash());
  EXPECT_EQ(plain.content_hash(), pinned.with_no_time_mux(false).content_hash());
  std::ifstream in(base);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Architecture parsed = Architecture::parse(text + "no_time_mux: true\n", "pinned.yaml");
  EXPECT_TRUE(parsed.no_time_mux());
  EXPECT_EQ(parsed.content_hash(), pinned.content_hash());
  ndf::Problem pr;
  const Network net = Network::parse(kTwoLayers, "pinning.yaml");
  ASSERT_FALSE(ndf::make_problem(net.layers()[0].op, parsed, "", "", "on", pr));
  EXPECT_TRUE(pr.hw.no_time_mux);
  try {
    Architecture::parse(text + "no_time_mux: sometimes\n", "bad.yaml");
    ADD_FAILURE() << "a non-boolean no_time_mux was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("key 'no_time_mux': expected true or false"), std::string::npos) << what;
  }
}

/// The two-layer network scheduled in nn_dataflow's space and model, with
/// exhaustive search at both levels.
NetworkSchedule schedule(int max_segment_layers, bool pinning,
                         const std::string& model_name = "nn_dataflow") {
  const Network net = Network::parse(kTwoLayers, "pinning.yaml");
  const Architecture arch = Architecture::load((kData / "nn_dataflow/sm4.yaml").string());
  const auto model = registry().make_costmodel("tensor_centric", {{"model", model_name}});
  const auto intra = registry().make_searcher(
      "nn_dataflow", {{"hybrid_partition", "true"}, {"batch_partition", "true"}});
  ScheduleOptions o;
  o.inter_layer = InterLayerSearch::kExhaustive;
  o.max_segment_layers = max_segment_layers;
  o.filter_pinning = pinning;
  // The nn_dataflow searcher scores only in nn_dataflow's model; under
  // another, the scheduler's own solver.
  if (model_name == "nn_dataflow")
    o.intra_layer = [&](SearchContext& ctx) { return intra->search(ctx); };
  return kapla::schedule_network(net, arch, *model, o);
}

TEST(NnDataflowPinning, OnlyASegmentHoldingTheWholeNetworkPins) {
  // Layer by layer no segment holds the whole network: pinning changes
  // nothing. With both layers in one segment it may only help, and here it
  // does: the segment's layers no longer read their filters from DRAM.
  const auto lbl = schedule(1, true), lbl_off = schedule(1, false);
  ASSERT_TRUE(lbl.valid && lbl_off.valid) << lbl.invalid_reason << lbl_off.invalid_reason;
  EXPECT_EQ(lbl.energy_pj, lbl_off.energy_pj);
  const auto both = schedule(2, true), both_off = schedule(2, false);
  ASSERT_TRUE(both.valid && both_off.valid) << both.invalid_reason << both_off.invalid_reason;
  EXPECT_LT(both.energy_pj, both_off.energy_pj);
  ASSERT_EQ(both.segments.size(), 1u);
  EXPECT_EQ(both.segments[0].layers.size(), 2u);
  EXPECT_LE(both_off.energy_pj, lbl_off.energy_pj);
}

TEST(NnDataflowPinning, AModelThatDoesNotPinGetsNoPinnedSolves) {
  // KAPLA's own model does not read no_time_mux: the whole-network segment
  // is solved, bounded and scored as without pinning.
  const auto on = schedule(2, true, "kapla"), off = schedule(2, false, "kapla");
  ASSERT_TRUE(on.valid && off.valid) << on.invalid_reason << off.invalid_reason;
  EXPECT_EQ(on.energy_pj, off.energy_pj);
  ASSERT_EQ(on.segments.size(), off.segments.size());
  for (size_t i = 0; i < on.segments.size(); ++i) {
    EXPECT_EQ(on.segments[i].estimate_energy_pj, off.segments[i].estimate_energy_pj);
    for (size_t l = 0; l < on.segments[i].layers.size(); ++l)
      EXPECT_EQ(on.segments[i].layers[l].mapping_yaml, off.segments[i].layers[l].mapping_yaml);
  }
}

}  // namespace
}  // namespace mapex
