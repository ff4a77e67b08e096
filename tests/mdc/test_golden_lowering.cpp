// Golden test of the lowering (Marvel, TACO 2021, §4, Algorithm 1;
// `mapex::mdc::from_mapping`) against real MAESTRO outputs: every
// (case, layer) row of refdata/maestro whose dataflow a canonical mapping
// can express is written as a canonical mapping on a chip with the case's
// hardware (L1 per PE / PE array / L2 / DRAM), lowered, and analysed; the
// result must reproduce MAESTRO's numbers for that row (maestro_compat, the
// mode that reproduces MAESTRO, on every target column within 1%), and the
// default (true) analysis of the lowered directives must equal that of the
// case's own directives.
//
// A dataflow is written as a canonical mapping by reading its directives:
// the SpatialMap of each cluster level is a split of the PE array over that
// level's units (the top level's units are MAESTRO's num_pes / cluster
// sizes), the innermost level's tiles are the L1 tile, and the top level's
// TemporalMaps give L2's loop order over L1 tiles. What a canonical
// mapping cannot say is listed in `NotExpressible` reasons below and in
// costmodels/mdc/README.md ("Lowering golden test"); the test prints the
// count of rows per reason and fails if a reason it does not know appears.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mdc.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "engine.hpp"
#include "maestro_index.hpp"

