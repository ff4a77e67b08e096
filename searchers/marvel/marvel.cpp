// The Marvel searcher (Chatarasi et al., TACO 2021, §5): the decoupled
// off-chip / on-chip search.
//
// 1. Off-chip sub-space (§5.1): every level-3 tile (the buffer right below
//    DRAM) with every DRAM layout, scored by the distinct-block model
//    (mapex/db_locality.hpp) under the L2 constraint with double buffering;
//    the `offchip_candidates` tiles with the lowest DMC are kept, each with
//    its level-3 inter-tile order from the partial derivatives of DMC.
// 2. On-chip sub-space (§5.2, Algorithm 2) on each kept tile: level-1
//    tiles, level-2 tiles (parallelism over any number of dimensions, each
//    a cluster region by Algorithm 1) and the level-2 inter-tile order,
//    pruned by the PE-utilisation bound p and factors-only tiles, and
//    evaluated with the job's cost model (mdc).
//
// The on-chip sub-space is still large (Fig. 10: 5.9e7 on average after
// pruning), so it is searched in coordinate steps, each exhaustive over
// its part: (1) the degrees of parallelism (level-2 tiles) with one-element
// level-1 tiles, keeping the `split_candidates` best; (2) every level-1
// tile under each of them; (3) every level-2 order for the
// `order_candidates` best tilings. Steps 1-2 set the level-2 order to the
// level-3 order (the same reuse argument, §5.1). The order of point loops
// inside a PE carries no reuse in the MDC model (Algorithm 1 emits them as
// one tile per step), so it is fixed.
//
// Mapping styles (Marvel §6: "parallelization and loop order constraints
// on the on-chip mapping space") come from the job's mapspace constraints
// and apply to the on-chip levels: their parallel dimensions everywhere,
// their level-2 orders in step 3 (steps 1-2 use one order they allow).
// DRAM's order is always Marvel's, and the point-loop order is fixed.
// Every evaluation goes through SearchContext (parallel, merged in
// order), so the result is the same at any thread count.

#include <algorithm>
#include <cmath>
#include <limits>
#include <mapex/db_locality.hpp>
#include <mapex/mdc.hpp>
#include <mapex/plugin.hpp>
#include <numeric>
#include <sstream>

namespace {

using mapex::DimId;
using mapex::LevelKind;
using mapex::LevelRule;
using mapex::Mapping;
using mapex::MapspaceOptions;

/// Level-3 tiles the off-chip search enumerates at most (factors-only
/// tiles of real layers stay under 1e6; every size of a large layer does
/// not).
constexpr double kMaxOffchipTiles = 2e8;

struct Settings {
  double min_utilization = 0.1;
  bool factors_only = true;
  std::size_t offchip_candidates = 1;
  std::int64_t block_bytes = 0;
  int max_parallel_dims = 0;
  std::size_t order_candidates = 32;
  std::size_t split_candidates = 128;
  std::size_t batch = 4096;
};

std::string dims_text(const mapex::Operator& op, const std::vector<std::int64_t>& values) {
  std::string s;
  for (std::size_t d = 0; d < values.size(); ++d)
    s += (s.empty() ? "" : " ") + op.dims()[d].name + std::to_string(values[d]);
  return s;
}

std::string order_text(const mapex::Operator& op, const std::vector<DimId>& order) {
  std::string s;
  for (DimId d : order) s += op.dims()[static_cast<std::size_t>(d)].name;
  return s;
}

std::vector<DimId> identity_order(int n) {
  std::vector<DimId> o(static_cast<std::size_t>(n));
  std::iota(o.begin(), o.end(), 0);
  return o;
}

/// The best `keep` mappings of a stream of evaluations by objective value
/// (ties to the earlier one).
class TopK {
 public:
  explicit TopK(std::size_t keep) : keep_(keep) {}
  void offer(double value, std::uint64_t index, const Mapping& m) {
    if (!std::isfinite(value)) return;
    Entry e{value, index, m};
    auto less = [](const Entry& a, const Entry& b) {
      return a.value != b.value ? a.value < b.value : a.index < b.index;
    };
    if (entries_.size() == keep_ && !less(e, entries_.back())) return;
    entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e, less), std::move(e));
    if (entries_.size() > keep_) entries_.pop_back();
  }
  std::vector<Mapping> mappings() const {
    std::vector<Mapping> out;
    for (const auto& e : entries_) out.push_back(e.mapping);
    return out;
  }

 private:
  struct Entry {
    double value;
    std::uint64_t index;
    Mapping mapping;
  };
  std::size_t keep_;
  std::vector<Entry> entries_;
};

