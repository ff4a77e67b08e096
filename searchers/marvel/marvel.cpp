// The Marvel searcher (Chatarasi et al., TACO 2021, §5): the decoupled
// off-chip / on-chip search.
//
// Names. The paper numbers tiling levels (§4, "Multi-level tiling tile
// sizes"), mapex numbers the chip's levels; on a three-level chip
// (L1 / PE array / L2 / DRAM):
//   paper                          mapex
//   level-1 tile                   the L1 tile (innermost buffer)
//   level-2 tile (parallelism)     the span of the PE array: L1 tile x split
//   level-3 tile                   the tile of the global buffer right below
//                                  DRAM (`outer`, here called global_buffer)
//   level-2 inter-tile order       the loop order of the global buffer's
//                                  level (over level-2 tiles)
//   level-3 inter-tile order       DRAM's loop order (over level-3 tiles)
// so the comments below use the paper's level numbers for tiles and
// orders and the chip's names (L1, L2) for buffers.
//
// 1. Off-chip sub-space (§5.1): every level-3 tile (the buffer right below
//    DRAM) with every DRAM layout, scored by the distinct-block model
//    (mapex/db_locality.hpp) under the L2 constraint with double buffering;
//    the `offchip_candidates` tiles with the lowest DMC among those under
//    which the job's split rules can reach the utilisation bound p are
//    kept, each with its level-3 inter-tile order from the partial
//    derivatives of DMC. A style or baseline (the job's constraints) thus
//    chooses its own tiles.
// 2. On-chip sub-space (§5.2, Algorithm 2) under the kept tiles: level-1
//    tiles, level-2 tiles (parallelism over any number of dimensions, each
//    a cluster region by Algorithm 1) and the level-2 inter-tile order,
//    pruned by the PE-utilisation bound p and factors-only tiles, and
//    evaluated with the job's cost model (mdc).
//
// The on-chip sub-space is still large (Fig. 10: 5.9e7 on average after
// pruning), so it is searched in coordinate steps, each exhaustive over
// its part: (1) the degrees of parallelism (level-2 tiles) with one-element
// level-1 tiles under every kept level-3 tile, keeping the
// `split_candidates` best under the best-DMC tile and half as many over the
// others; (2) every level-1
// tile under each of them; (3) every level-2 order for the
// `order_candidates` best tilings. Steps 1-2 set the level-2 order to the
// level-3 order (the same reuse argument, §5.1). The order of point loops
// inside a PE carries no reuse in the MDC model (Algorithm 1 emits them as
// one tile per step), so it is fixed.
//
// The job's mapspace is searched as given, narrowed (never widened) by
// Marvel's pruning: factors-only tiles, the bound p, and
// `max_parallel_dims` lowering the job's limit.
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
  bool drop_unmet_utilization = true;
  std::size_t offchip_candidates = 8;
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
  void offer(double value, std::uint64_t index, const Mapping& m, std::size_t tag = 0) {
    if (!std::isfinite(value)) return;
    Entry e{value, index, m, tag};
    auto less = [](const Entry& a, const Entry& b) {
      return a.value != b.value ? a.value < b.value : a.index < b.index;
    };
    if (entries_.size() == keep_ && !less(e, entries_.back())) return;
    entries_.insert(std::upper_bound(entries_.begin(), entries_.end(), e, less), std::move(e));
    if (entries_.size() > keep_) entries_.pop_back();
  }
  /// The kept mappings, best first, each with the tag it was offered with
  /// (the off-chip candidate it was found under).
  std::vector<std::pair<Mapping, std::size_t>> mappings() const {
    std::vector<std::pair<Mapping, std::size_t>> out;
    for (const auto& e : entries_) out.emplace_back(e.mapping, e.tag);
    return out;
  }

 private:
  struct Entry {
    double value;
    std::uint64_t index;
    Mapping mapping;
    std::size_t tag;
  };
  std::size_t keep_;
  std::vector<Entry> entries_;
};

