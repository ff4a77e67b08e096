// The `mdc` cost model: MAESTRO's data-centric analysis (MAESTRO, IEEE
// Micro 2020, §IV) as a mapex plugin. Canonical mappings become directives
// by Marvel's Algorithm 1 (mapex/mdc.hpp, `from_mapping`); MAESTRO mapping
// files reach the same engine through the DirectiveEvaluator capability
// (see the comment in mapex/mdc.hpp for why it is a separate interface).

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mapex/analysis.hpp>
#include <mapex/bounds.hpp>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <mapex/plugin.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "engine.hpp"

namespace {

using mapex::mdc::Hardware;
using mapex::mdc::Result;

/// The largest PE tiles that fit in L1 among some allowed values
/// (BoundMdc::largest_fitting_tiles): the most MACs of one, the most
/// non-filter MACs of one (R and S of a convolution left out), and whether
/// the allowed values were few enough to be searched (else nothing is
/// claimed). Both 0 when no tile fits.
struct FittingTiles {
  double macs = 0;
  double non_filter = 0;
  double top_reduction = 0;  // the most of the product over BoundMdc::top_reduction_
  bool searched = false;
};

/// Words of one subscript over `tile` (values per dimension), counted low:
/// the fewer of its extent (a sliding window's rows) and its index
/// combinations, as the compulsory floors count them.
std::int64_t low_subscript_words(const mapex::AffineExpr& e,
                                 const std::vector<std::int64_t>& tile) {
  std::int64_t extent = 1, combinations = 1;
  for (const auto& term : e.terms) {
    if (term.coeff == 0) continue;
    const std::int64_t n = tile[static_cast<std::size_t>(term.dim)];
    extent += std::abs(term.coeff) * (n - 1);
    combinations *= n;
  }
  return std::min(extent, combinations);
}

class BoundMdc final : public mapex::BoundCostModel {
 public:
  BoundMdc(const mapex::Operator& op, const mapex::Architecture& arch, bool check_capacity,
           bool maestro_compat)
      : op_(op),
        arch_(arch),
        check_capacity_(check_capacity),
        maestro_compat_(maestro_compat),
        names_(maestro_tensors(op)) {
    std::vector<int> buffers;
    for (int i = 0; i < arch.num_levels(); ++i) {
      const auto kind = arch.levels()[static_cast<std::size_t>(i)].kind;
      if (kind == mapex::LevelKind::kBuffer) buffers.push_back(i);
      if (kind == mapex::LevelKind::kDram) dram_ = i;
    }
    // MAESTRO counts every tensor in words of one size (its precision).
    mapex::require_uniform_word_bits(op, arch, "cost model 'mdc' (MAESTRO's analysis)");
    // MAESTRO has one off-chip bandwidth and none per buffer port.
    if (const int p = arch.first_split_ports(); p >= 0)
      throw mapex::InputError(mapex::SourceLocation{}, "read_bandwidth_gbps",
                              "mdc cannot model separate read and write bandwidths (level '" +
                                  arch.levels()[static_cast<std::size_t>(p)].name +
                                  "' of architecture '" + arch.name() + "')");
    if (buffers.empty())
      throw mapex::InputError("mdc: architecture '" + arch.name() +
                              "' has no on-chip buffer; MAESTRO's analysis needs an L1");
    l1_ = buffers.front();
    l2_ = buffers.back();
    // MAESTRO's analysis (§IV) reports the accesses of two buffers, the
    // PE-local L1 and the shared L2 its top cluster level reads from. A
    // buffer between them would get no traffic and no energy: refuse the
    // chip instead of reporting a silent zero.
    if (buffers.size() > 2) {
      std::string middle;
      for (std::size_t i = 1; i + 1 < buffers.size(); ++i)
        middle += (middle.empty() ? "'" : ", '") +
                  arch.levels()[static_cast<std::size_t>(buffers[i])].name + "'";
      throw mapex::InputError(
          "mdc: architecture '" + arch.name() + "' has buffer " + middle + " between '" +
          arch.levels()[static_cast<std::size_t>(l1_)].name + "' (MAESTRO's L1) and '" +
          arch.levels()[static_cast<std::size_t>(l2_)].name +
          "' (its L2); MAESTRO's analysis counts the accesses of two buffer levels only, so "
          "that level's traffic and energy would be missing (use a chip with two buffer levels "
          "or another cost model)");
    }
    // Spatial levels that disagree on multicast or reduction cannot be one
    // MAESTRO network: refuse the chip now rather than every mapping later.
    hw_ = mapex::mdc::hardware_from(arch);
    refuse_hop_energy(arch);
    dram_floor_ = mapex::dram_floor(op, arch);
    set_floors();
  }

  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    if (auto refused = unsupported(mapping))
      return "mdc: level '" + refused->level + "': " + refused->reason;
    return std::nullopt;
  }

  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    return evaluate_keeping(mapping, nullptr);
  }

  /// evaluate, compiling into `plan` when it is given (the plan analysed,
  /// when the lowering and compilation succeed).
  mapex::Metrics evaluate_keeping(const mapex::Mapping& mapping,
                                  mapex::mdc::engine::Plan* plan) const {
    if (auto error = mapping.structural_error(op_, arch_)) return mapex::Metrics::invalid(*error);
    if (auto refused = unsupported(mapping))
      return mapex::Metrics::invalid("mdc: level '" + refused->level + "': " + refused->reason);
    Result r;
    try {
      const auto lowered = mapex::mdc::from_mapping(op_, arch_, mapping);
      mapex::mdc::engine::Plan own;
      mapex::mdc::engine::Plan& compiled = plan ? *plan : own;
      compiled = mapex::mdc::engine::compile(lowered.layer, lowered.hardware,
                                             op_.find_dim("N") >= 0, maestro_compat_);
      r = mapex::mdc::engine::analyse(compiled);
    } catch (const mapex::InputError& e) {
      return mapex::Metrics::invalid(std::string("mdc: ") + e.problem());
    }
    const double word = arch_.word_bytes();
    // MAESTRO sizes every tile twice (double buffering); a buffer marked
    // single-buffered needs one copy, so its requirement is halved exactly.
    const auto& l1 = arch_.levels()[static_cast<std::size_t>(l1_)];
    const auto& l2 = arch_.levels()[static_cast<std::size_t>(l2_)];
    const double l1_req = r.l1_size_req * word * (l1.double_buffered ? 1.0 : 0.5);
    const double l2_req = r.l2_size_req * word * (l2.double_buffered ? 1.0 : 0.5);
    if (check_capacity_) {
      auto overflow = [](const mapex::Level& l, double need) {
        return l.name + ": tiles need " + std::to_string(static_cast<long long>(need)) + " B" +
               (l.double_buffered ? " (double-buffered)" : "") + ", capacity " +
               std::to_string(l.size_bytes) + " B";
      };
      if (l1_req > static_cast<double>(l1.size_bytes))
        return mapex::Metrics::invalid(overflow(l1, l1_req));
      if (l2_ != l1_ && l2_req > static_cast<double>(l2.size_bytes))
        return mapex::Metrics::invalid(overflow(l2, l2_req));
      const double l1_per_tensor[3] = {r.input_l1_size_req, r.filter_l1_size_req,
                                       r.output_l1_size_req};
      const double l2_per_tensor[3] = {r.input_l2_size_req, r.filter_l2_size_req,
                                       r.output_l2_size_req};
      if (auto error = partition_overflow(l1, l1_per_tensor))
        return mapex::Metrics::invalid(*error);
      if (l2_ != l1_)
        if (auto error = partition_overflow(l2, l2_per_tensor))
          return mapex::Metrics::invalid(*error);
    }
    return to_metrics(r, mapping, l1_req, l2_req);
  }

 private:
  /// MAESTRO's NoC (§IV-B) is a pipe of some bandwidth and latency: it
  /// prices delay, not energy, and has no topology to count hops in; its
  /// energy is MAC, L1 and L2 accesses only. A chip that prices NoC hops
  /// is refused when the model is bound, never evaluated with that energy
  /// silently left out (roofline and tensor_centric charge it).
  static void refuse_hop_energy(const mapex::Architecture& arch) {
    for (const auto& l : arch.levels())
      if (l.kind == mapex::LevelKind::kSpatial && l.noc.hop_energy_pj != 0)
        throw mapex::InputError(
            mapex::SourceLocation{}, "noc.hop_energy_pj",
            "mdc cannot model NoC hop energy (level '" + l.name + "' of architecture '" +
                arch.name() +
                "' sets it): MAESTRO's NoC has a bandwidth and a latency but no hops and no "
                "energy (use roofline or tensor_centric, or set it to 0)");
  }

  // ---- keep/bypass and partitions ----

  /// MAESTRO's analysis (§IV) keeps every tensor in L1 and in L2; it has
  /// no term for a tensor that skips one. Refused (mapex evaluate: bad
  /// input at the `keep` key; a search: an invalid mapping), never
  /// evaluated as if the tensor were kept.
  // A bound for partial mappings (mapex/bounds.hpp). Three parts:
  // - once the model reads nothing that is still free, the bound is the
  //   value itself (exact_bound);
  // - MAESTRO's runtime is no shorter than the MACs over the PEs a
  //   completion can engage, nor than the time its NoC takes to carry every
  //   word once (noc_floor_cycles), nor, once the tiles are fixed, than
  //   its first fill and its refills (step_bound_cycles);
  // - its energy is MAC, L1 and L2 accesses (all non-negative, each at
  //   least its floor: onchip_floor_pj) plus the off-chip traffic, which
  //   comes from the loop-nest analysis (to_metrics) and so is exact once
  //   the L2 tile and DRAM's order are fixed; latency adds or overlaps that
  //   traffic's cycles as to_metrics does.
  std::optional<mapex::Score> lower_bound(const mapex::PartialMapping& partial) const override {
    if (auto exact = exact_bound(partial)) return exact;
    const double compute = std::max({mapex::compute_cycles_bound(op_, arch_, partial),
                                     noc_floor_cycles_ + first_step_compute_cycles(partial),
                                     step_bound_cycles(partial), fewest_steps_cycles(partial)});
    mapex::Score s{true, compute, static_cast<double>(op_.macs()) * arch_.mac_energy_pj()};
    const auto from_steps = output_writes_from_steps_pj(partial);
    const double output_writes = from_steps ? *from_steps : output_writes_above_floor_pj(partial);
    if (std::isinf(output_writes)) return mapex::Score{true, output_writes, output_writes};
    s.energy_pj += onchip_floor_pj_ + output_writes;
    const mapex::NestBound nest = mapex::nest_bound_any_dram_order(op_, arch_, partial);
    const auto dram = static_cast<std::size_t>(dram_);
    const bool fixed = nest.determined[dram];
    const double dram_energy = fixed ? nest.energy_pj[dram] : dram_floor_.energy_pj;
    // The least on-chip energy over L2's orders costs an evaluation per
    // top-level choice: only where the caller reads the energy and the
    // floors do not already drop the subtree.
    if (partial.reads_energy && s.energy_pj + dram_energy < partial.energy_cutoff)
      if (const auto onchip = least_onchip_energy_pj(partial)) {
        if (std::isinf(*onchip)) return mapex::Score{true, *onchip, *onchip};
        s.energy_pj = std::max(s.energy_pj, *onchip);
      }
    s.energy_pj += dram_energy;
    const double off_chip = fixed ? nest.transfer_cycles[dram] : dram_floor_.transfer_cycles;
    s.latency_cycles = arch_.levels()[static_cast<std::size_t>(l2_)].double_buffered
                           ? std::max(compute, off_chip)
                           : compute + off_chip;
    return s;
  }

  /// DRAM's order: Algorithm 1's lowering gives DRAM's loops no region and
  /// walks the whole layer in L2's order (mdc_transform.cpp), so MAESTRO's
  /// runtime and on-chip energy never read it; it reaches the value only
  /// through DRAM's traffic in the loop-nest analysis (to_metrics: DRAM's
  /// energy added, its transfer cycles added or overlapped).
  bool order_read_only_by_own_traffic(int level) const override { return level == dram_; }

  /// L2's tile: Algorithm 1's lowering (mdc_transform.cpp, from_mapping)
  /// reads the splits, the spans below them and L2's order, never L2's own
  /// tile (the top region's temporal maps step by span x split over the
  /// whole layer), so MAESTRO's runtime, L1 and L2 energy and its capacity
  /// checks do not read it; DRAM's traffic comes from the loop-nest analysis
  /// (to_metrics), where a tile that is a multiple of another in every
  /// dimension holds each tensor in no more tiles with no more overlap and
  /// leaves every loop no more trips, so no more words move. Checked:
  /// OptimalBounds.MdcReadsL2TileOnlyThroughDramTraffic.
  bool tile_read_only_by_traffic_above(int level) const override {
    return level == l2_ && l2_ != l1_ && dram_ == l2_ + 1;
  }

  /// The loops whose place in data level `level`'s order MAESTRO tells
  /// apart. Algorithm 1's lowering (mdc_transform.cpp) walks the whole layer
  /// in the order of the data level above each spatial level, so there a
  /// loop that runs once at that level but several times at DRAM still has
  /// several MAESTRO steps at its place in the order; the split loops nest
  /// their regions in that order whatever their trips; and when no
  /// dimension but a filter is split, the first dimension of the order
  /// becomes the outermost region's SpatialMap. So every loop with more
  /// than one step over the whole layer (its bound over the spatial level's
  /// span), every split loop, and with no split but filters every loop.
  /// Only a loop of one step that is not split keeps the loop-nest
  /// analysis's neutrality (a TemporalMap over the whole dimension in one
  /// step; checked: OptimalBounds.MdcTellsApartOnlyTheOrderedLoops). The
  /// other levels' orders are read only by the loop-nest analysis (DRAM)
  /// or not at all (L1's point loops).
  std::uint32_t ordered_loops(const mapex::Mapping& partial, int level,
                              std::uint32_t running) const override {
    std::uint32_t mask = running;
    const int n = op_.num_dims();
    const std::uint32_t all = (std::uint32_t{1} << n) - 1;
    for (int s = 0; s < level; ++s) {
      if (arch_.levels()[static_cast<std::size_t>(s)].kind != mapex::LevelKind::kSpatial) continue;
      int above = s + 1;
      while (!arch_.levels()[static_cast<std::size_t>(above)].holds_data()) ++above;
      if (above != level) continue;
      const auto& lm = partial.level(s);
      if (lm.cluster.active()) return all;
      const auto span = partial.span(op_, arch_, s);
      bool other_than_filter = false;
      for (int d = 0; d < n; ++d) {
        const auto du = static_cast<std::size_t>(d);
        const std::int64_t split = lm.split.empty() ? 1 : lm.split[du];
        if (split > 1 || op_.dims()[du].bound > span[du]) mask |= std::uint32_t{1} << d;
        if (split > 1 && op_.dims()[du].name != "R" && op_.dims()[du].name != "S")
          other_than_filter = true;
      }
      if (!other_than_filter) return all;
    }
    return mask;
  }

  /// The value itself when the partial mapping fixes everything the model
  /// reads: Algorithm 1's lowering (mdc_transform.cpp, from_mapping) reads
  /// the splits, the spans below them and the orders of the data levels
  /// above L1, never L1's own order (a PE's point loops carry no reuse in
  /// MAESTRO), and the off-chip part needs DRAM's traffic determined. Every
  /// completion then has this value, so it bounds them all; infinite when
  /// it is invalid, since every completion is then invalid too.
  std::optional<mapex::Score> exact_bound(const mapex::PartialMapping& partial) const {
    if (partial.first_fixed > 0) return std::nullopt;
    for (int j = l1_ + 1; j < arch_.num_levels(); ++j)
      if (arch_.levels()[static_cast<std::size_t>(j)].holds_data() &&
          !(static_cast<std::size_t>(j) < partial.order_fixed.size() &&
            partial.order_fixed[static_cast<std::size_t>(j)]))
        return std::nullopt;
    const mapex::Metrics m = evaluate(*partial.mapping);
    // Invalid whatever L1's order (a capacity, a split or a lowering the
    // model refuses, none of which reads it): no completion is valid, so no
    // completion beats any mapping.
    if (!m.valid) {
      constexpr double kNone = std::numeric_limits<double>::infinity();
      return mapex::Score{true, kNone, kNone};
    }
    return mapex::Score{true, m.latency_cycles, m.energy_pj};
  }

  /// The energy of the output's L2 writes above its floor once every tile
  /// and split is fixed, whatever the orders (engine.cpp, `outputs`: every
  /// case, with work or not, writes its egress to L2). A case's egress is
  /// its output tile, which depends only on where each directive stands
  /// (first, steady, edge), not on which one moved; and the cases of a loop
  /// nest are the same multiset of those positions in any order of its
  /// loops. So the sum is the same for every completion and is read off any
  /// one of them. With the reduction dimensions split finely, outputs are
  /// written to L2 once per step over C, R and S, far above the floor of
  /// once per word. 0 before the tiles are fixed. Infinite when that
  /// completion is invalid and L2's order leaves the top level no choice
  /// (one_top_choice): what makes a mapping invalid under mdc (the tiles'
  /// sizes against L1 and L2, which MAESTRO takes from the first, all-Init
  /// case; a split or a lowering it refuses) reads no order but that
  /// choice, so no completion is valid.
  double output_writes_above_floor_pj(const mapex::PartialMapping& partial) const {
    if (partial.first_fixed > 0 || l2_ == l1_) return 0;
    const mapex::Metrics m = evaluate(*partial.mapping);
    if (!m.valid) return one_top_choice(partial) ? std::numeric_limits<double>::infinity() : 0;
    const auto& tensors = m.levels[static_cast<std::size_t>(l2_)].tensors;
    if (tensors.empty() || tensors.back().tensor != names_[2]) return 0;
    const auto& l2 = arch_.levels()[static_cast<std::size_t>(l2_)];
    return std::max(0.0, tensors.back().writes - output_floor_words_) *
           l2.write_energy_of(names_[2]);
  }

  /// Whether L2's order leaves the top level's SpatialMap no choice: at
  /// most one split dimension that is not a filter window (Algorithm 1's
  /// lowering puts the first of them in L2's order on top, and MAESTRO
  /// sizes L2 from the top level's first case, so with two of them the
  /// capacity check reads L2's order: MdcTopIngress.GivesTheInputWords
  /// OfEveryOrderOfL2 finds L2 sizes that differ between the choices).
  bool one_top_choice(const mapex::PartialMapping& partial) const {
    const auto& split = partial.mapping->level(1).split;
    int choices = 0;
    for (std::size_t d = 0; d < split.size() && d < window_filter_.size(); ++d)
      if (split[d] > 1 && !window_filter_[d]) ++choices;
    return choices <= 1 || arch_.levels()[1].kind != mapex::LevelKind::kSpatial;
  }

  /// The output's L2 writes above their floor from the tiles alone, in a
  /// space of divisors (the true iteration space; MAESTRO's sizes a
  /// strided window's outputs otherwise). Every top case writes its egress
  /// to L2 (engine.cpp, TopAccounts::outputs); with spans that divide the
  /// layer no top directive has an edge, so every case's egress is the
  /// output tile of one top step over its sub-units, and the cases are the
  /// product of the top directives' steps. The output's dimensions step
  /// through its words once, so the writes are its size times the steps
  /// over the dimensions it lacks: B / (t x split) for each one that is
  /// not a filter window (the lowering maps those whole at the top, one
  /// step). Exact once L1's tile is fixed; with only the split fixed, at
  /// least that with the PE tile that fits in L1 with the largest product
  /// over those dimensions (largest_fitting_tiles, the others at one and an
  /// unsplit window whole: the least a fitting tile can have), infinite
  /// when none fits. nullopt where nothing is claimed. Checked:
  /// MdcTopIngress.GivesTheInputWordsOfEveryOrderOfL2 (the output's writes
  /// on sampled mappings of real layers).
  std::optional<double> output_writes_from_steps_pj(const mapex::PartialMapping& partial) const {
    if (!partial.divisor_spans || maestro_compat_ || partial.first_fixed > 1 || l1_ != 0 ||
        l2_ != 2 || arch_.levels()[1].kind != mapex::LevelKind::kSpatial ||
        spatial_cluster_active(partial) || names_[2].empty())
      return std::nullopt;
    const auto& dims = op_.dims();
    const auto& split = partial.mapping->level(1).split;
    const auto& l1_tile = partial.mapping->level(0).tile;
    double steps = 1;
    std::vector<std::vector<std::int64_t>> allowed(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const std::int64_t s = split.empty() ? 1 : std::max<std::int64_t>(1, split[d]);
      if (window_filter_[d]) allowed[d] = {s == 1 ? dims[d].bound : 1};
      if (!top_reduction_[d]) {
        if (!window_filter_[d]) allowed[d] = {1};
        continue;
      }
      if (dims[d].bound % s != 0) return std::nullopt;
      if (partial.first_fixed == 0) {
        const std::int64_t span = s * std::max<std::int64_t>(1, l1_tile[d]);
        if (dims[d].bound % span != 0) return std::nullopt;
        steps *= static_cast<double>(dims[d].bound / span);
      } else {
        steps *= static_cast<double>(dims[d].bound / s);
        allowed[d] = divisors_up_to(d, dims[d].bound / s);
      }
    }
    if (partial.first_fixed == 1) {
      const FittingTiles fit = largest_fitting_tiles(allowed);
      if (!fit.searched) return std::nullopt;
      if (fit.top_reduction <= 0) return std::numeric_limits<double>::infinity();
      steps = std::max(1.0, std::ceil(steps / fit.top_reduction - 1e-9));
    }
    const auto& l2 = arch_.levels()[static_cast<std::size_t>(l2_)];
    return output_floor_words_ * (steps - 1) * l2.write_energy_of(names_[2]);
  }

  /// The least on-chip energy (MACs, L1 and L2) of any completion once
  /// every tile and split is fixed and L2's order is not; nullopt where
  /// nothing is claimed, infinite when no completion is valid. MAESTRO
  /// reads L1's order nowhere (exact_bound), so the completions differ in
  /// L2's order alone, and of the on-chip counts that order moves only the
  /// inputs' L2 reads and L1 writes (engine.cpp, TopAccounts: those two are
  /// equal; the output's L2 writes are order-free, output_writes_above_
  /// floor_pj; the partial sums are the MACs, and the inputs' L1 reads and
  /// L2 fills, the outputs' reads, are fixed per tensor). Algorithm 1's
  /// lowering (mdc_transform.cpp, lower_group) walks the layer in L2's
  /// order at the top level, whose SpatialMap is the first split dimension
  /// of that order that is not a filter window (with only filters split,
  /// the first other dimension, over one unit): per such choice, one
  /// completion with it first gives the energy besides the inputs' words,
  /// and engine::top_ingress the inputs' words under every order of the
  /// top directives that keeps it before the other candidates
  /// (least_top_input_cost); the least over the choices bounds every
  /// completion. Only with one spatial level between L1 and L2, no cluster
  /// tile, multicast and reduction (without them L2 serves more reads per
  /// order, TopAccounts::unshared), and a top level whose directives are
  /// the operator's dimensions one for one, without edges (top_ingress
  /// exact). Checked: MdcTopIngress.GivesTheInputWordsOfEveryOrderOfL2 and
  /// MdcTopIngress.LeastCostIsTheLeastOverEveryOrderOfL2.
  std::optional<double> least_onchip_energy_pj(const mapex::PartialMapping& partial) const {
    const auto l2 = static_cast<std::size_t>(l2_);
    if (partial.first_fixed > 0 || l1_ != 0 || l2_ != 2 || !hw_.multicast || !hw_.reduction ||
        names_[0].empty() || names_[1].empty() ||
        arch_.levels()[1].kind != mapex::LevelKind::kSpatial ||
        (l2 < partial.order_fixed.size() && partial.order_fixed[l2]) ||
        spatial_cluster_active(partial))
      return std::nullopt;
    const auto& split = partial.mapping->level(1).split;
    const auto& current = partial.mapping->level(l2_).order;
    std::vector<mapex::DimId> candidates;
    for (mapex::DimId d : current) {
      const auto du = static_cast<std::size_t>(d);
      if (!window_filter_[du] && du < split.size() && split[du] > 1) candidates.push_back(d);
    }
    if (candidates.empty())
      for (mapex::DimId d : current)
        if (!window_filter_[static_cast<std::size_t>(d)]) candidates.push_back(d);
    const auto& l1 = arch_.levels()[static_cast<std::size_t>(l1_)];
    const auto& l2_level = arch_.levels()[l2];
    double cost[2];
    for (int t = 0; t < 2; ++t) {
      const auto& name = names_[static_cast<std::size_t>(t)];
      cost[t] = l2_level.read_energy_of(name) + l1.write_energy_of(name);
    }
    // The candidates other than the top one follow it (positions 1..).
    const unsigned after = ((1U << candidates.size()) - 1) & ~1U;
    double least = std::numeric_limits<double>::infinity();
    mapex::Mapping completion = *partial.mapping;
    mapex::mdc::engine::Plan plan;
    for (mapex::DimId top : candidates) {
      auto& order = completion.level(l2_).order;
      order.clear();
      order.push_back(top);
      for (mapex::DimId d : candidates)
        if (d != top) order.push_back(d);
      for (mapex::DimId d : current)
        if (std::find(candidates.begin(), candidates.end(), d) == candidates.end())
          order.push_back(d);
      const mapex::Metrics m = evaluate_keeping(completion, &plan);
      if (!m.valid) continue;  // what makes it invalid reads no order with this top
      const auto table = mapex::mdc::engine::top_ingress(plan);
      if (!table.exact || table.num_dirs != static_cast<int>(order.size()) || table.spatial != 0 ||
          m.levels.size() <= l2)
        return std::nullopt;
      const auto& tensors = m.levels[l2].tensors;
      if (tensors.size() < 2 || tensors[0].tensor != names_[0] || tensors[1].tensor != names_[1])
        return std::nullopt;
      double rest = m.energy_pj - m.levels[static_cast<std::size_t>(dram_)].energy_pj;
      for (int t = 0; t < 2; ++t) rest -= cost[t] * tensors[static_cast<std::size_t>(t)].reads;
      least = std::min(least, rest + mapex::mdc::engine::least_top_input_cost(table, cost, after));
    }
    return least;
  }

  /// MAESTRO's runtime once every tile and split is fixed, whatever the
  /// orders (engine.cpp, the top cluster level's cases): the first case
  /// (all Init) takes its compute plus the NoC delay of filling every PE's
  /// first tiles; every case takes at least its compute and, at the top,
  /// the refill of its L2 share at the off-chip bandwidth (in_off). So the
  /// runtime is at least the MACs over the engaged PEs plus that first fill,
  /// and at least the steps times the refill. Words of the first step: each
  /// input's footprint over the span below L2 (the union of the PEs'
  /// tiles, which multicast sends once; without multicast more). Steps:
  /// the layer over that span in every dimension but the filter windows
  /// (which MAESTRO may map whole at the top). Only for one spatial level
  /// between L1 and L2 and spans that divide the layer; 0 otherwise.
  /// With the split fixed and L1's tile still free, the first fill alone:
  /// a PE's tile is at least one element per dimension, so the span is at
  /// least the split, and the first tiles' footprint (a union of windows,
  /// growing with the span) at least the split's own; the compute bound does
  /// not read L1's tile. The refills are left out there (fewer words per step
  /// come with more steps).
  double step_bound_cycles(const mapex::PartialMapping& partial) const {
    if (partial.first_fixed > 1 || l1_ != 0 || l2_ != l1_ + 2 ||
        arch_.levels()[1].kind != mapex::LevelKind::kSpatial)
      return 0;
    const bool tiles_fixed = partial.first_fixed == 0;
    const auto span = tiles_fixed
                          ? partial.mapping->span(op_, arch_, 1)
                          : mapex::spatial_span(op_, partial.mapping->level(1),
                                                std::vector<std::int64_t>(op_.dims().size(), 1));
    const auto& dims = op_.dims();
    double steps = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (span[d] <= 0 || dims[d].bound % span[d] != 0) return 0;
      if (!window_filter_[d]) steps *= static_cast<double>(dims[d].bound / span[d]);
    }
    std::int64_t first_words = 0;
    for (const auto& t : op_.tensors()) {
      if (t.role == mapex::TensorRole::kOutput) continue;
      std::int64_t words = 1;
      for (const auto& e : t.subscripts) words *= low_subscript_words(e, span);
      first_words += words;
    }
    const std::int64_t fill = std::max<std::int64_t>(
        0, hw_.noc_latency + (first_words + hw_.noc_bw - 1) / hw_.noc_bw - 1);
    const double compute = mapex::compute_cycles_bound(op_, arch_, partial);
    if (!tiles_fixed) return compute + static_cast<double>(fill);
    const std::int64_t refill = 2 * first_words / hw_.offchip_bw / 2;
    return std::max({compute + static_cast<double>(fill), steps * static_cast<double>(refill),
                     static_cast<double>(fill) + steps * nested_step_cycles(partial)});
  }

  /// The least runtime of one step of the top level when the split opens
  /// more than one region (mdc_transform.cpp: every split dimension gets a
  /// region of its own, each below the first opened by a Cluster): a
  /// step's compute is then the sub-level's runtime (engine.cpp, `level`),
  /// and each level below, which has no folds, runs one all-Init case: its
  /// sub-level's runtime (the innermost: its PEs' MAC steps) plus the NoC
  /// delay of its first tiles, at least the NoC latency (noc_delay of at
  /// least one word). So every step takes at least the PE's MAC steps
  /// (l1_tile_cycles: one tile, whole) plus that latency once per region
  /// below the top (sub_level_latency). 0 with one region (the top level is then
  /// the innermost, whose compute is the MAC steps alone, already in the
  /// compute bound). A filter split opens a region too (the lowering puts
  /// it below those of the other splits, and with only filters split adds
  /// a single-unit region on top: split_regions); a level with folds runs
  /// more cases, its first still all-Init, so the claim stands.
  double nested_step_cycles(const mapex::PartialMapping& partial) const {
    const int regions = split_regions(partial.mapping->level(1).split);
    if (regions < 2) return 0;
    return l1_tile_cycles(partial) + sub_levels_first_delays(partial, regions);
  }

  /// What the levels below the top add to a step at least, once L1's tile
  /// and the split are fixed. Each split dimension opens a region (a
  /// MAESTRO cluster level, mdc_transform.cpp lower_group): the first in
  /// L2's order is the top, the others nest below it in that order, and a
  /// level below the top has no folds, so each of its steps runs its one
  /// all-Init case (engine.cpp, case_delay): its sub-level's runtime plus
  /// the NoC delay of every input word its sub-units first receive
  /// (noc_delay: the latency plus the words over the bandwidth, minus one).
  /// The levels nest, so a top step takes the PE's MAC steps plus the sum
  /// of those delays. A level's sub-units each get their whole first tile
  /// (pe_ingress of an all-Init case is the mapped tile), which covers the
  /// PE's tile times the splits of the regions below it, and with multicast
  /// the words crossing are the union over its units: for each input, its
  /// footprint over the box of the PE's tile times the splits of that
  /// region and of every region below it (low_subscript_words: a window's
  /// overlapping rows once, a tensor that reads the dimension alone
  /// disjoint), clipped to the layer; without multicast more cross. L2's
  /// order is still free, so the regions' nesting is too: the least sum
  /// over every choice of the top and every nesting of the others, by a
  /// programme over the sets of split dimensions below a level (f(S) =
  /// delay(S) + min over y in S of f(S - y)). A filter window that is not
  /// split is whole in the PE's tile (Algorithm 1's lowering, MAESTRO's
  /// R/S rule). With a filter window split the lowering puts that region
  /// last and its rows inside the window's region (and with only filters
  /// split adds a single-unit top): only the latency per region is claimed
  /// there (the exhaustive prefix test finds completions below the word
  /// count). `regions` is split_regions' count.
  double sub_levels_first_delays(const mapex::PartialMapping& partial, int regions) const {
    const auto& spatial = partial.mapping->level(1);
    return first_delays_of_tile(spatial.split, spatial.cluster.active(),
                                partial.mapping->level(0).tile, regions);
  }

  /// sub_levels_first_delays for a split, whether the spatial level has a
  /// cluster tile, and a PE tile `l1_tile` (L1's tile values).
  double first_delays_of_tile(const std::vector<std::int64_t>& split, bool cluster,
                              const std::vector<std::int64_t>& l1_tile, int regions) const {
    const double per_latency = static_cast<double>(regions - 1) * sub_level_latency();
    const auto& dims = op_.dims();
    std::vector<std::size_t> split_dims;
    for (std::size_t d = 0; d < split.size() && d < dims.size(); ++d) {
      if (split[d] <= 1) continue;
      if (window_filter_[d]) return per_latency;
      split_dims.push_back(d);
    }
    const std::size_t r = split_dims.size();
    if (r < 2 || r > 8 || static_cast<int>(r) != regions || hw_.noc_bw <= 0) return per_latency;
    std::vector<std::int64_t> tile(dims.size(), 1);
    for (std::size_t d = 0; d < dims.size(); ++d) {
      // An unsplit filter window is mapped whole (as in l1_tile_cycles).
      const bool whole = window_filter_[d] && !cluster;
      tile[d] =
          std::max<std::int64_t>(1, whole ? dims[d].bound : std::min(l1_tile[d], dims[d].bound));
    }
    // The NoC delay of one level whose units' boxes span the set `mask` of
    // split dimensions (bit i: split_dims[i]).
    std::vector<std::int64_t> box(dims.size());
    auto delay = [&](std::uint32_t mask) {
      for (std::size_t d = 0; d < dims.size(); ++d) box[d] = tile[d];
      for (std::size_t i = 0; i < r; ++i)
        if (mask >> i & 1u) {
          const std::size_t d = split_dims[i];
          box[d] = std::min(tile[d] * split[d], dims[d].bound);
        }
      double words = 0;
      for (const auto& t : op_.tensors()) {
        if (t.role == mapex::TensorRole::kOutput) continue;
        double w = 1;
        for (const auto& e : t.subscripts) w *= static_cast<double>(low_subscript_words(e, box));
        words += w;
      }
      const double sends = std::ceil(words / static_cast<double>(hw_.noc_bw));
      return std::max(sub_level_latency(), static_cast<double>(hw_.noc_latency) + sends - 1.0);
    };
    const std::uint32_t all = (std::uint32_t{1} << r) - 1;
    std::vector<double> f(std::size_t{1} << r, 0.0);
    for (std::uint32_t mask = 1; mask <= all; ++mask) {
      double rest = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < r; ++i)
        if (mask >> i & 1u) rest = std::min(rest, f[mask & ~(std::uint32_t{1} << i)]);
      f[mask] = delay(mask) + rest;
    }
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < r; ++i) least = std::min(least, f[all & ~(std::uint32_t{1} << i)]);
    return std::max(per_latency, least);
  }

  /// The per-step bound of nested regions (nested_step_cycles) before L1's
  /// tile is fixed, over every completion whose spans divide the layer
  /// (PartialMapping::divisor_spans). With two regions or more every top
  /// step takes at least its busiest PE's MAC steps plus the NoC latency
  /// (the innermost level, which has no folds, runs one all-Init case), and
  /// a step's MACs are at most the engaged PEs (the product of every split,
  /// filters included) times that PE's; the steps' MAC steps therefore add
  /// up to at least the layer's MACs over those PEs and lanes. The filter
  /// windows count: one not split is mapped whole at every level
  /// (Algorithm 1's lowering, MAESTRO's R/S rule), so a 3x3 layer's PE
  /// covers its output tile times nine taps per step. The steps are at least
  /// prod ceil(B/T) over the non-filter dimensions (T: L2's tile, which
  /// every span lies inside), and, the split fixed, exactly prod B / (split
  /// x t) for the PE's tile t, which MAESTRO checks against L1: at least
  /// that product for the PE tile with the most non-filter MACs among those
  /// inside T / split that fit (largest_fitting_tiles; an unsplit filter
  /// window whole in it). Hence fill + max(compute, steps x latency + MACs
  /// / (PEs x lanes)). With the split still free, the engaged PEs are at
  /// most the fan-out and the product of L2's tiles, the steps at least the
  /// MACs over those PEs times the most MACs of a fitting tile inside T
  /// (the filter windows free); a completion with
  /// one region (at most one dimension split, not a filter window: a filter
  /// split opens a region of its own, split_regions) engages at most the
  /// largest non-filter L2 tile of PEs and
  /// has at least the MACs over those plus the least fill; the bound is the
  /// lower of the two cases. The fill is at least the NoC delay of one word
  /// per input once the split is free, the first fill of the split
  /// (step_bound_cycles) once it is fixed. 0 where step_bound_cycles claims
  /// nothing.
  double fewest_steps_cycles(const mapex::PartialMapping& partial) const {
    if (!partial.divisor_spans || partial.first_fixed < 1 || partial.first_fixed > 2 || l1_ != 0 ||
        l2_ != l1_ + 2 || arch_.levels()[1].kind != mapex::LevelKind::kSpatial)
      return 0;
    const auto& dims = op_.dims();
    const auto& l2_tile = partial.mapping->level(2).tile;
    double steps = 1, widest = 1, filter_units = 1, non_filter_units = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const std::int64_t tile = std::max<std::int64_t>(1, std::min(l2_tile[d], dims[d].bound));
      if (window_filter_[d]) {
        filter_units *= static_cast<double>(tile);
        continue;
      }
      steps *= static_cast<double>((dims[d].bound + tile - 1) / tile);
      widest = std::max(widest, static_cast<double>(tile));
      non_filter_units *= static_cast<double>(tile);
    }
    const double lanes = static_cast<double>(std::max<std::int64_t>(1, hw_.simd_lanes));
    const double latency = static_cast<double>(hw_.noc_latency);
    const double fanout = static_cast<double>(arch_.levels()[1].fanout());
    const double macs = static_cast<double>(op_.macs());
    if (partial.first_fixed == 1) {
      const auto& split = partial.mapping->level(1).split;
      double units = 1;
      for (std::size_t d = 0; d < split.size(); ++d)
        units *= static_cast<double>(std::max<std::int64_t>(1, split[d]));
      const int regions = split_regions(split);
      if (regions < 2) return 0;
      const double compute = mapex::compute_cycles_bound(op_, arch_, partial);
      const double fill = std::max(0.0, step_bound_cycles(partial) - compute);
      // The PE's tile lies inside L2's tile over the split; a filter window
      // not split is the whole window in every PE (MAESTRO's R/S rule).
      std::vector<std::vector<std::int64_t>> allowed(dims.size());
      double spans = 1;  // prod B / split over the non-filter dimensions
      for (std::size_t d = 0; d < dims.size(); ++d) {
        const std::int64_t s = std::max<std::int64_t>(1, split[d]);
        if (window_filter_[d] && s == 1) {
          allowed[d] = {dims[d].bound};
          continue;
        }
        const std::int64_t tile = std::max<std::int64_t>(1, std::min(l2_tile[d], dims[d].bound));
        allowed[d] = divisors_up_to(d, window_filter_[d] ? dims[d].bound : tile / s);
        if (!window_filter_[d])
          spans *= static_cast<double>(dims[d].bound) / static_cast<double>(s);
      }
      double least_steps = steps;
      const FittingTiles fit = largest_fitting_tiles(allowed);
      if (fit.searched) {
        if (fit.non_filter <= 0) return std::numeric_limits<double>::infinity();
        least_steps = std::max(least_steps, std::ceil(spans / fit.non_filter - 1e-9));
      }
      double delays = least_steps * static_cast<double>(regions - 1) * sub_level_latency();
      if (!spatial_cluster_active(partial)) {
        const double each = fewest_step_delays(split, allowed, spans, regions);
        if (std::isinf(each)) return each;
        delays = std::max(delays, each);
      }
      return fill + std::max(compute, delays + macs / (units * lanes));
    }
    std::int64_t inputs = 0;
    for (const auto& t : op_.tensors())
      if (t.role != mapex::TensorRole::kOutput) ++inputs;
    const double least_fill = static_cast<double>(
        std::max<std::int64_t>(0, hw_.noc_latency + (inputs + hw_.noc_bw - 1) / hw_.noc_bw - 1));
    const double peak = arch_.macs_per_pe();
    const double one_region = macs / (std::min(fanout, widest) * peak) + least_fill;
    // A split is at most L2's tile in every dimension (the span lies inside
    // it), so the engaged PEs are at most the fan-out and the product of
    // L2's tiles.
    const double units = std::min(fanout, non_filter_units * filter_units);
    std::vector<std::vector<std::int64_t>> allowed(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d)
      allowed[d] = divisors_up_to(
          d, window_filter_[d] ? dims[d].bound : std::min(l2_tile[d], dims[d].bound));
    double least_steps = steps;
    const FittingTiles fit = largest_fitting_tiles(allowed);
    if (fit.searched) {
      if (fit.macs <= 0) return std::numeric_limits<double>::infinity();
      least_steps = std::max(least_steps, std::ceil(macs / (units * fit.macs) - 1e-9));
    }
    const double regions = least_fill + std::max(macs / (fanout * peak),
                                                 least_steps * latency + macs / (units * lanes));
    return std::min(one_region, regions);
  }

  /// Whether the spatial level above L1 has a cluster tile (FLASH's T^out).
  static bool spatial_cluster_active(const mapex::PartialMapping& partial) {
    return partial.mapping->level(1).cluster.active();
  }

  /// The regions (MAESTRO cluster levels) Algorithm 1's lowering opens for
  /// a split (mdc_transform.cpp, lower_group): one per split dimension,
  /// and with only filter windows split one more on top, a single unit over
  /// another dimension.
  int split_regions(const std::vector<std::int64_t>& split) const {
    int others = 0, filters = 0;
    for (std::size_t d = 0; d < split.size(); ++d)
      if (split[d] > 1) ++(window_filter_[d] ? filters : others);
    return std::max(others, 1) + filters;
  }

  /// What each level below the top adds to a step at least: its one case
  /// is all-Init (engine.cpp, case_delay: compute plus ingress delay), and
  /// its ingress of at least one word takes noc_delay(1) = the NoC latency.
  /// Levels nest (a step of one is the runtime of the next), so a step of
  /// the top level over r regions takes the PE's MAC steps plus r - 1 of
  /// these.
  double sub_level_latency() const {
    return static_cast<double>(
        std::max<std::int64_t>(0, hw_.noc_latency + (hw_.noc_bw > 0 ? 1 : 0) - 1));
  }

  /// The divisors of dimension d's bound up to `limit`.
  std::vector<std::int64_t> divisors_up_to(std::size_t d, std::int64_t limit) const {
    std::vector<std::int64_t> out;
    const std::int64_t bound = op_.dims()[d].bound;
    for (std::int64_t v = 1; v <= std::min(limit, bound); ++v)
      if (bound % v == 0) out.push_back(v);
    return out;
  }

  /// The least steps x first delays of the levels below the top over the
  /// PE tiles among `allowed` that fit in L1 (as largest_fitting_tiles
  /// checks them), for a fixed split in a space of divisors: a tile t
  /// gives exactly spans / (t's non-filter MACs) top steps (`spans`: prod
  /// B / split over the non-filter dimensions) and each step waits at least
  /// first_delays_of_tile(t) beside its MAC steps; larger tiles mean fewer
  /// steps but more words, so every fitting tile is visited. Infinite when
  /// none fits; nothing (-1) where largest_fitting_tiles claims nothing.
  /// Remembered per split and list of allowed values.
  double fewest_step_delays(const std::vector<std::int64_t>& split,
                            const std::vector<std::vector<std::int64_t>>& allowed, double spans,
                            int regions) const {
    auto key = fitting_key(allowed);
    if (!key) return -1;
    for (const std::int64_t v : split) *key += std::to_string(v) + ';';
    {
      const std::lock_guard<std::mutex> lock(fitting_mutex_);
      if (const auto it = step_delay_cache_.find(*key); it != step_delay_cache_.end())
        return it->second;
    }
    double least = std::numeric_limits<double>::infinity();
    for_each_fitting_tile(
        allowed, [&](const std::vector<std::int64_t>& tile, double, double non_filter) {
          least = std::min(least,
                           spans / non_filter * first_delays_of_tile(split, false, tile, regions));
        });
    const std::lock_guard<std::mutex> lock(fitting_mutex_);
    if (step_delay_cache_.size() > (1u << 16)) step_delay_cache_.clear();
    step_delay_cache_.emplace(*key, least);
    return least;
  }

  /// The largest PE tiles among `allowed` values per dimension whose words
  /// fit in L1 as MAESTRO checks them (for_each_fitting_tile: every tile
  /// MAESTRO lets through is visited). Not searched (no claim) where
  /// fitting_key gives no key. Remembered per list of allowed values:
  /// siblings share them.
  FittingTiles largest_fitting_tiles(const std::vector<std::vector<std::int64_t>>& allowed) const {
    FittingTiles out;
    const auto key = fitting_key(allowed);
    if (!key) return out;
    {
      const std::lock_guard<std::mutex> lock(fitting_mutex_);
      if (const auto it = fitting_cache_.find(*key); it != fitting_cache_.end()) return it->second;
    }
    out.searched = true;
    for_each_fitting_tile(
        allowed, [&](const std::vector<std::int64_t>& tile, double macs, double non_filter) {
          out.macs = std::max(out.macs, macs);
          out.non_filter = std::max(out.non_filter, non_filter);
          double reduction = 1;
          for (std::size_t d = 0; d < tile.size(); ++d)
            if (top_reduction_[d]) reduction *= static_cast<double>(tile[d]);
          out.top_reduction = std::max(out.top_reduction, reduction);
        });
    const std::lock_guard<std::mutex> lock(fitting_mutex_);
    if (fitting_cache_.size() > (1u << 16)) fitting_cache_.clear();
    fitting_cache_.emplace(*key, out);
    return out;
  }

  /// The cache key of a list of allowed values per dimension for the
  /// fitting-tile searches, or nothing where they claim nothing: without
  /// the capacity check, on a chip whose L1 is also L2, or above 2^20
  /// combinations. Each list is a dimension's divisors up to its last value
  /// (divisors_up_to) or the whole filter window alone, so its last value
  /// and its length name it.
  std::optional<std::string> fitting_key(
      const std::vector<std::vector<std::int64_t>>& allowed) const {
    if (!check_capacity_ || l2_ == l1_) return std::nullopt;
    double combinations = 1;
    std::string key;
    for (const auto& values : allowed) {
      combinations *= static_cast<double>(values.size());
      key += std::to_string(values.empty() ? 0 : values.back()) + ':' +
             std::to_string(values.size()) + ',';
    }
    if (combinations > static_cast<double>(1 << 20) || combinations <= 0) return std::nullopt;
    return key;
  }

  /// Calls leaf(tile, MACs, non-filter MACs) for every PE tile among
  /// `allowed` whose words fit in L1 as MAESTRO checks them (engine.cpp,
  /// analyse: every tensor's innermost tile, double-buffered, against L1's
  /// capacity, halved for a single-buffered L1), words counted low (per
  /// subscript the fewer of its extent and its index combinations, as the
  /// floors do), so every tile MAESTRO lets through is visited. Depth first
  /// over the dimensions, the later ones at their least value: a tile's
  /// words grow with every dimension's value, so the first value that
  /// overflows ends its dimension.
  template <class Leaf>
  void for_each_fitting_tile(const std::vector<std::vector<std::int64_t>>& allowed,
                             Leaf&& leaf) const {
    const auto& l1 = arch_.levels()[static_cast<std::size_t>(l1_)];
    const double budget_words = static_cast<double>(l1.size_bytes) /
                                (2.0 * arch_.word_bytes() * (l1.double_buffered ? 1.0 : 0.5));
    const std::size_t n = allowed.size();
    std::vector<std::int64_t> tile(n, 1);
    for (std::size_t d = 0; d < n; ++d)
      if (!allowed[d].empty()) tile[d] = allowed[d].front();
    auto words = [&] {
      double total = 0;
      for (const auto& t : op_.tensors()) {
        double w = 1;
        for (const auto& e : t.subscripts) w *= static_cast<double>(low_subscript_words(e, tile));
        total += w;
      }
      return total;
    };
    auto visit = [&](auto&& self, std::size_t d, double macs, double non_filter) -> void {
      if (d == n) {
        leaf(tile, macs, non_filter);
        return;
      }
      for (std::int64_t v : allowed[d]) {
        tile[d] = v;
        if (words() > budget_words) break;
        const double x = static_cast<double>(v);
        self(self, d + 1, macs * x, window_filter_[d] ? non_filter : non_filter * x);
      }
      tile[d] = allowed[d].empty() ? 1 : allowed[d].front();
    };
    visit(visit, 0, 1.0, 1.0);
  }

  /// What the first step computes beside its fill (engine.cpp, case_delay:
  /// the all-Init step takes its compute plus its ingress delay, every
  /// other step at least its ingress delay), so the runtime is at least the
  /// NoC floor plus this. At least one cycle (a case with work computes at
  /// least one MAC step); once L1's tile is fixed, its MACs over the PE's
  /// lanes (the first tile is whole, clipped to the layer, and the
  /// innermost region's compute is one PE's MAC steps). Only for the chips
  /// step_bound_cycles reads (one spatial level between L1 and L2).
  double first_step_compute_cycles(const mapex::PartialMapping& partial) const {
    if (noc_floor_cycles_ <= 0) return 0;
    if (partial.first_fixed > 0 || l1_ != 0 || l2_ != l1_ + 2 ||
        arch_.levels()[1].kind != mapex::LevelKind::kSpatial)
      return 1;
    return l1_tile_cycles(partial);
  }

  /// One PE's MAC steps on its L1 tile (fixed): the tile's MACs, clipped
  /// to the layer, over the PE's lanes. A filter window that is not split
  /// counts whole: Algorithm 1's lowering maps a filter dimension that is
  /// mapped in time whole (MAESTRO's R/S rule), so each PE covers every tap
  /// of it per step.
  double l1_tile_cycles(const mapex::PartialMapping& partial) const {
    const auto& tile = partial.mapping->level(0).tile;
    const auto& spatial = partial.mapping->level(1);
    const auto& split = spatial.split;
    std::int64_t macs = 1;
    for (std::size_t d = 0; d < tile.size(); ++d) {
      const std::int64_t bound = op_.dims()[d].bound;
      const bool whole =
          window_filter_[d] && !spatial.cluster.active() && (split.size() <= d || split[d] <= 1);
      macs *= std::max<std::int64_t>(1, whole ? bound : std::min(tile[d], bound));
    }
    return static_cast<double>((macs + hw_.simd_lanes - 1) /
                               std::max<std::int64_t>(1, hw_.simd_lanes));
  }

  /// Per tensor of the operator, the fewest words any mapping moves of it
  /// (mapex::tensor_word_floors).
  void set_floors() {
    const auto words = mapex::tensor_word_floors(op_);
    const auto& names = names_;
    const auto& l1 = arch_.levels()[static_cast<std::size_t>(l1_)];
    const auto& l2 = arch_.levels()[static_cast<std::size_t>(l2_)];
    const double macs = static_cast<double>(op_.macs());
    // engine.cpp: every partial sum reads its two operands and reads and
    // writes its output in L1 (l1_rd, l1_wr per case), once per MAC.
    if (!names[0].empty() && !names[1].empty())
      onchip_floor_pj_ += macs * (l1.read_energy_of(names[0]) + l1.read_energy_of(names[1]) +
                                  l1.read_energy_of(names[2]) + l1.write_energy_of(names[2]));
    // Every word of each tensor crosses L2 and the NoC at least once: an
    // input is written into L2 (l2_wr: the tensor's size), read out of it
    // and written into an L1 (l2_rd, l1_wr: the step ingress, which covers
    // every word the MACs read); the output is written to L2 (l2_wr: the
    // step egress) and read out once (l2_rd: its size).
    double in_words = 0, out_words = 0;
    for (std::size_t t = 0; t < op_.tensors().size(); ++t) {
      const auto& tensor = op_.tensors()[t];
      const double w = words[t];
      if (tensor.role == mapex::TensorRole::kOutput) {
        out_words += w;
        output_floor_words_ = w;
        if (l2_ != l1_)
          onchip_floor_pj_ +=
              w * (l2.read_energy_of(tensor.name) + l2.write_energy_of(tensor.name));
      } else {
        in_words += w;
        if (l2_ != l1_)
          onchip_floor_pj_ +=
              w * (l2.read_energy_of(tensor.name) + l2.write_energy_of(tensor.name));
        onchip_floor_pj_ += w * l1.write_energy_of(tensor.name);
      }
    }
    // Each step's NoC delay (engine.cpp, noc_delay) is latency - 1 +
    // ceil(words / bandwidth) and the steps' runtimes add up, each at least
    // its ingress and its egress delay: with a latency of at least one
    // cycle the runtime is at least every input word and, apart, every
    // output word over the bandwidth.
    if (hw_.noc_latency >= 1 && hw_.noc_bw > 0)
      noc_floor_cycles_ = std::max(in_words, out_words) / static_cast<double>(hw_.noc_bw);
    // R and S of a convolution (filter windows over P and Q).
    for (const auto& d : op_.dims())
      window_filter_.push_back((d.name == "R" && op_.find_dim("P") >= 0) ||
                               (d.name == "S" && op_.find_dim("Q") >= 0));
    // The dimensions the output lacks that the top level steps through:
    // its reduction but the filter windows (mapped whole there).
    for (std::size_t d = 0; d < op_.dims().size(); ++d)
      top_reduction_.push_back(!window_filter_[d] &&
                               !op_.output().relevant(static_cast<mapex::DimId>(d)));
  }

  std::optional<mapex::Unsupported> unsupported(const mapex::Mapping& mapping) const override {
    for (int level : {l1_, l2_})
      for (int t = 0; t < static_cast<int>(op_.tensors().size()); ++t)
        if (!mapping.keeps(op_, arch_, level, t))
          return mapex::Unsupported{
              arch_.levels()[static_cast<std::size_t>(level)].name, "keep",
              "bypasses tensor '" + op_.tensors()[static_cast<std::size_t>(t)].name +
                  "'; cost model 'mdc' (MAESTRO's analysis) keeps every tensor in L1 and L2 and "
                  "cannot model a bypass (use roofline or tensor_centric)"};
    return std::nullopt;
  }

  /// The operator's tensors in MAESTRO's roles (§III, Table 1: input,
  /// filter, output), matched by the dimensions they index, not by their
  /// place in the operator: MAESTRO's input is the operand indexed by the
  /// batch dimension N (the rows M of a GEMM, which MAESTRO couples to its
  /// input), its filter the other operand. "" where no operand fits a role
  /// unambiguously (an operator MAESTRO has no layer for; evaluate refuses
  /// it when it lowers the mapping).
  static std::array<std::string, 3> maestro_tensors(const mapex::Operator& op) {
    std::array<std::string, 3> names{"", "", op.output().name};
    const bool gemm = op.kind() == "gemm" || (op.find_dim("M") >= 0 && op.find_dim("N") >= 0 &&
                                              op.find_dim("K") >= 0 && op.num_dims() == 3);
    const mapex::DimId row = op.find_dim(gemm ? "M" : "N");
    std::vector<const mapex::Tensor*> with_row, without_row;
    for (const auto& t : op.tensors())
      if (t.role == mapex::TensorRole::kInput)
        (row >= 0 && t.relevant(row) ? with_row : without_row).push_back(&t);
    if (with_row.size() == 1 && without_row.size() == 1) {
      names[0] = with_row.front()->name;
      names[1] = without_row.front()->name;
    }
    return names;
  }

  /// A partitioned L1 or L2: each partition must hold MAESTRO's per-tensor
  /// requirement of the tensors it holds (double-buffered as MAESTRO sizes
  /// them, halved for a single-buffered level, as for the whole level).
  std::optional<std::string> partition_overflow(const mapex::Level& l,
                                                const double (&words)[3]) const {
    if (l.partitions.empty()) return std::nullopt;
    const auto& names = names_;
    const double scale = arch_.word_bytes() * (l.double_buffered ? 1.0 : 0.5);
    for (const auto& p : l.partitions) {
      double need = 0;
      std::string held;
      for (int t = 0; t < 3; ++t)
        if (!names[static_cast<std::size_t>(t)].empty() &&
            l.partition_of(names[static_cast<std::size_t>(t)]) == &p) {
          need += words[t] * scale;
          held += (held.empty() ? "" : ", ") + names[static_cast<std::size_t>(t)];
        }
      if (need > static_cast<double>(p.size_bytes))
        return l.name + "/" + p.name + ": tiles of " + held + " need " +
               std::to_string(static_cast<long long>(need)) + " B" +
               (l.double_buffered ? " (double-buffered)" : "") + ", partition capacity " +
               std::to_string(p.size_bytes) + " B";
    }
    return std::nullopt;
  }

  // ---- end of keep/bypass and partitions ----

  mapex::Metrics to_metrics(const Result& r, const mapex::Mapping& mapping, double l1_req,
                            double l2_req) const {
    // The loop-nest analysis of the same mapping (mapex/analysis.hpp) gives
    // the two figures MAESTRO's analysis has no term for: the compute bound
    // (the MACs of the busiest PE, edge tiles included, the meaning
    // `compute_cycles` has under every model) and the off-chip traffic.
    // MAESTRO's top cluster level reads from L2 (§IV), and Algorithm 1 gives
    // DRAM's loops over L2 tiles no region (Marvel §4), so DRAM traffic is
    // the L2 tile refills of DRAM's loop nest, as Marvel's decoupled
    // off-chip model counts them (§5.1, with one-word blocks).
    // Per-thread storage kept between evaluations (a fresh NestAnalysis
    // allocates every vector anew); analyse_into starts from scratch.
    thread_local mapex::NestAnalysis scratch;
    mapex::analyse_into(op_, arch_, mapping, scratch);
    const mapex::NestAnalysis& a = scratch;
    const auto nest_levels = mapex::level_metrics(op_, arch_, a);
    mapex::Metrics m;
    m.valid = true;
    m.macs = r.true_macs;
    m.compute_cycles = a.compute_cycles;
    m.latency_cycles = r.runtime_cycles;
    m.bound_by = "mdc";
    // MAESTRO's tensors are input, filter, output (names_).
    const auto& names = names_;
    const double rd1[3] = {r.input_l1_rd, r.filter_l1_rd, r.output_l1_rd};
    const double wr1[3] = {r.input_l1_wr, r.filter_l1_wr, r.output_l1_wr};
    const double rd2[3] = {r.input_l2_rd, r.filter_l2_rd, r.output_l2_rd};
    const double wr2[3] = {r.input_l2_wr, r.filter_l2_wr, r.output_l2_wr};
    const auto& levels = arch_.levels();
    double total = r.num_macs * arch_.mac_energy_pj();
    m.energy_breakdown_pj.emplace_back("mac", total);
    double dram_cycles = 0;
    for (int i = 0; i < arch_.num_levels(); ++i) {
      const auto& l = levels[static_cast<std::size_t>(i)];
      mapex::LevelMetrics lm;
      lm.level = l.name;
      if (i == dram_) {
        lm = nest_levels[static_cast<std::size_t>(i)];
        dram_cycles = lm.transfer_cycles;
      } else {
        lm.capacity_bytes =
            l.kind == mapex::LevelKind::kBuffer ? static_cast<double>(l.size_bytes) : 0;
        const bool is_l1 = i == l1_, is_l2 = i == l2_ && l2_ != l1_;
        for (int t = 0; t < 3; ++t) {
          mapex::TensorAccess acc;
          acc.tensor = names[static_cast<std::size_t>(t)];
          if (is_l1) {
            acc.reads = rd1[t];
            acc.writes = wr1[t];
          } else if (is_l2) {
            acc.reads = rd2[t];
            acc.writes = wr2[t];
          }
          // A partitioned level charges each tensor its partition's energies.
          lm.energy_pj +=
              acc.reads * l.read_energy_of(acc.tensor) + acc.writes * l.write_energy_of(acc.tensor);
          if (!acc.tensor.empty()) lm.tensors.push_back(acc);
        }
        if (is_l1) lm.required_bytes = l1_req;
        if (is_l2) lm.required_bytes = l2_req;
      }
      total += lm.energy_pj;
      m.energy_breakdown_pj.emplace_back(l.name, lm.energy_pj);
      m.levels.push_back(lm);
    }
    m.energy_pj = total;
    // Off-chip time: a double-buffered L2 refills its next tile while the
    // array works on the current one (MAESTRO §IV's overlap, one level up),
    // so the slower of the two bounds the layer; a single-buffered L2 waits
    // for each refill.
    const auto& l2 = levels[static_cast<std::size_t>(l2_)];
    if (l2.double_buffered) {
      if (dram_cycles > m.latency_cycles) {
        m.latency_cycles = dram_cycles;
        m.bound_by = levels[static_cast<std::size_t>(dram_)].name;
      }
    } else {
      m.latency_cycles += dram_cycles;
    }
    const double peak = static_cast<double>(arch_.num_pes()) * arch_.macs_per_pe();
    m.utilization = m.latency_cycles > 0 ? r.true_macs / (m.latency_cycles * peak) : 0;
    return m;
  }

  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  bool check_capacity_;
  bool maestro_compat_;
  std::array<std::string, 3> names_;  // maestro_tensors
  int l1_ = -1, l2_ = -1, dram_ = -1;
  mapex::DramFloor dram_floor_;
  Hardware hw_;
  std::vector<char> window_filter_;
  std::vector<char> top_reduction_;  // set in set_floors
  double onchip_floor_pj_ = 0;
  double noc_floor_cycles_ = 0;
  double output_floor_words_ = 0;  // the output's L2 writes counted in the floor
  // Largest fitting tiles per list of allowed values (largest_fitting_tiles),
  // shared by the threads that bound siblings.
  mutable std::mutex fitting_mutex_;
  mutable std::unordered_map<std::string, FittingTiles> fitting_cache_;
  mutable std::unordered_map<std::string, double> step_delay_cache_;  // fewest_step_delays
};