class Marvel final : public mapex::Searcher {
 public:
  explicit Marvel(const mapex::Params& p) {
    s_.min_utilization = p.get_double("min_utilization");
    s_.factors_only = p.get_bool("factors_only");
    const auto candidates = p.get_int("offchip_candidates");
    const auto orders = p.get_int("order_candidates");
    const auto splits = p.get_int("split_candidates");
    s_.block_bytes = p.get_int("block_bytes");
    const auto par = p.get_int("max_parallel_dims");
    auto bad = [](const char* key, const std::string& what) {
      throw mapex::InputError(mapex::SourceLocation{}, key, "searcher 'marvel' expects " + what);
    };
    if (!(s_.min_utilization >= 0 && s_.min_utilization <= 1))
      bad("min_utilization", "a PE-utilisation bound in [0, 1]");
    if (candidates < 1) bad("offchip_candidates", "at least 1 off-chip candidate");
    if (orders < 0) bad("order_candidates", "0 or more tilings to explore level-2 orders for");
    if (splits < 0) bad("split_candidates", "0 (every tiling at once) or more");
    if (s_.block_bytes < 0) bad("block_bytes", "a block size >= 0 (0: the architecture's)");
    if (par < 0) bad("max_parallel_dims", "0 (any number) or more");
    s_.offchip_candidates = static_cast<std::size_t>(candidates);
    s_.order_candidates = static_cast<std::size_t>(orders);
    s_.split_candidates = static_cast<std::size_t>(splits);
    s_.max_parallel_dims = static_cast<int>(par);
  }

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const auto& op = ctx.op();
    const auto& arch = ctx.arch();
    require_conformable(op);
    // The DB model (§5.1) counts blocks of words of one size.
    mapex::require_uniform_word_bits(op, arch, "searcher 'marvel' (Marvel §5.1)");
    const int dram = arch.num_levels() - 1;
    const int outer = ctx.mapspace().outer_buffer();
    if (outer < 0)
      throw mapex::InputError("architecture '" + arch.name() +
                              "': Marvel needs a buffer right below DRAM for level-3 tiles");
    const auto& base = ctx.mapspace().options();

    // §5.1: the off-chip sub-space under the DB model.
    const auto& l2 = arch.levels()[static_cast<std::size_t>(outer)];
    const std::int64_t block_bytes =
        s_.block_bytes > 0 ? s_.block_bytes
                           : arch.levels()[static_cast<std::size_t>(dram)].block_bytes;
    const mapex::db::Model model(op, block_bytes, arch.word_bytes());
    const auto values = tile_values(op, base, outer);
    double tiles = 1;
    for (const auto& v : values) tiles *= static_cast<double>(v.size());
    if (tiles > kMaxOffchipTiles)
      throw mapex::InputError(mapex::SourceLocation{}, "factors_only",
                              "searcher 'marvel': the off-chip sub-space of '" + op.name() +
                                  "' has " + std::to_string(static_cast<long long>(tiles)) +
                                  " level-3 tiles, too many to enumerate; keep factors_only=true "
                                  "or fix some level-3 tile sizes");
    double considered = 0;
    const auto offchip = mapex::db::search_offchip(model, values, mapex::db::usable_bytes(l2),
                                                   s_.offchip_candidates, &considered);
    if (offchip.empty()) {
      const auto minimal = mapex::db::minimal_choice(model, values);
      throw mapex::InputError("architecture '" + arch.name() + "': " + l2.name + " (" +
                              std::to_string(l2.size_bytes) + " B" +
                              (l2.double_buffered ? ", half of it per double-buffered tile" : "") +
                              ") cannot hold even a minimal level-3 tile of '" + op.name() + "' (" +
                              dims_text(op, minimal.tile) + "): its distinct DRAM blocks need " +
                              std::to_string(static_cast<long long>(minimal.required_bytes)) +
                              " B with " + std::to_string(block_bytes) + " B blocks");
    }

