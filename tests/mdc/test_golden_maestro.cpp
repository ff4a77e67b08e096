// Golden test against real MAESTRO outputs (refdata/maestro): every
// successful (case, layer) row of index.csv is evaluated by the mdc engine
// from the case's own mapping.m and hw.m (or the CLI flags recorded in the
// index for the flag-only cases), and each output column is compared.
//
// Tolerance: counts and cycles are integers in MAESTRO, so a faithful model
// matches them exactly; 1% is the fidelity target of the issue (it absorbs
// the 6-digit rounding of MAESTRO's printed energy). Rows where MAESTRO is
// known to be wrong are excluded from the 1% check *by rule* (see
// `deviation` below and costmodels/mdc/README.md), never by name.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
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

struct Column {
  const char* name;
  double Result::*field;
  const char* ref;  // index.csv column
  bool target;      // part of the 1% fidelity target
};

const Column kColumns[] = {
    {"num_macs", &Result::num_macs, "num_macs", false},
    {"runtime_cycles", &Result::runtime_cycles, "runtime_cycles", true},
    {"energy_total_macunits", &Result::energy_total_macunits, "energy_total_macunits_stdout", true},
    {"l1_size_req", &Result::l1_size_req, "l1_size_req", false},
    {"l2_size_req", &Result::l2_size_req, "l2_size_req", false},
    {"input_l2_rd", &Result::input_l2_rd, "input_l2_rd", true},
    {"input_l2_wr", &Result::input_l2_wr, "input_l2_wr", true},
    {"filter_l2_rd", &Result::filter_l2_rd, "filter_l2_rd", true},
    {"filter_l2_wr", &Result::filter_l2_wr, "filter_l2_wr", true},
    {"output_l2_rd", &Result::output_l2_rd, "output_l2_rd", true},
    {"output_l2_wr", &Result::output_l2_wr, "output_l2_wr", true},
    {"input_l1_rd", &Result::input_l1_rd, "input_l1_rd", true},
    {"input_l1_wr", &Result::input_l1_wr, "input_l1_wr", true},
    {"filter_l1_rd", &Result::filter_l1_rd, "filter_l1_rd", true},
    {"filter_l1_wr", &Result::filter_l1_wr, "filter_l1_wr", true},
    {"output_l1_rd", &Result::output_l1_rd, "output_l1_rd", true},
    {"output_l1_wr", &Result::output_l1_wr, "output_l1_wr", true},
    {"noc_bw_req_peak", &Result::noc_bw_req_peak, "noc_bw_req_peak", false},
    {"offchip_bw_req", &Result::offchip_bw_req, "offchip_bw_req", false},
    {"avg_utilized_pes", &Result::avg_utilized_pes, "avg_utilized_pes", false},
};

struct Tally {
  int checked = 0, exact = 0, within1 = 0, within10 = 0;
};

double rel_error(double ours, double theirs) {
  if (ours == theirs) return 0;
  return std::fabs(ours - theirs) / std::max(std::fabs(theirs), 1e-12);
}

// Why MAESTRO's numbers for this row are not the true ones, or nothing.
// Rules only, each decidable from the reference row and the layer's own
// directives (costmodels/mdc/README.md, "Deviations from MAESTRO"):
// - maestro_mac_count: MAESTRO's MAC count differs from the layer's (its
//   iteration space covers output positions that do not exist, or misses
//   some), so every count that follows from it differs too.
// - strided_spatial_window: a strided layer with a SpatialMap on an input
//   row/column dimension. MAESTRO credits each further unit with `offset`
//   new output rows, an offset in input rows, i.e. stride times too many
//   (output L2 writes and energy), and fetches packed 1x1 tiles in input
//   coordinates (input reads).
std::string deviation(const Row& r, const Layer& layer) {
  if (num(r, "num_macs") != num(r, "num_macs_expected")) return "maestro_mac_count";
  if (layer.stride_y > 1 || layer.stride_x > 1)
    for (const auto& d : layer.dataflow)
      if (d.kind == DirectiveKind::kSpatialMap &&
          (d.dim == "Y" || d.dim == "X" || d.dim == "Y'" || d.dim == "X'"))
        return "strided_spatial_window";
  return "";
}