namespace mapex::mdc {
namespace {

const std::string kRef = MAPEX_MAESTRO_REFDATA;

using maestro_ref::hardware_of;
using maestro_ref::num;
using maestro_ref::Row;

std::vector<Row> read_index() { return maestro_ref::read_index(kRef); }

// Why a row's dataflow has no canonical form; the message is the reason's
// key in the summary (and in the README).
struct NotExpressible {
  std::string reason;
};

// A MAESTRO chip as a mapex architecture: 1 GHz and 1-byte words, so that
// GB/s are elements per cycle and buffer bytes are elements.
Architecture chip_of(const Hardware& hw) {
  auto buffer = [](const char* name, std::int64_t elements) {
    Level l;
    l.name = name;
    l.kind = LevelKind::kBuffer;
    l.size_bytes = elements;
    return l;
  };
  Level pes;
  pes.name = "PEs";
  pes.kind = LevelKind::kSpatial;
  pes.shape = {hw.num_pes};
  pes.noc.bandwidth_gbps = static_cast<double>(hw.noc_bw);
  pes.noc.latency_cycles = static_cast<double>(hw.noc_latency);
  Level dram;
  dram.name = "DRAM";
  dram.kind = LevelKind::kDram;
  dram.bandwidth_gbps = static_cast<double>(hw.offchip_bw);
  return Architecture::make("maestro", 1000, 8, 1, static_cast<int>(hw.simd_lanes),
                            {buffer("L1", hw.l1_size), pes, buffer("L2", hw.l2_size), dram});
}

Operator operator_of(const Layer& l) {
  switch (l.type) {
    case LayerType::kGemm:
      return make_gemm(l.name, l.dim("M"), l.dim("N"), l.dim("K"));
    case LayerType::kConv:
    case LayerType::kDsconv: {
      const std::int64_t R = l.dim("R"), S = l.dim("S");
      std::int64_t H = l.dim("Y"), W = l.dim("X");
      if (l.dim("Y'") > 0) H = (l.dim("Y'") - 1) * l.stride_y + R;
      if (l.dim("X'") > 0) W = (l.dim("X'") - 1) * l.stride_x + S;
      // An operator's input is what its windows read: rows past the last
      // window are not in it (MAESTRO keeps them in the input tensor).
      if ((H - R) % l.stride_y != 0 || (W - S) % l.stride_x != 0)
        throw NotExpressible{"input rows no window reads"};
      Conv2dShape s;
      s.N = std::max<std::int64_t>(l.dim("N"), 1);
      s.C = l.dim("C");
      s.K = l.type == LayerType::kDsconv ? s.C : l.dim("K");
      s.groups = l.type == LayerType::kDsconv ? s.C : 1;
      s.H = H;
      s.W = W;
      s.R = R;
      s.S = S;
      s.stride_h = l.stride_y;
      s.stride_w = l.stride_x;
      return make_conv2d(l.name, s);
    }
    default:
      throw NotExpressible{"layer type without a canonical operator (NGCONV, TRCONV)"};
  }
}

// Writes the case's dataflow as a canonical mapping (see the file comment).
Mapping mapping_of(const Layer& l, const Hardware& hw, const Operator& op, const Architecture& arch,
                   std::int64_t* busy_pes) {
  const bool window_dims = l.type != LayerType::kGemm;
  auto op_dim = [&](const std::string& d) -> DimId {
    std::string name = d;
    if (window_dims && (d == "Y" || d == "Y'")) name = "P";
    if (window_dims && (d == "X" || d == "X'")) name = "Q";
    const DimId id = op.find_dim(name);
    if (id < 0) throw NotExpressible{"directive on a dimension the operator lacks"};
    return id;
  };
  auto bound = [&](DimId d) { return op.dims()[static_cast<std::size_t>(d)].bound; };
  auto name_of = [&](DimId d) { return op.dims()[static_cast<std::size_t>(d)].name; };
  const auto n = static_cast<std::size_t>(op.num_dims());

  // Cluster levels, outermost first.
  std::vector<std::vector<Directive>> levels(1);
  std::vector<std::int64_t> cluster_size{1};
  for (const auto& d : l.dataflow) {
    if (d.kind == DirectiveKind::kCluster) {
      levels.emplace_back();
      cluster_size.push_back(d.size);
    } else {
      levels.back().push_back(d);
    }
  }
  std::int64_t below = 1;
  for (std::size_t g = 1; g < cluster_size.size(); ++g) below *= cluster_size[g];
  const std::int64_t top_units = hw.num_pes / below;

  // Output positions (P, Q) of a window map given in input rows: what
  // MAESTRO's stride rewrite makes of it (§III-B), or the lock-step rows of
  // a filter split, (o-1)*stride + filter tile.
  auto outputs = [&](const Directive& d, std::int64_t filter_tile, bool lock_step) {
    const bool rows = d.dim == "Y";
    const std::int64_t s = rows ? l.stride_y : l.stride_x;
    const std::int64_t R = l.dim(rows ? "R" : "S");
    if (lock_step) {
      if ((d.size - filter_tile) % s != 0 || d.offset != filter_tile)
        throw NotExpressible{"lock-step rows that do not follow the filter split"};
      return (d.size - filter_tile) / s + 1;
    }
    if (d.size < R) throw NotExpressible{"window map narrower than the filter"};
    const std::int64_t o = (d.size - R) / s + 1;
    // Stride 1: MAESTRO keeps the offset as written; it must move by the
    // tile's outputs for the tiles to be a tiling. Larger strides are
    // rewritten to o*stride by MAESTRO (and by the lowering).
    if (s == 1 && d.offset != o) throw NotExpressible{"window tiles that overlap or skip outputs"};
    return o;
  };

  std::vector<std::int64_t> l1(n, 0), split(n, 1);
  std::vector<int> split_level(n, -1);
  std::vector<DimId> order, inner_splits;
  std::vector<std::int64_t> top_tile(n, 0);
  for (std::size_t g = 0; g < levels.size(); ++g) {
    const auto& dirs = levels[g];
    std::vector<const Directive*> sp;
    for (const auto& d : dirs)
      if (d.kind == DirectiveKind::kSpatialMap) sp.push_back(&d);
    if (sp.empty()) throw NotExpressible{"cluster level without a SpatialMap"};
    // The level's split: its SpatialMap, or with two, the filter dimension
    // of an input-row / filter-row pair (row stationary).
    const Directive* main = sp[0];
    const Directive* rows = nullptr;
    if (sp.size() == 2) {
      auto pair = [&](const Directive* a, const Directive* b) {
        return (a->dim == "Y" && b->dim == "R") || (a->dim == "X" && b->dim == "S");
      };
      if (pair(sp[0], sp[1])) {
        main = sp[1];
        rows = sp[0];
      } else if (pair(sp[1], sp[0])) {
        rows = sp[1];
      } else {
        throw NotExpressible{"two SpatialMaps that are not input rows with filter rows"};
      }
      if (g == 0) throw NotExpressible{"input rows with filter rows at the top level"};
    }
    const std::int64_t units = g == 0 ? top_units : cluster_size[g];
    for (const auto& d : dirs) {
      const bool is_rows = &d == rows;
      const DimId id = op_dim(d.dim);
      std::int64_t tile = d.size;
      const bool window = window_dims && (d.dim == "Y" || d.dim == "X");
      if (window) {
        const std::int64_t filter = l.dim(d.dim == "Y" ? "R" : "S");
        tile = outputs(d, is_rows ? main->size : filter, is_rows);
      } else if (d.offset != d.size) {
        throw NotExpressible{"tiles that overlap or skip indices (offset != size)"};
      }
      tile = std::min(tile, bound(id));
      if (is_rows) continue;  // the rows follow the filter split
      const bool spatial = d.kind == DirectiveKind::kSpatialMap;
      if (g == 0) {
        order.push_back(id);
        top_tile[static_cast<std::size_t>(id)] = tile;
      } else if (!spatial && tile != l1[static_cast<std::size_t>(id)]) {
        // Below the top level a canonical mapping has no loops: each level
        // hands its units their whole tile (Algorithm 1's inner regions).
        throw NotExpressible{"temporal loop inside a cluster level"};
      }
      if (spatial) {
        if (split_level[static_cast<std::size_t>(id)] >= 0)
          throw NotExpressible{"one dimension split at two cluster levels"};
        split_level[static_cast<std::size_t>(id)] = static_cast<int>(g);
        // Units past the dimension's end are idle; a canonical split names
        // only the units that get a tile.
        split[static_cast<std::size_t>(id)] = std::min(units, (bound(id) + tile - 1) / tile);
        // Algorithm 1 makes a region of each parallel loop; a level of one
        // unit is no parallel loop, and MAESTRO charges it as a level.
        if (levels.size() > 1 && split[static_cast<std::size_t>(id)] == 1)
          throw NotExpressible{"a cluster level of one unit"};
        if (g > 0) inner_splits.push_back(id);
      }
      l1[static_cast<std::size_t>(id)] = tile;
    }
    // Dimensions the level does not name keep their tile (inherited).
  }
  for (DimId d = 0; d < op.num_dims(); ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (l1[i] == 0) {  // never mapped: whole, placed last (MAESTRO's filling in)
      l1[i] = top_tile[i] = bound(d);
      order.push_back(d);
    }
  }
  // Remove a second mention (Y and Y' both name P, say).
  std::vector<DimId> unique_order;
  for (DimId d : order)
    if (std::find(unique_order.begin(), unique_order.end(), d) == unique_order.end())
      unique_order.push_back(d);
  order = unique_order;
  // The top level walks each dimension by the span of the level below it:
  // a cluster's split times its tile. Anything else would be a fold inside
  // a cluster, which the canonical PE split has not.
  for (DimId d = 0; d < op.num_dims(); ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (split_level[i] == 0) continue;
    const std::int64_t span = std::min(l1[i] * split[i], bound(d));
    const bool filter = window_dims && (name_of(d) == "R" || name_of(d) == "S");
    if (top_tile[i] != span && !(filter && top_tile[i] == bound(d)))
      throw NotExpressible{"the top level walks tiles other than a cluster's span"};
  }
  // The lowering puts the top level's SpatialMap outermost and then the
  // other splits in loop order, filter splits last; a dataflow whose cluster
  // levels come in another order is another (equivalent) directive list.
  std::vector<DimId> expected;
  for (DimId d : order)
    if (split_level[static_cast<std::size_t>(d)] > 0 &&
        !(window_dims && (name_of(d) == "R" || name_of(d) == "S")))
      expected.push_back(d);
  for (DimId d : order)
    if (split_level[static_cast<std::size_t>(d)] > 0 && window_dims &&
        (name_of(d) == "R" || name_of(d) == "S"))
      expected.push_back(d);
  if (expected != inner_splits) throw NotExpressible{"cluster levels in another order"};
  for (DimId d : order) {
    if (split[static_cast<std::size_t>(d)] > 1 && split_level[static_cast<std::size_t>(d)] > 0 &&
        std::find(order.begin(), order.end(), d) <
            std::find_if(order.begin(), order.end(),
                         [&](DimId e) { return split_level[static_cast<std::size_t>(e)] == 0; }) &&
        !(window_dims && (name_of(d) == "R" || name_of(d) == "S")))
      throw NotExpressible{"a cluster's dimension walked before the top level's SpatialMap"};
  }

  // MAESTRO's PEs, less the top level's units that get no tile.
  *busy_pes = hw.num_pes;
  for (DimId d = 0; d < op.num_dims(); ++d)
    if (split_level[static_cast<std::size_t>(d)] == 0)
      *busy_pes = split[static_cast<std::size_t>(d)] * below;
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = l1;
  m.level(1).split = split;
  m.level(2).tile.clear();
  for (DimId d = 0; d < op.num_dims(); ++d) m.level(2).tile.push_back(bound(d));
  m.level(2).order = order;
  m.level(3).order = order;
  if (auto error = m.structural_error(op, arch))
    throw NotExpressible{"no well-formed canonical mapping: " + *error};
  return m;
}

struct Column {
  const char* name;
  double Result::*field;
  const char* ref;
};

const Column kTargets[] = {
    {"runtime_cycles", &Result::runtime_cycles, "runtime_cycles"},
    {"energy_total_macunits", &Result::energy_total_macunits, "energy_total_macunits_stdout"},
    {"input_l2_rd", &Result::input_l2_rd, "input_l2_rd"},
    {"input_l2_wr", &Result::input_l2_wr, "input_l2_wr"},
    {"filter_l2_rd", &Result::filter_l2_rd, "filter_l2_rd"},
    {"filter_l2_wr", &Result::filter_l2_wr, "filter_l2_wr"},
    {"output_l2_rd", &Result::output_l2_rd, "output_l2_rd"},
    {"output_l2_wr", &Result::output_l2_wr, "output_l2_wr"},
    {"input_l1_rd", &Result::input_l1_rd, "input_l1_rd"},
    {"input_l1_wr", &Result::input_l1_wr, "input_l1_wr"},
    {"filter_l1_rd", &Result::filter_l1_rd, "filter_l1_rd"},
    {"filter_l1_wr", &Result::filter_l1_wr, "filter_l1_wr"},
    {"output_l1_rd", &Result::output_l1_rd, "output_l1_rd"},
    {"output_l1_wr", &Result::output_l1_wr, "output_l1_wr"},
    {"avg_utilized_pes", &Result::avg_utilized_pes, "avg_utilized_pes"},
};

double rel_error(double ours, double theirs) {
  if (ours == theirs) return 0;
  return std::fabs(ours - theirs) / std::max(std::fabs(theirs), 1e-12);
}

TEST(GoldenLowering, CanonicalMappingsOfMaestroDataflowsReproduceMaestro) {
  const auto rows = read_index();
  ASSERT_GT(rows.size(), 1000u);
  std::map<std::string, Network> networks;
  std::map<std::string, int> not_expressible, covered_by_dataflow;
  std::map<std::string, std::set<std::string>> examples;
  int covered = 0, values = 0, within = 0, native_equal = 0;
  int idle_rows = 0, idle_values = 0, idle_equal = 0, idle_maestro = 0;
  int idle_true_values = 0, idle_true_equal = 0;
  const bool dump = std::getenv("MAPEX_GOLDEN_DUMP") != nullptr;
  for (const auto& r : rows) {
    if (r.at("status") != "ok") continue;
    const std::string dir = kRef + "/cases/" + r.at("case_id");
    auto it = networks.find(dir);
    if (it == networks.end()) it = networks.emplace(dir, load_mapping(dir + "/mapping.m")).first;
    const int index = static_cast<int>(num(r, "csv_row")) - 1;
    ASSERT_TRUE(index >= 0 && index < static_cast<int>(it->second.layers.size()));
    const Layer& layer = it->second.layers[static_cast<std::size_t>(index)];
    const std::string what = r.at("case_id") + "/" + layer.name;
    if (std::isnan(num(r, "runtime_cycles")) || num(r, "num_macs") == 0) {
      ++not_expressible["MAESTRO printed no numbers (NaN)"];
      continue;
    }
    const Hardware hw = hardware_of(r, dir);
    Lowered lowered;
    Operator op;
    std::int64_t busy_pes = 0;
    try {
      op = operator_of(layer);
      const Architecture arch = chip_of(hw);
      const Mapping m = mapping_of(layer, hw, op, arch, &busy_pes);
      lowered = from_mapping(op, arch, m);
      if (dump)
        std::cout << what << "\n  " << m.summary(op, arch) << "\n"
                  << format_dataflow(lowered.layer.dataflow, "    ");
    } catch (const NotExpressible& e) {
      ++not_expressible[e.reason];
      if (examples[e.reason].size() < 3) examples[e.reason].insert(r.at("dataflow"));
      continue;
    } catch (const InputError& e) {
      ++not_expressible[std::string("lowering refused: ") + e.problem()];
      examples[std::string("lowering refused: ") + e.problem()].insert(what);
      continue;
    }
    ++covered;
    ++covered_by_dataflow[r.at("dataflow")];
    const bool batch = op.find_dim("N") >= 0;
    // MAESTRO's numbers, reproduced from the lowered directives.
    const Result compat =
        engine::analyse(engine::compile(lowered.layer, lowered.hardware, batch, true));
    bool native_batch = false;
    for (const auto& other : it->second.layers)
      if (other.type == layer.type) {
        native_batch = other.dim("N") > 0;
        break;
      }
    // Idle units: MAESTRO spreads the top level's SpatialMap over every unit
    // it has, more than the dimension has tiles, and its spatial-edge
    // bookkeeping then miscounts new data (README, "still as in MAESTRO");
    // a canonical split names the busy units only. These rows are compared
    // with the case's own directives analysed on the busy units, in the mode
    // that reproduces MAESTRO.
    if (busy_pes < hw.num_pes) {
      ++idle_rows;
      Hardware busy = hw;
      busy.num_pes = busy_pes;
      const Result native = engine::analyse(engine::compile(layer, busy, native_batch, true));
      for (const auto& c : kTargets) {
        ++idle_values;
        const double e = rel_error(compat.*c.field, native.*c.field);
        idle_equal += e <= 1e-9;
        EXPECT_LE(e, 1e-9) << what << " " << c.name << " on " << busy_pes << " PEs: lowered "
                           << compat.*c.field << ", own directives " << native.*c.field;
        idle_maestro += rel_error(compat.*c.field, num(r, c.ref)) <= 0.01;
      }
    } else {
      for (const auto& c : kTargets) {
        const double theirs = num(r, c.ref);
        if (std::isnan(theirs)) continue;
        ++values;
        const double e = rel_error(compat.*c.field, theirs);
        within += e <= 0.01;
        EXPECT_LE(e, 0.01) << what << " " << c.name << ": lowered " << compat.*c.field
                           << ", MAESTRO " << theirs;
      }
    }
    // The true analysis of the lowered directives is that of the case's own.
    Hardware own = hw;
    own.num_pes = busy_pes;
    const Result ours = engine::analyse(engine::compile(lowered.layer, lowered.hardware, batch));
    const Result native = engine::analyse(engine::compile(layer, own, native_batch));
    bool equal = ours.num_macs == native.num_macs;
    for (const auto& c : kTargets)
      equal = equal && rel_error(ours.*c.field, native.*c.field) < 1e-9;
    native_equal += equal;
    EXPECT_TRUE(equal) << what << ": true analysis of the lowered mapping differs from the case's "
                       << "own directives (runtime " << ours.runtime_cycles << " vs "
                       << native.runtime_cycles << ")";
    // Idle units change nothing in the true analysis: the case's own
    // directives on all of MAESTRO's PEs give the numbers of the busy PEs.
    if (busy_pes < hw.num_pes) {
      const Result all_pes = engine::analyse(engine::compile(layer, hw, native_batch));
      for (const auto& c : kTargets) {
        ++idle_true_values;
        const double e = rel_error(all_pes.*c.field, native.*c.field);
        idle_true_equal += e <= 1e-9;
        EXPECT_LE(e, 1e-9) << what << " " << c.name << ": " << all_pes.*c.field << " on "
                           << hw.num_pes << " PEs, " << native.*c.field << " on the " << busy_pes
                           << " busy ones";
      }
    }
    EXPECT_EQ(ours.num_macs, static_cast<double>(op.macs())) << what;
  }
  std::cout << "covered " << covered << " rows; " << within << " of " << values
            << " MAESTRO values within 1%; " << native_equal
            << " rows equal to the native true analysis\n"
            << "idle units: " << idle_rows << " rows, " << idle_equal << " of " << idle_values
            << " values equal to the own directives on the busy units (" << idle_maestro
            << " within 1% of MAESTRO on all its units); true analysis: " << idle_true_equal
            << " of " << idle_true_values << " values on all PEs equal to the busy PEs'\n";
  for (const auto& [df, count] : covered_by_dataflow)
    std::cout << "  covered " << df << ": " << count << "\n";
  for (const auto& [why, count] : not_expressible) {
    std::cout << "  not expressible: " << why << ": " << count;
    for (const auto& e : examples[why]) std::cout << " " << e;
    std::cout << "\n";
  }
  EXPECT_GT(covered, 0);
}

}  // namespace
}  // namespace mapex::mdc