    // §5.2: the on-chip sub-space on each kept off-chip mapping.
    std::uint64_t tilings = 0, ordered = 0;
    double p = std::max(s_.min_utilization, base.min_utilization);
    for (int attempt = 0; attempt < 2; ++attempt) {
      for (const auto& choice : offchip) {
        if (ctx.exhausted()) break;
        const auto [a, b] = search_onchip(ctx, choice, outer, dram, p);
        tilings += a;
        ordered += b;
      }
      // A layer too small for the bound on this chip: drop the bound rather
      // than return nothing (reported in the stop reason).
      if (ctx.best_mapping() || p == 0 || ctx.exhausted()) break;
      p = 0;
    }

    const auto& best = offchip.front();
    std::ostringstream why;
    why << "marvel: " << static_cast<std::uint64_t>(considered)
        << " off-chip points; level-3 tile [" << dims_text(op, best.tile) << "] DMC " << best.dmc
        << " blocks/iteration, order " << order_text(op, best.order) << ", layouts";
    for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
      why << " " << op.tensors()[static_cast<std::size_t>(t)].name
          << mapex::db::format_layout(op, t, best.layouts[static_cast<std::size_t>(t)]);
    why << "; on-chip " << tilings << " tilings + " << ordered << " level-2 orders";
    if (p != std::max(s_.min_utilization, base.min_utilization))
      why << " (PE-utilisation bound dropped: no mapping reached it)";
    // The framework's convention for a search cut short (the full story
    // is only worth telling for a finished one).
    if (ctx.exhausted()) return {false, "budget"};
    return {false, why.str()};
  }

 private:
  static void require_conformable(const mapex::Operator& op) {
    const auto issues = mapex::mdc::check_conformability(op);
    if (issues.empty()) return;
    const auto& i = issues.front();
    throw mapex::InputError("operator '" + op.name() +
                            "' is not conformable to the MDC notation (Marvel §3), rule " +
                            std::to_string(i.rule) + ": " + i.detail);
  }

  /// Candidate level-3 tile sizes per dimension: divisors of the bound
  /// (factors only, §5.2) or every size, or the value the constraints fix.
  std::vector<std::vector<std::int64_t>> tile_values(const mapex::Operator& op,
                                                     const MapspaceOptions& base, int outer) const {
    std::vector<std::vector<std::int64_t>> values;
    for (DimId d = 0; d < op.num_dims(); ++d) {
      const std::int64_t bound = op.dims()[static_cast<std::size_t>(d)].bound;
      std::vector<std::int64_t> v;
      std::int64_t fixed = 0;
      if (!base.levels.empty()) {
        const auto& f = base.levels[static_cast<std::size_t>(outer)].fixed;
        if (!f.empty()) fixed = f[static_cast<std::size_t>(d)];
      }
      if (fixed > 0) {
        v.push_back(fixed);
      } else {
        for (std::int64_t t = 1; t <= bound; ++t)
          if (!s_.factors_only || bound % t == 0) v.push_back(t);
      }
      values.push_back(std::move(v));
    }
    return values;
  }

  /// One loop order a level's rule allows, as close to `preferred` as the
  /// rule lets it be: the rule's first order, or `preferred` with the
  /// loops that index the first stationary tensor moved outside the others
  /// (which keeps that tensor stationary), or `preferred` itself.
  static std::vector<DimId> representative_order(const mapex::Operator& op, const LevelRule& rule,
                                                 std::vector<DimId> preferred) {
    if (!rule.orders.empty()) return rule.orders.front();
    if (!rule.stationary.empty()) {
      const int t = rule.stationary.front();
      std::stable_partition(preferred.begin(), preferred.end(),
                            [&](DimId d) { return op.relevant(t, d); });
    }
    return preferred;
  }

  /// The job's rules with the off-chip mapping fixed: level-3 tile and
  /// order, the point-loop order, the pruning options.
  MapspaceOptions onchip_options(const mapex::SearchContext& ctx,
                                 const mapex::db::OffchipChoice& choice, int outer, int dram,
                                 double p) const {
    const auto& op = ctx.op();
    const auto& arch = ctx.arch();
    MapspaceOptions o = ctx.mapspace().options();
    if (o.levels.empty()) o.levels.resize(static_cast<std::size_t>(arch.num_levels()));
    o.factors_only = s_.factors_only;
    o.min_utilization = p;
    o.max_parallel_dims = s_.max_parallel_dims > 0 ? s_.max_parallel_dims : op.num_dims();
    o.levels[static_cast<std::size_t>(outer)].fixed = choice.tile;
    auto& dram_rule = o.levels[static_cast<std::size_t>(dram)];
    dram_rule.orders = {choice.order};
    dram_rule.stationary.clear();
    auto& l1 = o.levels[0];
    if (arch.levels()[0].kind == LevelKind::kBuffer) {
      l1.orders = {representative_order(op, l1, identity_order(op.num_dims()))};
      l1.stationary.clear();
    }
    return o;
  }

  /// Streams a mapspace through the context in batches and offers every
  /// result to `top`; returns the evaluations made.
  std::uint64_t stream(mapex::SearchContext& ctx, const MapspaceOptions& options, TopK& top) const {
    std::uint64_t index = ctx.evaluations();  // ties go to the earlier evaluation
    const mapex::Mapspace space(ctx.op(), ctx.arch(), options);
    mapex::Mapspace::Cursor cursor(space);
    std::vector<Mapping> batch;
    Mapping m;
    std::uint64_t evaluated = 0;
    bool more = true;
    while (more && !ctx.exhausted()) {
      batch.clear();
      while (batch.size() < s_.batch && (more = cursor.next(m))) batch.push_back(m);
      if (batch.empty()) break;
      const auto metrics = ctx.evaluate(batch);
      for (std::size_t i = 0; i < metrics.size(); ++i)
        top.offer(mapex::objective_value(metrics[i], ctx.objective()), index++, batch[i]);
      evaluated += metrics.size();
      if (metrics.size() < batch.size()) break;
    }
    return evaluated;
  }

  /// Fixes every level below `outer` to the tiles and splits of `m`
  /// (spatial levels only when `splits_only`).
  static void fix_below(MapspaceOptions& o, const mapex::Operator& op,
                        const mapex::Architecture& arch, const Mapping& m, int outer,
                        bool splits_only) {
    for (int i = 0; i < outer; ++i) {
      const bool spatial = arch.levels()[static_cast<std::size_t>(i)].kind == LevelKind::kSpatial;
      if (splits_only && !spatial) continue;
      auto& rule = o.levels[static_cast<std::size_t>(i)];
      rule.fixed = spatial ? m.level(i).split : m.level(i).tile;
      // A cluster level (when a constraint turned it on): its split goes
      // with the level's split; its tile T^out, which depends on the tiles
      // below, with the whole tiling (the trivial cluster: units 1, T^out
      // the span below).
      if (spatial && rule.cluster.enabled) {
        const auto& c = m.level(i).cluster;
        const auto n = m.level(i).split.size();
        rule.cluster.fixed_split = c.active() ? c.split : std::vector<std::int64_t>(n, 1);
        if (!splits_only)
          rule.cluster.fixed_tile = c.active() ? c.tile
                                    : i > 0    ? m.span(op, arch, i - 1)
                                               : std::vector<std::int64_t>(n, 1);
      }
    }
  }

  /// Algorithm 2 on one off-chip mapping; returns (tilings, ordered)
  /// evaluations.
  std::pair<std::uint64_t, std::uint64_t> search_onchip(mapex::SearchContext& ctx,
                                                        const mapex::db::OffchipChoice& choice,
                                                        int outer, int dram, double p) const {
    const auto& op = ctx.op();
    const auto& arch = ctx.arch();
    const MapspaceOptions base = onchip_options(ctx, choice, outer, dram, p);
    // Level-2 order = level-3 order for the tiling steps, unless the style
    // constrains it.
    MapspaceOptions tiling = base;
    auto& l2_rule = tiling.levels[static_cast<std::size_t>(outer)];
    l2_rule.orders = {representative_order(op, l2_rule, choice.order)};
    l2_rule.stationary.clear();

    TopK best_tilings(std::max<std::size_t>(1, s_.order_candidates));
    std::uint64_t evaluated = 0;
    const bool l1_buffer = arch.levels()[0].kind == LevelKind::kBuffer;
    if (s_.split_candidates == 0 || !l1_buffer) {
      evaluated += stream(ctx, tiling, best_tilings);
    } else {
      // Step 1: the degrees of parallelism, each PE holding one-element
      // tiles (or what the style fixes); step 2: every level-1 tile under
      // the `split_candidates` best of them.
      MapspaceOptions splits = tiling;
      auto& l1_fixed = splits.levels[0].fixed;
      if (l1_fixed.empty()) l1_fixed.assign(static_cast<std::size_t>(op.num_dims()), 0);
      for (auto& f : l1_fixed)
        if (f == 0) f = 1;
      TopK best_splits(s_.split_candidates);
      evaluated += stream(ctx, splits, best_splits);
      for (const auto& m : best_splits.mappings()) {
        if (ctx.exhausted()) break;
        MapspaceOptions tiles = tiling;
        fix_below(tiles, op, arch, m, outer, true);
        evaluated += stream(ctx, tiles, best_tilings);
      }
    }
    if (s_.order_candidates == 0) return {evaluated, 0};

    // Step 3: every level-2 order on the best tilings.
    std::uint64_t ordered = 0;
    for (const auto& t : best_tilings.mappings()) {
      if (ctx.exhausted()) break;
      MapspaceOptions orders = base;
      fix_below(orders, op, arch, t, outer, false);
      const mapex::Mapspace orders_space(op, arch, orders);
      ordered += ctx.evaluate_space(orders_space).evaluated;
    }
    return {evaluated, ordered};
  }

  Settings s_;
};