class Marvel final : public mapex::Searcher {
 public:
  explicit Marvel(const mapex::Params& p) {
    s_.min_utilization = p.get_double("min_utilization");
    s_.factors_only = p.get_bool("factors_only");
    s_.drop_unmet_utilization = p.get_bool("drop_unmet_utilization");
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
    if (par < 0) bad("max_parallel_dims", "0 (the job's) or more");
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
    // The job's space, narrowed (never widened) by this searcher's own
    // pruning parameters (§5.2).
    const MapspaceOptions job = effective_options(ctx);
    const double p = job.min_utilization;

    // §5.1: the off-chip sub-space under the DB model. Each variant (a style
    // or baseline is the job's constraints) searches it for itself: a
    // level-3 tile is kept only when its on-chip space, under this job's
    // split rules, can still reach the utilisation bound p (§5.2 prunes the
    // on-chip space by p, so a tile that cannot reach it has nothing left).
    const auto& global_buffer = arch.levels()[static_cast<std::size_t>(outer)];
    const std::int64_t block_bytes =
        s_.block_bytes > 0 ? s_.block_bytes
                           : arch.levels()[static_cast<std::size_t>(dram)].block_bytes;
    const mapex::db::Model model(op, block_bytes, arch.word_bytes());
    const auto values = level3_tile_values(ctx.mapspace(), job, outer);
    double tiles = 1;
    for (const auto& v : values) tiles *= static_cast<double>(v.size());
    if (tiles > kMaxOffchipTiles)
      throw mapex::InputError(mapex::SourceLocation{}, "factors_only",
                              "searcher 'marvel': the off-chip sub-space of '" + op.name() +
                                  "' has " + std::to_string(static_cast<long long>(tiles)) +
                                  " level-3 tiles, too many to enumerate; keep factors_only=true "
                                  "or fix some level-3 tile sizes");
    double considered = 0;
    std::uint64_t rejected = 0;
    const auto splits = split_values(ctx.mapspace(), outer);
    const mapex::db::TileFilter reaches_p = [&](const std::vector<std::int64_t>& tile) {
      return p <= 0 || utilization_bound(op, arch, job, outer, splits, tile) >= p - 1e-9;
    };
    auto offchip =
        mapex::db::search_offchip(model, values, mapex::db::usable_bytes(global_buffer),
                                  s_.offchip_candidates, reaches_p, &considered, &rejected);
    // No fitting tile lets this variant reach p: search the DB-best tiles
    // anyway, so the on-chip step can say (and record) that p is unmet.
    const bool tile_reaches_p = !offchip.empty();
    if (offchip.empty())
      offchip = mapex::db::search_offchip(model, values, mapex::db::usable_bytes(global_buffer),
                                          s_.offchip_candidates, &considered);
    if (offchip.empty()) {
      const auto minimal = mapex::db::minimal_choice(model, values);
      throw mapex::InputError(
          "architecture '" + arch.name() + "': " + global_buffer.name + " (" +
          std::to_string(global_buffer.size_bytes) + " B" +
          (global_buffer.double_buffered ? ", half of it per double-buffered tile" : "") +
          ") cannot hold even a minimal level-3 tile of '" + op.name() + "' (" +
          dims_text(op, minimal.tile) + "): its distinct DRAM blocks need " +
          std::to_string(static_cast<long long>(minimal.required_bytes)) + " B with " +
          std::to_string(block_bytes) + " B blocks");
    }

    // §5.2: the on-chip sub-space under the kept off-chip mappings.
    std::uint64_t tilings = 0, ordered = 0;
    double used_p = p;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const auto [a, b] = search_onchip(ctx, job, offchip, outer, dram, used_p);
      tilings += a;
      ordered += b;
      // A layer too small for the bound on this chip: drop the bound only
      // when allowed, and say so in the result either way.
      if (ctx.best_mapping() || used_p == 0 || ctx.exhausted() || !s_.drop_unmet_utilization) break;
      used_p = 0;
    }

