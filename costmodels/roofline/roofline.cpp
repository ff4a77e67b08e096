// The roofline cost model: a mapping runs no faster than its compute (MACs
// over the PEs it keeps busy, edge tiles included) and no faster than any
// level can move the data the mapping asks of it (words over bandwidth).
// Latency is the larger of the two, with no overlap penalty: the optimistic
// bound that Marvel (§6, Fig. 9) and FLASH normalise their results to. Data
// movement comes from the framework's loop-nest analysis (mapex/analysis.hpp).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mapex/analysis.hpp>
#include <mapex/plugin.hpp>

namespace {

class BoundRoofline final : public mapex::BoundCostModel {
 public:
  BoundRoofline(const mapex::Operator& op, const mapex::Architecture& arch, bool check_capacity)
      : op_(op),
        arch_(arch),
        check_capacity_(check_capacity),
        floor_(mapex::dram_floor(op, arch)) {}

  // Capacity depends only on the tiles and the keep choices, which stay the
  // same over the run of loop orders the enumeration streams for one tiling:
  // the answer is kept per thread and recomputed when either changes (a
  // fifth of an exhaustive sweep's time went to recomputing it).
  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    if (!check_capacity_) return std::nullopt;
    thread_local Capacity memo;
    if (memo.owner != id_ || !mapex::same_tiling(memo.checked, mapping) ||
        !same_keeps(memo.checked, mapping)) {
      memo.error = mapex::capacity_error(op_, arch_, mapping);
      memo.checked = mapping;
      memo.owner = id_;
    }
    return memo.error;
  }

  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    // Structure (splits within the fan-out and placed on the array's axes)
    // as every model checks it; the framework checks it before score().
    if (auto error = mapping.structural_error(op_, arch_)) return mapex::Metrics::invalid(*error);
    if (auto reason = precheck(mapping)) return mapex::Metrics::invalid(*reason);
    // The analysis goes into per-thread storage kept between evaluations:
    // a fresh NestAnalysis allocates its dozens of vectors (and the
    // incremental state's) for every mapping, a quarter of a one-off
    // evaluation's time. analyse_into starts from scratch (no state of the
    // previous mapping is read), so the figures are those of analyse.
    thread_local mapex::NestAnalysis scratch;
    mapex::analyse_into(op_, arch_, mapping, scratch);
    const mapex::NestAnalysis& a = scratch;
    mapex::Metrics m;
    m.valid = true;
    m.macs = a.macs;
    m.compute_cycles = a.compute_cycles;
    m.levels = mapex::level_metrics(op_, arch_, a);
    m.latency_cycles = a.compute_cycles;
    m.bound_by = "compute";
    const double mac_energy = a.macs * arch_.mac_energy_pj();
    m.energy_breakdown_pj.emplace_back("mac", mac_energy);
    m.energy_pj = mac_energy;
    for (const auto& level : m.levels) {
      if (level.transfer_cycles > m.latency_cycles) {
        m.latency_cycles = level.transfer_cycles;
        m.bound_by = level.level;
      }
      m.energy_breakdown_pj.emplace_back(level.level, level.energy_pj);
      m.energy_pj += level.energy_pj;
    }
    const double peak = static_cast<double>(arch_.num_pes()) * arch_.macs_per_pe();
    m.utilization = m.latency_cycles > 0 ? a.macs / (m.latency_cycles * peak) : 0;
    return m;
  }

  // A bound for partial mappings (mapex/bounds.hpp): the compute bound over
  // the most units a completion can engage, and each level whose traffic the
  // fixed levels already determine at its exact cost. Every other level adds
  // non-negative energy and can only raise the maximum.
  std::optional<mapex::Score> lower_bound(const mapex::PartialMapping& partial) const override {
    const mapex::NestBound nest = mapex::nest_bound_any_dram_order(op_, arch_, partial);
    mapex::Score s{true, mapex::compute_cycles_bound(op_, arch_, partial),
                   static_cast<double>(op_.macs()) * arch_.mac_energy_pj()};
    for (std::size_t i = 0; i < nest.energy_pj.size(); ++i) {
      s.latency_cycles = std::max(s.latency_cycles, nest.transfer_cycles[i]);
      s.energy_pj += nest.energy_pj[i];
    }
    if (!nest.determined.back()) {  // DRAM's traffic is at least its floor
      s.latency_cycles = std::max(s.latency_cycles, floor_.transfer_cycles);
      s.energy_pj += floor_.energy_pj;
    }
    return s;
  }

  // The same two figures as evaluate, summed in the same order (so they are
  // bit-identical), on per-thread scratch that keeps its storage between
  // mappings. The framework calls precheck first. Incremental along the
  // enumeration stream: it emits every loop order of one tiling in a row,
  // so the tiling part of the analysis is redone only when the tiling
  // differs from the previous mapping's on this thread for this model.
  mapex::Score score(const mapex::Mapping& mapping) const override {
    thread_local Scratch scratch;
    if (scratch.owner != id_ || !mapex::same_tiling(scratch.tiled, mapping)) {
      mapex::analyse_tiling_into(op_, arch_, mapping, scratch.a);
      scratch.tiled = mapping;
      scratch.owner = id_;
    }
    mapex::analyse_traffic_into(op_, arch_, mapping, scratch.a);
    return score_of(scratch.a, scratch.costs);
  }

  // precheck then score along a sweep's stream, told what changed
  // (MappingChange) instead of comparing tilings, keep choices and orders
  // to find out: capacity and the tiling part of the analysis are redone
  // for a new tiling only, and the traffic only from the lowest level whose
  // order moved. The stream's own state (no thread-local lookup, nothing
  // shared with other streams or with score()). The same figures as
  // score(), summed in the same order.
  mapex::Score precheck_and_score(const mapex::Mapping& mapping, const mapex::MappingChange& change,
                                  std::unique_ptr<mapex::StreamState>& state) const override {
    if (!state) state = std::make_unique<Stream>();
    auto& st = static_cast<Stream&>(*state);
    if (!st.seen || change.tiling) {
      st.seen = true;
      st.tiled = false;
      st.fits = !check_capacity_ || !mapex::capacity_error(op_, arch_, mapping);
    }
    if (!st.fits) return mapex::Score{};
    if (!st.tiled) {
      mapex::analyse_tiling_into(op_, arch_, mapping, st.a);
      mapex::analyse_traffic_into(op_, arch_, mapping, st.a);
      st.tiled = true;
    } else {
      mapex::analyse_traffic_into(op_, arch_, mapping, st.a, change);
    }
    return score_of(st.a, st.costs);
  }

 private:
  // The score of an analysis whose traffic is up to date.
  mapex::Score score_of(const mapex::NestAnalysis& a, std::vector<mapex::LevelCost>& costs) const {
    mapex::level_costs(op_, arch_, a, costs);
    mapex::Score s{true, a.compute_cycles, a.macs * arch_.mac_energy_pj()};
    for (const auto& c : costs) {
      s.latency_cycles = std::max(s.latency_cycles, c.transfer_cycles);
      s.energy_pj += c.energy_pj;
    }
    return s;
  }

  // A stream's state in precheck_and_score(): whether the current tiling
  // fits the buffers and has its tiling part analysed.
  struct Stream final : mapex::StreamState {
    bool seen = false;
    bool fits = false;
    bool tiled = false;
    mapex::NestAnalysis a;
    std::vector<mapex::LevelCost> costs;
  };
  // Per-thread state of score(): the analysis and the mapping whose tiling
  // it holds, tagged with the bound model that made it (an id, not an
  // address: a new model may reuse a freed one's).
  struct Scratch {
    std::uint64_t owner = 0;
    mapex::Mapping tiled;
    mapex::NestAnalysis a;
    std::vector<mapex::LevelCost> costs;
  };
  // Per-thread state of precheck(): the last mapping checked and the answer.
  struct Capacity {
    std::uint64_t owner = 0;
    mapex::Mapping checked;
    std::optional<std::string> error;
  };
  static bool same_keeps(const mapex::Mapping& a, const mapex::Mapping& b) {
    for (std::size_t i = 0; i < a.levels().size(); ++i)
      if (a.levels()[i].keep != b.levels()[i].keep) return false;
    return true;
  }
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
  }

  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  bool check_capacity_;
  std::uint64_t id_ = next_id();
  mapex::DramFloor floor_;
};

class Roofline final : public mapex::CostModel {
 public:
  explicit Roofline(const mapex::Params& params)
      : check_capacity_(params.get_bool("check_capacity")) {}
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundRoofline>(op, arch, check_capacity_);
  }

 private:
  bool check_capacity_;
};

const mapex::ParamSpec kParams[] = {
    {"check_capacity", mapex::ParamType::kBool, "true",
     "Mark mappings whose tiles overflow a buffer (double-buffered where the level is) invalid."},
};

mapex::CostModel* make(const mapex::Params& params) { return new Roofline(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "roofline",
    "1.0.0",
    "Roofline bound: max of compute cycles and each level's traffic over its bandwidth",
    kParams,
    std::size(kParams),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