const mapex::ParamSpec kParams[] = {
    {"min_utilization", mapex::ParamType::kDouble, "0.1",
     "PE-utilisation bound p (§5.2): level-2 tiles must engage at least this fraction of the "
     "PEs (dropped for a layer where nothing reaches it)."},
    {"factors_only", mapex::ParamType::kBool, "true",
     "Tile sizes divide the loop bounds: no prologues or epilogues (§5.2)."},
    {"offchip_candidates", mapex::ParamType::kInt, "1",
     "Off-chip mappings (lowest DMC first) whose on-chip sub-space is searched; more trades "
     "time for quality."},
    {"order_candidates", mapex::ParamType::kInt, "32",
     "Best tilings (with the level-3 order at level 2) whose every level-2 order is then "
     "evaluated; 0 keeps the level-3 order."},
    {"split_candidates", mapex::ParamType::kInt, "128",
     "Degrees of parallelism (ranked with one-element level-1 tiles) whose every level-1 tile "
     "is then evaluated; 0 evaluates all level-1 tiles and splits jointly."},
    {"block_bytes", mapex::ParamType::kInt, "0",
     "DRAM block size in bytes for the DB model; 0 takes the architecture's DRAM block_bytes."},
    {"max_parallel_dims", mapex::ParamType::kInt, "0",
     "Dimensions split across the PEs; 0 allows any number (one cluster region each, §4)."},
};

mapex::Searcher* make(const mapex::Params& params) { return new Marvel(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "marvel",
    "1.0.0",
    "Marvel's decoupled search (TACO 2021 §5): off-chip by the DB model, then on-chip by the "
    "job's cost model",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