    std::ostringstream why;
    why << "marvel: " << static_cast<std::uint64_t>(considered) << " off-chip points, "
        << offchip.size() << " level-3 tiles searched";
    if (rejected > 0) why << " (" << rejected << " better-DMC tiles cannot reach p)";
    if (const auto* chosen = chosen_offchip(ctx, offchip, outer)) {
      why << "; level-3 tile [" << dims_text(op, chosen->tile) << "] DMC " << chosen->dmc
          << " blocks/iteration, order " << order_text(op, chosen->order) << ", layouts";
      for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
        why << " " << op.tensors()[static_cast<std::size_t>(t)].name
            << mapex::db::format_layout(op, t, chosen->layouts[static_cast<std::size_t>(t)]);
    }
    why << "; on-chip " << tilings << " tilings + " << ordered << " level-2 orders";
    // Machine-readable: the space actually searched and the fate of p.
    why << "; settings factors_only=" << (job.factors_only ? "true" : "false")
        << " max_parallel_dims=" << parallel_dims_text(arch, job) << " min_utilization=" << p
        << " offchip_candidates=" << s_.offchip_candidates
        << " split_candidates=" << s_.split_candidates
        << " order_candidates=" << s_.order_candidates;
    why << "; utilization_bound="
        << (p == 0                ? "none"
            : !ctx.best_mapping() ? "unmet"
            : used_p == p         ? "met"
                                  : "dropped")
        << (tile_reaches_p ? "" : " (no level-3 tile that fits L2 can reach it)");
    // The framework's convention for a search cut short (the full story
    // is only worth telling for a finished one).
    if (ctx.exhausted()) return {false, "budget"};
    return {false, why.str()};
  }

 private:
  /// The job's mapspace options with Marvel's pruning on top (§5.2): tiles
  /// are factors only when the job or `factors_only` asks for it, the
  /// utilisation bound is the larger of the two, and `max_parallel_dims`
  /// can lower the job's limit, never raise it. (The job's 0 means the
  /// rank of each array; the paper's clusters split any number of
  /// dimensions, which an experiment asks for with its own
  /// `max_parallel_dims`.)
  MapspaceOptions effective_options(const mapex::SearchContext& ctx) const {
    MapspaceOptions o = ctx.mapspace().options();
    if (o.levels.empty()) o.levels.resize(static_cast<std::size_t>(ctx.arch().num_levels()));
    o.factors_only = o.factors_only || s_.factors_only;
    o.min_utilization = std::max(o.min_utilization, s_.min_utilization);
    if (s_.max_parallel_dims > 0) {
      int rank = std::numeric_limits<int>::max();
      for (const auto& l : ctx.arch().levels())
        if (l.kind == LevelKind::kSpatial) rank = std::min(rank, static_cast<int>(l.shape.size()));
      const int job = o.max_parallel_dims > 0 ? o.max_parallel_dims : rank;
      if (s_.max_parallel_dims < job) o.max_parallel_dims = s_.max_parallel_dims;
    }
    return o;
  }

  /// The split-dimension limit in force, for the record: the job's number,
  /// or the arrays' rank its 0 stands for.
  static std::string parallel_dims_text(const mapex::Architecture& arch, const MapspaceOptions& o) {
    if (o.max_parallel_dims > 0) return std::to_string(o.max_parallel_dims);
    std::string ranks;
    for (const auto& l : arch.levels())
      if (l.kind == LevelKind::kSpatial)
        ranks += (ranks.empty() ? "" : ",") + std::to_string(l.shape.size());
    return ranks + "(rank)";
  }

  /// An upper bound on the fraction of the PEs that the spatial levels
  /// below `outer` can engage when the level-3 tile is `tile`, under the
  /// job's split rules: each level splits at most its allowed number of
  /// its allowed dimensions (fixed splits count as they are), a split of a
  /// dimension is at most its tile extent and, with factors-only tiles, a
  /// divisor of it that the job's space allows at that level (`splits`,
  /// from split_values: a superset of those under one level-3 tile), and
  /// no level uses more than its fan-out.
  static double utilization_bound(const mapex::Operator& op, const mapex::Architecture& arch,
                                  const MapspaceOptions& o, int outer,
                                  const std::vector<std::vector<std::vector<std::int64_t>>>& splits,
                                  const std::vector<std::int64_t>& tile) {
    double used = 1;
    for (int i = 0; i < outer; ++i) {
      const auto& level = arch.levels()[static_cast<std::size_t>(i)];
      if (level.kind != LevelKind::kSpatial) continue;
      const auto& rule = o.levels[static_cast<std::size_t>(i)];
      const std::int64_t fanout = level.fanout();
      int slots =
          o.max_parallel_dims > 0 ? o.max_parallel_dims : static_cast<int>(level.shape.size());
      if (rule.cluster.enabled) slots *= 2;  // the cluster level splits as many again
      std::int64_t fixed_product = 1;
      // reach[k]: the split products (<= fan-out) of k free split dimensions.
      std::vector<std::vector<std::int64_t>> reach(1, {1});
      for (DimId d = 0; d < op.num_dims(); ++d) {
        const auto du = static_cast<std::size_t>(d);
        if (!(rule.parallel_mask >> du & 1u)) continue;
        const std::int64_t fixed = rule.fixed.empty() ? 0 : rule.fixed[du];
        if (fixed > 0) {
          fixed_product *= fixed;
          --slots;
          continue;
        }
        const std::int64_t most = std::min(tile[du], fanout);
        std::vector<std::int64_t> values;
        if (o.factors_only) {
          // Factors-only tiles nest: a split (times the level-1 tile)
          // divides the level-3 tile, which divides the bound.
          // A cluster level's splits are not the level's own values: any
          // divisor of the tile bounds them.
          if (rule.cluster.enabled) {
            for (std::int64_t v = 2; v <= most; ++v)
              if (tile[du] % v == 0) values.push_back(v);
          } else {
            for (std::int64_t v : splits[static_cast<std::size_t>(i)][du])
              if (v > 1 && v <= most && tile[du] % v == 0) values.push_back(v);
          }
        } else if (most > 1) {
          values.push_back(most);  // any size: the largest is the bound
        }
        if (values.empty()) continue;
        for (std::size_t k = reach.size(); k-- > 0;) {
          std::vector<std::int64_t> grown;
          for (std::int64_t x : reach[k])
            for (std::int64_t v : values)
              if (x * v <= fanout) grown.push_back(x * v);
          if (grown.empty()) continue;
          if (reach.size() == k + 1) reach.emplace_back();
          auto& next = reach[k + 1];
          next.insert(next.end(), grown.begin(), grown.end());
          std::sort(next.begin(), next.end());
          next.erase(std::unique(next.begin(), next.end()), next.end());
        }
      }
      std::int64_t best = 1;
      for (std::size_t k = 0; k < reach.size() && static_cast<int>(k) <= std::max(slots, 0); ++k)
        best = std::max(best, reach[k].back());
      used *= static_cast<double>(std::min(best * fixed_product, fanout));
    }
    return used / static_cast<double>(arch.num_pes());
  }

  /// The off-chip choice the best mapping was found under (its level-3
  /// tile), or null when there is no best mapping.
  static const mapex::db::OffchipChoice* chosen_offchip(
      const mapex::SearchContext& ctx, const std::vector<mapex::db::OffchipChoice>& offchip,
      int outer) {
    const auto& best = ctx.best_mapping();
    if (!best) return nullptr;
    for (const auto& c : offchip)
      if (best->level(outer).tile == c.tile) return &c;
    return nullptr;
  }

  static void require_conformable(const mapex::Operator& op) {
    const auto issues = mapex::mdc::check_conformability(op);
    if (issues.empty()) return;
    const auto& i = issues.front();
    throw mapex::InputError("operator '" + op.name() +
                            "' is not conformable to the MDC notation (Marvel §3), rule " +
                            std::to_string(i.rule) + ": " + i.detail);
  }

  /// Candidate level-3 tile sizes per dimension: the tiles the job's
  /// mapspace allows at the buffer right below DRAM (Mapspace::level_values:
  /// its fixed values and factor limits, and only tiles some completion of
  /// the lower levels admits), narrowed to divisors of the bound when
  /// Marvel's own pruning asks for factors-only tiles (§5.2) and the job
  /// does not (a tile the job fixes stays as it is). The job's space is
  /// never widened.
  static std::vector<std::vector<std::int64_t>> level3_tile_values(const mapex::Mapspace& space,
                                                                   const MapspaceOptions& job,
                                                                   int outer) {
    std::vector<std::vector<std::int64_t>> values;
    const auto& op = space.op();
    for (DimId d = 0; d < op.num_dims(); ++d) {
      const std::int64_t bound = op.dims()[static_cast<std::size_t>(d)].bound;
      auto v = space.level_values(d, outer);
      const auto& fixed = job.levels[static_cast<std::size_t>(outer)].fixed;
      const bool pinned = !fixed.empty() && fixed[static_cast<std::size_t>(d)] > 0;
      if (job.factors_only && !space.options().factors_only && !pinned)
        std::erase_if(v, [bound](std::int64_t t) { return bound % t != 0; });
      values.push_back(std::move(v));
    }
    return values;
  }

  /// Per level below `outer` and dimension: the splits the job's mapspace
  /// allows at that level (Mapspace::level_values; empty for buffer levels).
  static std::vector<std::vector<std::vector<std::int64_t>>> split_values(
      const mapex::Mapspace& space, int outer) {
    std::vector<std::vector<std::vector<std::int64_t>>> out(static_cast<std::size_t>(outer));
    for (int i = 0; i < outer; ++i) {
      if (space.arch().levels()[static_cast<std::size_t>(i)].kind != LevelKind::kSpatial) continue;
      for (DimId d = 0; d < space.op().num_dims(); ++d)
        out[static_cast<std::size_t>(i)].push_back(space.level_values(d, i));
    }
    return out;
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

  /// The job's rules (`job`, Marvel's pruning included) with the off-chip
  /// mapping fixed: level-3 tile and order, the point-loop order, and the
  /// utilisation bound in force.
  static MapspaceOptions onchip_options(const mapex::SearchContext& ctx, const MapspaceOptions& job,
                                        const mapex::db::OffchipChoice& choice, int outer, int dram,
                                        double p) {
    const auto& op = ctx.op();
    const auto& arch = ctx.arch();
    MapspaceOptions o = job;
    o.min_utilization = p;
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
  std::uint64_t stream(mapex::SearchContext& ctx, const MapspaceOptions& options, TopK& top,
                       std::size_t tag) const {
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
        top.offer(mapex::objective_value(metrics[i], ctx.objective()), index++, batch[i], tag);
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

  /// Algorithm 2 on the kept off-chip mappings together (each step ranks
  /// the candidates of every level-3 tile in one list, so more off-chip
  /// candidates cost more step-1 evaluations but no more of steps 2-3);
  /// returns (tilings, ordered) evaluations.
  std::pair<std::uint64_t, std::uint64_t> search_onchip(
      mapex::SearchContext& ctx, const MapspaceOptions& job,
      const std::vector<mapex::db::OffchipChoice>& offchip, int outer, int dram, double p) const {
    const auto& op = ctx.op();
    const auto& arch = ctx.arch();
    std::vector<MapspaceOptions> bases, tilings;
    for (const auto& choice : offchip) {
      bases.push_back(onchip_options(ctx, job, choice, outer, dram, p));
      // Level-2 order = level-3 order for the tiling steps, unless the
      // style constrains it.
      MapspaceOptions tiling = bases.back();
      auto& level2_order_rule = tiling.levels[static_cast<std::size_t>(outer)];
      level2_order_rule.orders = {representative_order(op, level2_order_rule, choice.order)};
      level2_order_rule.stationary.clear();
      tilings.push_back(std::move(tiling));
    }

    // The best-DMC tile keeps its own lists here too (see step 1).
    TopK first_tilings(std::max<std::size_t>(1, s_.order_candidates));
    TopK other_tilings(std::max<std::size_t>(1, s_.order_candidates / 2));
    auto tilings_of = [&](std::size_t c) -> TopK& {
      return c == 0 ? first_tilings : other_tilings;
    };
    std::uint64_t evaluated = 0;
    const bool l1_buffer = arch.levels()[0].kind == LevelKind::kBuffer;
    if (s_.split_candidates == 0 || !l1_buffer) {
      for (std::size_t c = 0; c < offchip.size() && !ctx.exhausted(); ++c)
        evaluated += stream(ctx, tilings[c], tilings_of(c), c);
    } else {
      // Step 1: the degrees of parallelism, each PE holding one-element
      // tiles (or what the style fixes); step 2: every level-1 tile under
      // the `split_candidates` best of them. The best-DMC tile (the paper's
      // one off-chip choice) keeps its own list, so more off-chip
      // candidates never lose what it finds; the other tiles share a list
      // half that long (one-element tiles rank splits only roughly).
      TopK first_splits(s_.split_candidates);
      TopK other_splits(std::max<std::size_t>(1, s_.split_candidates / 2));
      for (std::size_t c = 0; c < offchip.size() && !ctx.exhausted(); ++c) {
        MapspaceOptions splits = tilings[c];
        auto& l1_fixed = splits.levels[0].fixed;
        if (l1_fixed.empty()) l1_fixed.assign(static_cast<std::size_t>(op.num_dims()), 0);
        for (auto& f : l1_fixed)
          if (f == 0) f = 1;
        evaluated += stream(ctx, splits, c == 0 ? first_splits : other_splits, c);
      }
      auto chosen = first_splits.mappings();
      for (auto& entry : other_splits.mappings()) chosen.push_back(std::move(entry));
      for (const auto& [m, c] : chosen) {
        if (ctx.exhausted()) break;
        MapspaceOptions tiles = tilings[c];
        fix_below(tiles, op, arch, m, outer, true);
        evaluated += stream(ctx, tiles, tilings_of(c), c);
      }
    }
    if (s_.order_candidates == 0) return {evaluated, 0};

    // Step 3: every level-2 order on the best tilings.
    std::uint64_t ordered = 0;
    auto best_tilings = first_tilings.mappings();
    for (auto& entry : other_tilings.mappings()) best_tilings.push_back(std::move(entry));
    for (const auto& [t, c] : best_tilings) {
      if (ctx.exhausted()) break;
      MapspaceOptions orders = bases[c];
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
     "PE-utilisation bound p (§6: 0.1): level-2 tiles must engage at least this fraction of the "
     "PEs (the larger of this and the job's bound). Level-3 tiles under which the job's splits "
     "cannot reach it are not kept (§5.2)."},
    {"drop_unmet_utilization", mapex::ParamType::kBool, "true",
     "When no mapping reaches p (a layer too small for the chip), search again without it; the "
     "stop reason records utilization_bound=dropped. false: return no mapping "
     "(utilization_bound=unmet)."},
    {"factors_only", mapex::ParamType::kBool, "true",
     "Tile sizes divide the loop bounds: no prologues or epilogues (§6's pruning option). Added "
     "to the job's factors_only, never removing it."},
    {"offchip_candidates", mapex::ParamType::kInt, "8",
     "Off-chip mappings (lowest DMC first among the level-3 tiles that can reach p under the "
     "job's constraints) whose on-chip sub-spaces are searched together."},
    {"order_candidates", mapex::ParamType::kInt, "32",
     "Best tilings (with the level-3 order at level 2) whose every level-2 order is then "
     "evaluated; 0 keeps the level-3 order."},
    {"split_candidates", mapex::ParamType::kInt, "128",
     "Degrees of parallelism (ranked with one-element level-1 tiles) whose every level-1 tile "
     "is then evaluated; 0 evaluates all level-1 tiles and splits jointly."},
    {"block_bytes", mapex::ParamType::kInt, "0",
     "DRAM block size in bytes for the DB model; 0 takes the architecture's DRAM block_bytes."},
    {"max_parallel_dims", mapex::ParamType::kInt, "0",
     "Dimensions split across the PEs: lowers the job's max_parallel_dims, never raises it; 0 "
     "keeps the job's (whose 0 is the array's rank; the paper's clusters split any number, §4, "
     "which the experiment's mapspace asks for)."},
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