class Mdc final : public mapex::CostModel, public mapex::mdc::DirectiveEvaluator {
 public:
  explicit Mdc(const mapex::Params& params)
      : check_capacity_(params.get_bool("check_capacity")),
        maestro_compat_(params.get_bool("maestro_compat")) {}
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundMdc>(op, arch, check_capacity_, maestro_compat_);
  }
  Result evaluate_directives(const mapex::mdc::Layer& layer, const Hardware& hw) const override {
    const auto plan = mapex::mdc::engine::compile(layer, hw, layer.dim("N") > 0, maestro_compat_);
    Result r = mapex::mdc::engine::analyse(plan);
    r.layer_name = layer.name;
    return r;
  }

 private:
  bool check_capacity_;
  bool maestro_compat_;
};

const mapex::ParamSpec kParams[] = {
    {"check_capacity", mapex::ParamType::kBool, "true",
     "Mark canonical mappings whose double-buffered tiles overflow L1 or L2 invalid (MAESTRO "
     "itself only warns)."},
    {"maestro_compat", mapex::ParamType::kBool, "false",
     "Reproduce MAESTRO's own numbers (its iteration space, including its miscounts on strided "
     "layers and its order-dependent off-chip bandwidth) instead of the true ones."},
};

mapex::CostModel* make(const mapex::Params& params) { return new Mdc(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "mdc",
    "1.0.0",
    "MAESTRO's data-centric analysis (IEEE Micro 2020, §IV); canonical mappings via Marvel Alg. 1",
    kParams,
    std::size(kParams),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
