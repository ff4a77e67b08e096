// engine::top_ingress (costmodels/mdc/engine.cpp): the top level's input
// words under every order of its directives from one table, the part of
// mdc's energy that L2's order moves (mdc.cpp, least_onchip_energy_pj).
// Checked on sampled mappings of real layers on Marvel's P2 and FLASH's
// Edge chip against the analysis of the same mappings with L2's order
// shuffled, and its least over the orders against every order of L2.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/mdc.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine.hpp"

namespace mapex::mdc {
namespace {

/// The analysis of a mapping, with its plan; nullopt where the lowering or
/// the analysis refuses it.
struct Analysed {
  engine::Plan plan;
  Result result;
};
std::optional<Analysed> analyse_mapping(const Operator& op, const Architecture& arch,
                                        const Mapping& m) {
  try {
    const Lowered lowered = from_mapping(op, arch, m);
    Analysed a;
    a.plan = engine::compile(lowered.layer, lowered.hardware, op.find_dim("N") >= 0);
    a.result = engine::analyse(a.plan);
    return a;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

/// The figures of a result that L2's order must leave alone for the energy
/// (everything the energy reads but the inputs' L2 reads and L1 writes).
std::vector<double> order_free_counts(const Result& r) {
  return {r.num_macs,     r.input_l2_wr, r.filter_l2_wr, r.output_l2_rd,
          r.output_l2_wr, r.input_l1_rd, r.filter_l1_rd, r.output_l1_rd,
          r.output_l1_wr, r.l2_size_req, r.l1_size_req};
}

/// The engine's dimension of an operator dimension (a convolution's output
/// rows and columns are MAESTRO's input ones at the top level).
int engine_dim(const std::string& name) {
  if (name == "N") return engine::kN;
  if (name == "K") return engine::kK;
  if (name == "C") return engine::kC;
  if (name == "R") return engine::kR;
  if (name == "S") return engine::kS;
  if (name == "P") return engine::kY;
  if (name == "Q") return engine::kX;
  if (name == "M") return engine::kM;
  return -1;
}

/// The top directives (bit i) that Algorithm 1's lowering keeps after the
/// top level's SpatialMap: the other split dimensions that are not filter
/// windows (mdc.cpp, least_onchip_energy_pj).
unsigned after_spatial(const Operator& op, const Mapping& m, const engine::Level& top) {
  unsigned mask = 0;
  const auto& split = m.level(1).split;
  for (std::size_t d = 0; d < op.dims().size(); ++d) {
    const auto& name = op.dims()[d].name;
    if (split.empty() || split[d] <= 1 || name == "R" || name == "S") continue;
    for (int i = 0; i < top.num_dirs; ++i)
      if (!top.dirs[i].spatial && top.dirs[i].dim == engine_dim(name)) mask |= 1U << i;
  }
  return mask;
}

/// The order of `plan`'s top directives as indices into `base`'s, when both
/// have the SpatialMap on the same dimension; empty otherwise.
std::vector<int> as_base_order(const engine::Level& base, const engine::Level& top) {
  std::vector<int> order;
  if (top.num_dirs != base.num_dirs) return {};
  for (int k = 0; k < top.num_dirs; ++k) {
    int at = -1;
    for (int i = 0; i < base.num_dirs; ++i)
      if (base.dirs[i].dim == top.dirs[k].dim) at = i;
    if (at < 0 || base.dirs[at].spatial != top.dirs[k].spatial) return {};
    order.push_back(at);
  }
  return order;
}

TEST(MdcTopIngress, GivesTheInputWordsOfEveryOrderOfL2) {
  int checked = 0, exact = 0, shuffled = 0, two_splits = 0, other_l2_size = 0;
  for (const std::string chip : {"marvel_p2", "flash_edge"}) {
    const Architecture arch =
        Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/" + chip + ".yaml");
    const int l2 = arch.num_levels() - 2;
    for (const Operator& op :
         {make_conv2d("c3", Conv2dShape{1, 48, 40, 28, 28, 3, 3, 1, 1, 1, 1}),
          make_conv2d("s2", Conv2dShape{1, 32, 64, 28, 28, 3, 3, 2, 2, 1, 1}),
          make_conv2d("pw", Conv2dShape{1, 64, 96, 14, 14, 1, 1}), make_gemm("g", 96, 40, 72)}) {
      MapspaceOptions options;
      options.factors_only = true;
      const Mapspace space(op, arch, options);
      std::mt19937_64 rng(17);
      for (int k = 0; k < 50; ++k) {
        const auto m = space.sample(rng, 50);
        if (!m) continue;
        const auto base = analyse_mapping(op, arch, *m);
        if (!base) continue;
        ++checked;
        const engine::TopIngress table = engine::top_ingress(base->plan);
        if (!table.exact) continue;
        ++exact;
        const engine::Level& top = base->plan.levels[0];
        if (std::popcount(after_spatial(op, *m, top)) > 0) ++two_splits;
        std::vector<int> own(static_cast<std::size_t>(table.num_dirs));
        std::iota(own.begin(), own.end(), 0);
        std::int64_t words[2];
        engine::top_input_words(table, own.data(), words);
        EXPECT_EQ(static_cast<double>(words[0]), base->result.input_l2_rd) << m->summary(op, arch);
        EXPECT_EQ(static_cast<double>(words[1]), base->result.filter_l2_rd);
        EXPECT_EQ(base->result.input_l1_wr, base->result.input_l2_rd);
        EXPECT_EQ(base->result.filter_l1_wr, base->result.filter_l2_rd);
        // The output's L2 writes: its size times the top steps over the
        // dimensions it lacks (mdc.cpp, output_writes_from_steps_pj).
        double output_words = 1, reduction_steps = 1;
        for (std::size_t d = 0; d < op.dims().size(); ++d) {
          const auto& dim = op.dims()[d];
          if (op.output().relevant(static_cast<DimId>(d))) {
            output_words *= static_cast<double>(dim.bound);
          } else if (dim.name != "R" && dim.name != "S") {
            const auto& split = m->level(1).split;
            const std::int64_t span = m->level(0).tile[d] * (split.empty() ? 1 : split[d]);
            reduction_steps *= static_cast<double>(dim.bound / span);
          }
        }
        EXPECT_EQ(base->result.output_l2_wr, output_words * reduction_steps)
            << m->summary(op, arch);
        const double unit[2] = {1, 1};
        const double least = engine::least_top_input_cost(table, unit, 0);
        EXPECT_LE(least, static_cast<double>(words[0] + words[1]));
        for (int trial = 0; trial < 8; ++trial) {
          Mapping other = *m;
          auto& order = other.level(l2).order;
          std::shuffle(order.begin(), order.end(), rng);
          const auto x = analyse_mapping(op, arch, other);
          ASSERT_TRUE(x.has_value()) << other.summary(op, arch);
          const auto at = as_base_order(top, x->plan.levels[0]);
          if (at.empty()) {
            // Another split dimension heads the top level: MAESTRO sizes L2
            // from the top's first case, so the size (and so whether the
            // mapping fits) may differ (mdc.cpp, one_top_choice).
            if (x->result.l2_size_req != base->result.l2_size_req) ++other_l2_size;
            continue;
          }  // another split dimension heads the top level
          engine::top_input_words(table, at.data(), words);
          EXPECT_EQ(static_cast<double>(words[0]), x->result.input_l2_rd)
              << other.summary(op, arch);
          EXPECT_EQ(static_cast<double>(words[1]), x->result.filter_l2_rd);
          EXPECT_EQ(order_free_counts(x->result), order_free_counts(base->result));
          EXPECT_LE(least, static_cast<double>(words[0] + words[1]));
          ++shuffled;
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
  // Spaces of divisors: no top directive has an edge, so the table holds.
  EXPECT_EQ(exact, checked);
  EXPECT_GT(shuffled, 800);
  EXPECT_GT(two_splits, 50);
  EXPECT_GT(other_l2_size, 0);
}

/// least_top_input_cost is the least over exactly the orders of L2 that
/// keep the top level's SpatialMap (the first split dimension of the order
/// that is not a filter window): every order of L2 analysed, on mappings
/// that split two and three dimensions.
TEST(MdcTopIngress, LeastCostIsTheLeastOverEveryOrderOfL2) {
  const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/marvel_p2.yaml");
  const int l2 = 2;
  int compared = 0;
  for (const Operator& op : {make_conv2d("c3", Conv2dShape{1, 16, 8, 14, 14, 3, 3, 1, 1, 1, 1}),
                             make_gemm("g", 96, 40, 72)}) {
    MapspaceOptions options;
    options.factors_only = true;
    const Mapspace space(op, arch, options);
    std::mt19937_64 rng(3);
    int done = 0;
    for (int k = 0; k < 400 && done < 3; ++k) {
      const auto m = space.sample(rng, 50);
      if (!m) continue;
      const auto base = analyse_mapping(op, arch, *m);
      if (!base) continue;
      const engine::TopIngress table = engine::top_ingress(base->plan);
      const engine::Level& top = base->plan.levels[0];
      const unsigned after = after_spatial(op, *m, top);
      if (!table.exact || after == 0) continue;
      const double cost[2] = {3, 5};  // unequal, so that the tensors' shares matter
      const double least = engine::least_top_input_cost(table, cost, after);
      double brute = std::numeric_limits<double>::infinity();
      Mapping other = *m;
      auto& order = other.level(l2).order;
      std::sort(order.begin(), order.end());
      do {
        const auto x = analyse_mapping(op, arch, other);
        ASSERT_TRUE(x.has_value());
        if (as_base_order(top, x->plan.levels[0]).empty()) continue;
        brute = std::min(brute, cost[0] * x->result.input_l2_rd + cost[1] * x->result.filter_l2_rd);
      } while (std::next_permutation(order.begin(), order.end()));
      EXPECT_EQ(least, brute) << m->summary(op, arch);
      ++done;
      ++compared;
    }
  }
  EXPECT_GE(compared, 4);
}

}  // namespace
}  // namespace mapex::mdc
