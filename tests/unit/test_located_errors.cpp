// Issue 18, "Every message of a text input has file:line:column": errors
// found after a workload is loaded, where only the operator is at hand
// (its mapspace cannot be built, a metric overflows), are placed at the
// layer's entry in its workload file.

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <mapex/layer_location.hpp>
#include <mapex/network.hpp>
#include <mapex/search.hpp>
#include <vector>

#include "host/runner.hpp"
#include "input_error.hpp"
#include "test_chips.hpp"

namespace mapex {
namespace {

using test::input_error_of;

std::string at(const SourceLocation& w) {
  return w.file + ":" + std::to_string(w.line) + ":" + std::to_string(w.column);
}

const std::string kTwoLayers =
    "network: n\n"
    "layers:\n"
    "  - {name: a, type: gemm, M: 2, N: 2, K: 2}\n"
    "  - name: b\n"
    "    type: gemm\n"
    "    M: 2\n"
    "    N: 2\n"
    "    K: 2\n";

TEST(LocatedErrors, LayerLocationIsTheEntryAndBackwardLayersTheirForwardLayers) {
  EXPECT_EQ(at(layer_location(kTwoLayers, "n.yaml", "a")), "n.yaml:3:5");
  EXPECT_EQ(at(layer_location(kTwoLayers, "n.yaml", "b")), "n.yaml:4:5");
  EXPECT_EQ(at(layer_location(kTwoLayers, "n.yaml", "b.bwd_data")), "n.yaml:4:5");
  EXPECT_EQ(at(layer_location(kTwoLayers, "n.yaml", "a.bwd_weight")), "n.yaml:3:5");
  // No such entry, or not a workload of that shape: the start of the file.
  EXPECT_EQ(at(layer_location(kTwoLayers, "n.yaml", "c")), "n.yaml:1:1");
  EXPECT_EQ(at(layer_location("Network n {\n", "n.m", "a")), "n.m:1:1");
  EXPECT_EQ(at(layer_file_location("/nonexistent/n.yaml", "a")), "/nonexistent/n.yaml:1:1");
}

TEST(LocatedErrors, PlacedAtKeepsAnErrorThatHasAPlace) {
  const InputError located(SourceLocation{"x.yaml", 2, 3}, "k", "bad");
  const InputError loose(SourceLocation{}, "k", "bad");
  const SourceLocation layer{"n.yaml", 4, 5};
  EXPECT_STREQ(placed_at(located, layer).what(), "x.yaml:2:3: key 'k': bad");
  EXPECT_STREQ(placed_at(loose, layer).what(), "n.yaml:4:5: key 'k': bad");
  EXPECT_STREQ(placed_at(loose, SourceLocation{}).what(), "key 'k': bad");
}

// The mapspace and a metric refuse without a place (they know no file);
// run_search, which every job and `mapex search` go through, places them.
class OneTrivialMapping final : public Searcher {
 public:
  SearchOutcome search(SearchContext& ctx) const override {
    const std::vector<Mapping> batch{Mapping::trivial(ctx.op(), ctx.arch())};
    (void)ctx.evaluate(batch);
    return {true, "done"};
  }
};

class InfiniteEnergyModel final : public CostModel {
  class Bound final : public BoundCostModel {
   public:
    Metrics evaluate(const Mapping&) const override {
      Metrics out;
      out.valid = true;
      out.latency_cycles = 1;
      out.energy_pj = std::numeric_limits<double>::infinity();
      return out;
    }
  };

 public:
  std::unique_ptr<BoundCostModel> bind(const Operator&, const Architecture&) const override {
    return std::make_unique<Bound>();
  }
};

class LocatedSearchErrors : public ::testing::Test {
 protected:
  host::JobResult search(const std::string& workload_text, ConstraintSpec spec = {}) {
    path_ = ::testing::TempDir() + "located_errors_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
    std::ofstream(path_) << workload_text;
    net_ = Network::load(path_);
    host::SearchRequest r;
    r.op = &net_.layers().back().op;
    r.arch = &arch_;
    r.searcher = &searcher_;
    r.costmodel = &model_;
    r.mapspace = std::move(spec);
    r.budget = Budget{1, 0};
    r.workload_path = path_;
    return host::run_search(r);
  }

  std::string path_;
  Network net_;
  Architecture arch_ = test::chip({2});
  OneTrivialMapping searcher_;
  InfiniteEnergyModel model_;
};

TEST_F(LocatedSearchErrors, NonFiniteMetricIsPlacedAtTheLayer) {
  const auto r = search(kTwoLayers);
  EXPECT_EQ(r.status, host::JobStatus::kFailed);
  EXPECT_TRUE(r.bad_input);
  EXPECT_EQ(r.error.rfind(path_ + ":4:5: layer 'b' on architecture '", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("energy_pj = inf"), std::string::npos) << r.error;
}

TEST_F(LocatedSearchErrors, MapspaceOfMoreThan24DimensionsIsPlacedAtTheLayer) {
  std::string dims, subscripts;
  for (int d = 0; d < 25; ++d) {
    dims += (d ? ", D" : "D") + std::to_string(d) + ": 1";
    subscripts += (d ? ", D" : "D") + std::to_string(d);
  }
  const auto r = search("network: n\nlayers:\n  - name: wide\n    type: loopnest\n    dims: {" +
                        dims + "}\n    tensors:\n      - {name: In, role: input, subscripts: [" +
                        subscripts + "]}\n      - {name: Out, role: output, subscripts: [D0]}\n");
  EXPECT_EQ(
      r.error.rfind(path_ + ":3:5: key 'dims': operator 'wide' has more than 24 dimensions", 0), 0u)
      << r.error;
}

TEST_F(LocatedSearchErrors, TooManyTileChainsArePlacedAtTheLayerNamingTheDimension) {
  ConstraintSpec edge;
  edge.factors_only = false;
  const auto r =
      search("network: n\nlayers:\n  - {name: g, type: gemm, M: 2147483648, N: 1, K: 1}\n", edge);
  EXPECT_EQ(r.error.rfind(path_ + ":3:5: key 'M': layer 'g': dimension 'M' (bound 2147483648) has "
                                  "more than 2000000 tile chains",
                          0),
            0u)
      << r.error;
}

}  // namespace
}  // namespace mapex