// Tensors (input, filter, output) whose top-level L2 traffic MAESTRO
// undercounts because the top level spreads a SpatialMap over more units
// than its dimension has tiles (idle units), with at least two busy units,
// the last of them holding a full tile: MAESTRO flags that unit as the
// partial edge unit and credits it with the edge tile's unique part, which
// is empty (README "Deviations", idle units). The unit is owed
// - input or filter data when the SpatialMap splits that tensor and a
//   temporal directive outside it takes more than one step on one of the
//   tensor's dimensions (the tile moves under the spatial map);
// - its outputs in every step when the mapped dimension indexes the output
//   and is no input row/column (a window's output part is recomputed).
// Only the top level's directives count: L2 accesses are its traffic.
// Decided on MAESTRO's plan of the layer's own directives (filled in and
// rewritten as MAESTRO does: engine::compile in maestro_compat mode).
struct IdleUnits {
  bool owed[3] = {false, false, false};
};
IdleUnits idle_units(const engine::Plan& p) {
  IdleUnits out;
  const engine::Level& L = p.levels[0];
  auto indexes = [&](int t, int dim) {
    for (int k = 0; k < p.num_coupled[t]; ++k)
      if (p.coupled[t][k] == dim) return true;
    return false;
  };
  for (int i = 0; i < L.num_dirs; ++i) {
    const engine::Dir& d = L.dirs[i];
    if (!d.spatial) continue;
    const std::int64_t v = L.dims[d.dim];
    if (v < d.size) continue;  // one partial tile: its unit is the edge unit
    const std::int64_t full = (v - d.size) / d.offset + 1;
    const bool covered = (full - 1) * d.offset + d.size >= v;
    if (!covered || full < 2 || full >= L.num_sub) continue;
    for (int j = 0; j < i; ++j) {
      const engine::Dir& outer = L.dirs[j];
      if (outer.spatial || L.dims[outer.dim] <= outer.size) continue;
      for (int t = 0; t < 2; ++t)
        out.owed[t] = out.owed[t] || (indexes(t, outer.dim) && indexes(t, d.dim));
    }
    const bool window = p.conv && (d.dim == engine::kY || d.dim == engine::kX);
    out.owed[2] = out.owed[2] || (indexes(2, d.dim) && !window);
  }
  return out;
}

// Rules that exclude some columns of a row only.
// - strided_output_reads: MAESTRO sizes the output tensor read out of L2 as
//   K x (Y-R+1) x (X-S+1) whatever the stride; mapex reads the true output.
// - spatial_idle_units (idle_units): the last busy unit of a top-level
//   spatial map with idle units receives no new data of a tensor after the
//   first step (or sends no outputs), so MAESTRO's L2 reads and L1 writes
//   of that tensor (output L2 writes) are short of what the busy units use;
//   mapex counts them.
std::string column_deviation(const std::string& column, const Layer& layer, const IdleUnits& idle) {
  if (column == "output_l2_rd" && (layer.stride_y > 1 || layer.stride_x > 1))
    return "strided_output_reads";
  const bool owed = (idle.owed[0] && (column == "input_l2_rd" || column == "input_l1_wr")) ||
                    (idle.owed[1] && (column == "filter_l2_rd" || column == "filter_l1_wr")) ||
                    (idle.owed[2] && column == "output_l2_wr");
  return owed ? "spatial_idle_units" : "";
}

// MAESTRO's energy per access of a column (§IV-C; README: L2 18.61, L1
// 1.68 MAC units): the energy a column excluded on a row adds to the total.
double energy_per_access(const std::string& column) {
  if (column.find("_l2_") != std::string::npos) return 18.61;
  if (column.find("_l1_") != std::string::npos) return 1.68;
  return 0;
}

