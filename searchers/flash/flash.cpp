// The FLASH searcher (Moon et al., §4 and Algorithm 2): for one style of
// Table 2 (or all five), every feasible loop order and cluster size, the
// candidate tile sizes bounded by the S2 and S1 constraints with double
// buffering (Eq. 1-4, Table 6), everything outside them pruned, and the
// remaining candidates evaluated through the job's cost model (mdc, i.e.
// MAESTRO-BLAS) in parallel batches; the framework keeps the best by the
// job's objective (runtime, energy or EDP), ties going to the earlier
// candidate, so the result does not depend on the thread count.
// Candidates are canonical mappings with a cluster level holding T^out
// (flash_algebra.hpp).
// The counts before and after pruning and the non-tiled reference (§3.2)
// are reported in the stop reason, which `mapex search` prints and result
// files store.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mapex/plugin.hpp>
#include <string>
#include <vector>

#include "flash_algebra.hpp"

namespace {

namespace fl = mapex::flash;

std::string format_count(double v) {
  char buf[64];
  if (v < 1e15 && v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_value(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

fl::TileValues tile_values(const std::string& name) {
  if (name == "all") return fl::TileValues::kAll;
  if (name == "largest") return fl::TileValues::kLargest;
  if (name == "pow2") return fl::TileValues::kPow2;
  throw mapex::InputError(mapex::SourceLocation{}, "tiles",
                          "searcher 'flash' expects pow2, all or largest, got '" + name + "'");
}

const char* tile_values_name(fl::TileValues v) {
  return v == fl::TileValues::kAll ? "all" : v == fl::TileValues::kLargest ? "largest" : "pow2";
}

class FlashSearch final : public mapex::Searcher {
 public:
  explicit FlashSearch(const mapex::Params& params)
      : style_(params.get_string("style")),
        order_(params.get_string("order")),
        space_(params.get_string("space")),
        tiles_(tile_values(params.get_string("tiles"))),
        max_candidates_(static_cast<std::size_t>(params.get_int("max_candidates"))),
        any_order_(params.get_bool("any_order")),
        batch_size_(static_cast<std::size_t>(params.get_int("batch_size"))) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const fl::Problem problem = fl::problem_from(ctx.op());  // non-GEMM: InputError
    const fl::Chip chip = fl::chip_from(ctx.arch());
    // FLASH's candidates are its own space (§4): a rule of the job's
    // mapspace they would not respect is refused, never silently dropped.
    if (auto rule = mapex::rule_outside_limits(ctx.mapspace().options(), ctx.arch()))
      throw mapex::InputError(
          "searcher 'flash' builds FLASH's own candidates (§4) and cannot honour the job's "
          "mapspace rule " +
          *rule + " (leave it out, or use exhaustive, random or kapla)");
    // Eq. 3-4's capacity bounds count every matrix in words of one size.
    mapex::require_uniform_word_bits(ctx.op(), ctx.arch(), "searcher 'flash' (FLASH §4.2)");
    std::vector<fl::Style> styles;
    if (style_ == "all")
      styles.assign(fl::kAllStyles.begin(), fl::kAllStyles.end());
    else
      styles.push_back(*fl::parse_style(style_));
    std::vector<fl::LoopOrder> orders;
    if (!order_.empty()) orders.push_back(*fl::parse_order(order_));

    // Algorithm 2: dataflows, bounds, pruning, generation.
    std::vector<fl::Candidate> candidates;
    std::size_t generated = 0;
    double before = 0;
    for (fl::Style s : styles) {
      if (!orders.empty()) {
        const auto supported = fl::loop_orders(s, any_order_);
        if (std::find(supported.begin(), supported.end(), orders[0]) == supported.end()) {
          if (styles.size() == 1)
            throw mapex::InputError(mapex::SourceLocation{}, "order",
                                    "style '" + style_ + "' has the fixed loop order " +
                                        fl::to_string(supported[0]) + " (FLASH Table 2), got '" +
                                        order_ + "'");
          continue;
        }
      }
      fl::Generation g = fl::generate(s, problem, chip, space_ == "pruned", orders, tiles_,
                                      max_candidates_, any_order_);
      before += g.before_pruning;
      if (space_ != "non_tiled") {
        candidates.insert(candidates.end(), g.candidates.begin(), g.candidates.end());
        generated += g.candidates.size();
      }
      // §3.2's non-tiled mapping of every dataflow: the reference point of
      // Table 5, evaluated with the candidates (alone for non_tiled).
      for (const auto& flow : fl::dataflows(s, problem, chip.pes, any_order_)) {
        const fl::Candidate c = fl::non_tiled(flow);
        const bool wanted =
            orders.empty() || std::find(orders.begin(), orders.end(), flow.order) != orders.end();
        if (wanted && fl::non_tiled_cluster(flow, problem, chip.pes) && fl::fits(c, problem, chip))
          candidates.push_back(c);
      }
    }
    // Nothing fits: not bad input but a chip without a valid mapping, so
    // the job ends with no valid mapping and this reason.
    if (candidates.empty()) return {false, no_tile_fits(chip)};

    // Evaluation in batches through the framework (parallel, ordered).
    const fl::MappingBuilder builder(ctx.op(), ctx.arch());
    const double inf = std::numeric_limits<double>::infinity();
    double best_non_tiled = inf;
    double non_tiled_latency = 0, non_tiled_energy = 0;
    std::vector<mapex::Mapping> batch;
    std::size_t next = 0;
    bool stopped = false;
    while (next < candidates.size() && !stopped) {
      const std::size_t end = std::min(candidates.size(), next + batch_size_);
      batch.clear();
      for (std::size_t i = next; i < end; ++i) batch.push_back(builder.build(candidates[i]));
      const auto results = ctx.evaluate(batch);
      for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& c = candidates[next + i];
        const fl::Candidate reference = fl::non_tiled(c.flow);
        const bool non_tiled = c.outer == reference.outer && c.inner == reference.inner;
        const double v = mapex::objective_value(results[i], ctx.objective());
        if (non_tiled && v < best_non_tiled) {
          best_non_tiled = v;
          non_tiled_latency = results[i].latency_cycles;
          non_tiled_energy = results[i].energy_pj;
        }
      }
      stopped = results.size() < batch.size() || ctx.exhausted();
      next += results.size();
    }

    const std::string values = tile_values_name(tiles_);
    std::string stats = "flash " + style_ + (order_.empty() ? "" : " " + order_) + " (" + space_ +
                        " space, " + values + " tiles): " + format_count(before) +
                        " tile tuples before pruning, " + std::to_string(generated) +
                        " candidates after";
    if (space_ == "pruned" && generated > 0)
      stats += " (factor " + format_value(before / static_cast<double>(generated)) + ")";
    stats += " and " + std::to_string(candidates.size() - generated) + " non-tiled references";
    stats += "; evaluated " + std::to_string(next);
    if (best_non_tiled < inf)
      stats += "; non-tiled reference: latency " + format_value(non_tiled_latency) +
               " cycles, energy " + format_value(non_tiled_energy) + " pJ";
    // `complete` stays false: the candidates are FLASH's space, not the
    // whole mapspace of the job.
    if (stopped && next < candidates.size()) return {false, "budget; " + stats};
    return {false, "all candidates evaluated; " + stats};
  }

 private:
  // The clearest thing to say when nothing fits: what the smallest tile of
  // every style needs against what the buffers hold (Eq. 1-2).
  std::string no_tile_fits(const fl::Chip& chip) const {
    return "no tile of style '" + style_ + "' fits the buffers: S1 holds " +
           std::to_string(chip.s1_words) + " and S2 " + std::to_string(chip.s2_words) +
           " elements, and one step of the smallest tiles (1x1x1 per PE) needs 2 x (A + B + C) "
           "elements in each (double buffering, FLASH Eq. 1-2)";
  }

  std::string style_;
  std::string order_;
  std::string space_;
  fl::TileValues tiles_;
  std::size_t max_candidates_;
  bool any_order_;
  std::size_t batch_size_;
};

const mapex::ParamSpec kParams[] = {
    {"style", mapex::ParamType::kString, "all",
     "Table 2 style: eyeriss, nvdla, tpu, shidiannao, maeri, or all."},
    {"order", mapex::ParamType::kString, "",
     "Loop order such as mnk (MAERI: any of six; others: their fixed order); empty: all."},
    {"space", mapex::ParamType::kString, "pruned",
     "pruned: Table 6 bounds (FLASH); full: every tile tuple that fits S1 and S2 (the reference "
     "for what pruning loses); non_tiled: the non-tiled mapping of every dataflow (§3.2)."},
    {"tiles", mapex::ParamType::kString, "pow2",
     "Tile values within each range: pow2 (powers of two and the range's bound, FLASH §4 and "
     "§5.1), all (every integer) or largest (per dataflow only the largest power of two of "
     "each range that fits: the paper's pick, §4 and §5.1)."},
    {"any_order", mapex::ParamType::kBool, "false",
     "Give the fixed-dataflow styles all six loop orders too, their parallel dimensions and "
     "cluster sizes kept (not Table 2: the orders §5.4's flexible-vs-fixed comparison needs)."},
    {"max_candidates", mapex::ParamType::kInt, "5000000",
     "Refuse a space with more candidates than this (memory)."},
    {"batch_size", mapex::ParamType::kInt, "4096", "Candidates per parallel evaluation batch."},
};

mapex::Searcher* make(const mapex::Params& params) {
  const std::string style = params.get_string("style");
  if (style != "all" && !fl::parse_style(style))
    throw mapex::InputError(mapex::SourceLocation{}, "style",
                            "searcher 'flash' expects eyeriss, nvdla, tpu, shidiannao, maeri or "
                            "all, got '" +
                                style + "'");
  const std::string order = params.get_string("order");
  if (!order.empty() && !fl::parse_order(order))
    throw mapex::InputError(
        mapex::SourceLocation{}, "order",
        "searcher 'flash' expects a permutation of m, n, k such as nkm, got '" + order + "'");
  const std::string space = params.get_string("space");
  if (space != "pruned" && space != "full" && space != "non_tiled")
    throw mapex::InputError(
        mapex::SourceLocation{}, "space",
        "searcher 'flash' expects pruned, full or non_tiled, got '" + space + "'");
  (void)tile_values(params.get_string("tiles"));  // bad value: InputError naming "tiles"
  if (params.get_int("max_candidates") < 1)
    throw mapex::InputError(mapex::SourceLocation{}, "max_candidates",
                            "parameter of searcher 'flash' must be at least 1");
  if (params.get_int("batch_size") < 1)
    throw mapex::InputError(mapex::SourceLocation{}, "batch_size",
                            "parameter of searcher 'flash' must be at least 1");
  return new FlashSearch(params);
}

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "flash",
    "1.0.0",
    "FLASH (Moon et al., §4, Alg. 2): accelerator-style GEMM mappings with pruned tile sizes",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