// Finite, non-negative, and internally consistent: every MAC reads one
// input, one weight and one partial sum from L1.
void expect_sane(const Result& res, const std::string& what) {
  const double values[] = {res.runtime_cycles,  res.energy_total_macunits, res.l1_size_req,
                           res.l2_size_req,     res.input_l2_rd,           res.filter_l2_rd,
                           res.output_l2_wr,    res.input_l1_wr,           res.filter_l1_wr,
                           res.noc_bw_req_peak, res.offchip_bw_req,        res.avg_utilized_pes};
  for (double v : values) EXPECT_TRUE(std::isfinite(v) && v >= 0) << what << ": " << v;
  EXPECT_GT(res.runtime_cycles, 0) << what;
  EXPECT_EQ(res.input_l1_rd, res.num_macs) << what;
  EXPECT_EQ(res.filter_l1_rd, res.num_macs) << what;
  EXPECT_EQ(res.output_l1_wr, res.num_macs) << what;
}

TEST(GoldenMaestro, EveryReferenceCaseWithinTolerance) {
  const auto rows = read_index();
  ASSERT_GT(rows.size(), 1000u);
  std::map<std::string, Network> networks;
  std::map<std::string, Tally> all, target;                      // per column
  std::map<std::string, std::map<std::string, Tally>> by_group;  // group -> column
  std::map<std::string, int> excluded;
  std::map<std::string, std::pair<double, std::string>> worst;
  int evaluated = 0, errors = 0, compat_checked = 0, compat_within1 = 0;
  // MAPEX_GOLDEN_DUMP=1 lists every row and column off by more than 1%.
  const bool dump = std::getenv("MAPEX_GOLDEN_DUMP") != nullptr;
  std::string first_error;
  for (const auto& r : rows) {
    if (r.at("status") != "ok") continue;
    const std::string dir = kRef + "/cases/" + r.at("case_id");
    auto it = networks.find(dir);
    if (it == networks.end()) it = networks.emplace(dir, load_mapping(dir + "/mapping.m")).first;
    const Network& net = it->second;
    const std::string name = r.at("layer_name");
    const Layer* layer = nullptr;
    // The CSV row number identifies the layer (names repeat in some files).
    const int index = static_cast<int>(num(r, "csv_row")) - 1;
    if (index >= 0 && index < static_cast<int>(net.layers.size()))
      layer = &net.layers[static_cast<std::size_t>(index)];
    ASSERT_NE(layer, nullptr) << r.at("case_id") << " " << name;
    const Hardware hw = hardware_of(r, dir);
    // MAESTRO decides whether tensors carry N from the first layer of each type.
    bool batch = false;
    for (const auto& l : net.layers)
      if (l.type == layer->type) {
        batch = l.dim("N") > 0;
        break;
      }
    const std::string what = r.at("case_id") + "/" + name;
    // MAESTRO-compatible mode reproduces MAESTRO's own numbers on every
    // target column (rows where MAESTRO printed NaN are refused instead).
    double compat_offchip = -1;
    try {
      const Result m = engine::analyse(engine::compile(*layer, hw, batch, true));
      compat_offchip = m.offchip_bw_req;
      for (const auto& c : kColumns)
        if (c.target && !std::isnan(num(r, c.ref)))
          compat_within1 += rel_error(m.*c.field, num(r, c.ref)) <= 0.01 ? 1 : 0, ++compat_checked;
    } catch (const InputError& e) {
      EXPECT_TRUE(num(r, "num_macs") == 0) << what << " (maestro_compat): " << e.what();
    }
    Result res;
    try {
      res = engine::analyse(engine::compile(*layer, hw, batch));
    } catch (const InputError& e) {
      ++errors;
      ADD_FAILURE() << what << ": " << e.what();
      if (first_error.empty()) first_error = what + ": " + e.what();
      continue;
    }
    ++evaluated;
    // The true iteration space counts the layer's MACs, on every row.
    EXPECT_EQ(res.num_macs, num(r, "num_macs_expected")) << what;
    // MAESTRO halves its running off-chip maximum once per case, so its
    // figure never exceeds the order-independent peak (halved once).
    if (compat_offchip >= 0 && deviation(r, *layer).empty()) {
      EXPECT_GE(res.offchip_bw_req, compat_offchip) << what;
    }
    const std::string why = deviation(r, *layer);
    if (!why.empty()) {
      ++excluded[why];
      expect_sane(res, what);
    }
    if (dump && !why.empty())
      std::cout << "excl " << why << " " << r.at("case_id") << "/" << name << " macs "
                << res.num_macs << " expected " << r.at("num_macs_expected") << " runtime "
                << res.runtime_cycles << " maestro " << r.at("runtime_cycles") << "\n";
    const IdleUnits idle = idle_units(engine::compile(*layer, hw, batch, true));
    for (const auto& c : kColumns) {
      const double theirs = num(r, c.ref);
      if (std::isnan(theirs)) continue;
      const std::string col_why = why.empty() ? column_deviation(c.name, *layer, idle) : "";
      if (!col_why.empty()) ++excluded[col_why + " (" + c.name + ")"];
      // An undercount: the true count of what the busy units use is larger.
      if (col_why == "spatial_idle_units") {
        EXPECT_GE(res.*c.field, theirs) << what << " " << c.name;
      }
      // Energy on those rows is compared with MAESTRO's total corrected by
      // the energy of the accesses mapex counts differently (the excluded
      // columns), so the rest of the energy is still held to 1%.
      double adjusted = theirs;
      if (why.empty() && std::string(c.name) == "energy_total_macunits")
        for (const auto& other : kColumns)
          if (!column_deviation(other.name, *layer, idle).empty())
            adjusted += energy_per_access(other.name) * (res.*other.field - num(r, other.ref));
      const double e = rel_error(res.*c.field, theirs);
      for (Tally* t : {&all[c.name], &by_group[r.at("group")][c.name]}) {
        ++t->checked;
        t->exact +=
            res.*c.field == theirs || (std::string(c.name) == "energy_total_macunits" && e < 5e-6);
        t->within1 += e <= 0.01;
        t->within10 += e <= 0.10;
      }
      if (dump && e > 0.01 && why.empty() && col_why.empty())
        std::cout << "off " << c.name << " " << r.at("case_id") << "/" << name << " ours "
                  << res.*c.field << " maestro " << theirs << "\n";
      if (c.target && why.empty() && col_why.empty()) {
        Tally& t = target[c.name];
        ++t.checked;
        t.within1 += rel_error(res.*c.field, adjusted) <= 0.01;
      }
      if (e > worst[c.name].first)
        worst[c.name] = {e, r.at("case_id") + "/" + name + " ours " + std::to_string(res.*c.field) +
                                " maestro " + std::to_string(theirs)};
    }
  }
  std::cout << "evaluated " << evaluated << " rows, " << errors << " rejected";
  if (!first_error.empty()) std::cout << " (first: " << first_error << ")";
  std::cout << "\n| column | checked | exact | within 1% | within 10% | worst |\n";
  for (const auto& c : kColumns) {
    const Tally& t = all[c.name];
    std::cout << "| " << c.name << " | " << t.checked << " | " << t.exact << " | " << t.within1
              << " | " << t.within10 << " | " << std::setprecision(3) << worst[c.name].first << " "
              << worst[c.name].second << " |\n";
  }
  std::cout << "per group (within 1%):\n";
  for (const auto& [g, cols] : by_group) {
    std::cout << "  " << g << ":";
    for (const auto& c : kColumns)
      std::cout << " " << c.name << "=" << cols.at(c.name).within1 << "/"
                << cols.at(c.name).checked;
    std::cout << "\n";
  }
  for (const auto& [why, n] : excluded)
    std::cout << "excluded by rule " << why << ": " << n << "\n";
  std::cout << "maestro_compat: " << compat_within1 << " of " << compat_checked
            << " target values within 1% of MAESTRO\n";
  EXPECT_EQ(compat_within1, compat_checked);
  for (const auto& c : kColumns) {
    if (!c.target) continue;
    const Tally& t = target[c.name];
    std::cout << "target " << c.name << ": " << t.within1 << " of " << t.checked
              << " rows within 1%\n";
    EXPECT_GE(t.within1, 0.95 * t.checked) << c.name << ": " << t.within1 << " of " << t.checked;
  }
}

}  // namespace
}  // namespace mapex::mdc
