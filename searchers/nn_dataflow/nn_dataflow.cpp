// The nn_dataflow searcher: nn_dataflow's own per-layer search (the
// baseline B of KAPLA §V, stanford-mast/nn_dataflow commit 198a527) over
// its space, with its options as parameters. The search itself lives in the
// framework (mapex/nn_dataflow_search.hpp) next to the model it scores
// with; this plugin binds it to a job: it takes the chip, bypass, GBUF
// sharing and input layout from the job's cost model (tensor_centric with
// model=nn_dataflow, refused otherwise), runs the search, and hands the
// best schemes, as canonical mappings, to the framework to evaluate.

#include <mapex/error.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>
#include <mapex/plugin.hpp>
#include <sstream>
#include <vector>

namespace {

namespace ndf = mapex::ndf;

const char* kName = "searcher 'nn_dataflow'";

/// nn_dataflow's bypass letters as flags per data category (FIL, IFM, OFM).
std::array<bool, 3> parse_bypass(const std::string& letters) {
  std::array<bool, 3> out{false, false, false};
  for (char ch : letters) {
    if (ch == 'f')
      out[ndf::kFil] = true;
    else if (ch == 'i')
      out[ndf::kIfm] = true;
    else if (ch == 'o')
      out[ndf::kOfm] = true;
    else if (ch != ',' && ch != ' ')
      throw mapex::InputError(std::string(kName) +
                              ": gbuf_bypass: expected 'model' or letters among i, o, f, got '" +
                              letters + "'");
  }
  return out;
}

std::string bypass_letters(const std::array<bool, 3>& b) {
  std::string s;
  if (b[ndf::kIfm]) s += 'i';
  if (b[ndf::kOfm]) s += 'o';
  if (b[ndf::kFil]) s += 'f';
  return s.empty() ? "none" : s;
}

ndf::Goal goal_of(mapex::Objective objective) {
  switch (objective) {
    case mapex::Objective::kLatency:
      return ndf::Goal::kDelay;
    case mapex::Objective::kEdp:
      return ndf::Goal::kEnergyDelay;
    case mapex::Objective::kEnergy:
      break;
  }
  return ndf::Goal::kEnergy;
}

class NnDataflow final : public mapex::Searcher {
 public:
  explicit NnDataflow(const mapex::Params& params)
      : hybrid_(params.get_bool("hybrid_partition")),
        batch_(params.get_bool("batch_partition")),
        ifmaps_(params.get_bool("ifmaps_partition")),
        ntops_(params.get_int("ntops")),
        bypass_(params.get_string("gbuf_bypass")),
        sharing_(params.get_string("gbuf_sharing")),
        blocking_(params.get_string("loop_blocking")),
        keep_probability_(params.get_double("keep_probability")),
        keep_per_(params.get_string("keep_per")),
        keep_draw_(params.get_string("keep_draw")),
        partition_probability_(params.get_double("partition_probability")),
        keep_at_least_one_(params.get_bool("keep_at_least_one")) {
    // nn_dataflow asserts the same: input-channel partitioning is a hybrid
    // partitioning option.
    if (ifmaps_ && !hybrid_)
      throw mapex::InputError(std::string(kName) +
                              ": ifmaps_partition needs hybrid_partition (as in nn_dataflow)");
    if (ntops_ < 1)
      throw mapex::InputError(std::string(kName) + ": ntops: expected at least 1, got " +
                              std::to_string(ntops_));
    if (bypass_ != "model") parse_bypass(bypass_);
    if (blocking_ != "exhaustive" && blocking_ != "kapla")
      throw mapex::InputError(std::string(kName) +
                              ": loop_blocking: expected exhaustive or kapla, got '" + blocking_ +
                              "'");
    // KAPLA §V's R samples the exhaustive enumeration; a probability of 0
    // would keep nothing.
    if (!(keep_probability_ > 0 && keep_probability_ <= 1))
      throw mapex::InputError(std::string(kName) +
                              ": keep_probability: expected a number in (0, 1], got " +
                              std::to_string(keep_probability_));
    if (keep_probability_ < 1 && blocking_ != "exhaustive")
      throw mapex::InputError(std::string(kName) +
                              ": keep_probability below 1 samples the exhaustive enumeration "
                              "(KAPLA's R); it needs loop_blocking=exhaustive");
    if (keep_per_ != "blocking" && keep_per_ != "memory_level" && keep_per_ != "factorization")
      throw mapex::InputError(
          std::string(kName) +
          ": keep_per: expected blocking, memory_level or factorization, got '" + keep_per_ + "'");
    if (!(partition_probability_ < 0 ||
          (partition_probability_ > 0 && partition_probability_ <= 1)))
      throw mapex::InputError(std::string(kName) +
                              ": partition_probability: expected a number in (0, 1], or below 0 "
                              "for keep_probability, got " +
                              std::to_string(partition_probability_));
    if (partition_probability_ >= 0 && partition_probability_ < 1 && blocking_ != "exhaustive")
      throw mapex::InputError(std::string(kName) +
                              ": partition_probability below 1 samples the exhaustive "
                              "enumeration (KAPLA's R); it needs loop_blocking=exhaustive");
    if (keep_draw_ != "each" && keep_draw_ != "gap")
      throw mapex::InputError(std::string(kName) + ": keep_draw: expected each or gap, got '" +
                              keep_draw_ + "'");
    if (keep_draw_ == "gap" && keep_per_ != "blocking")
      throw mapex::InputError(std::string(kName) +
                              ": keep_draw=gap draws the gaps between kept blockings; it needs "
                              "keep_per=blocking (memory_level and factorization draw per "
                              "tile or factorisation)");
    if (sharing_ != "model" && sharing_ != "on" && sharing_ != "off")
      throw mapex::InputError(std::string(kName) +
                              ": gbuf_sharing: expected model, on or off, got '" + sharing_ + "'");
  }

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    // nn_dataflow's schemes are its own space: a rule of the job's mapspace
    // they would not respect is refused, never silently dropped.
    if (auto rule = mapex::rule_outside_limits(ctx.mapspace().options(), ctx.arch()))
      throw mapex::InputError(std::string(kName) +
                              ": searches nn_dataflow's own schemes and cannot honour the job's "
                              "mapspace rule " +
                              *rule + " (leave it out, or use exhaustive, random or kapla)");
    const ndf::Problem& pr = problem_of(ctx);
    ndf::SearchOptions so;
    so.hybrid = hybrid_;
    so.batch = batch_;
    so.ifmaps = ifmaps_;
    so.ntops = static_cast<std::size_t>(ntops_);
    so.goal = goal_of(ctx.objective());
    so.blocking = blocking_ == "kapla" ? ndf::BlockingSolver::kCostDescending
                                       : ndf::BlockingSolver::kExhaustive;
    so.keep_probability = keep_probability_;
    so.keep_per_memory_level = keep_per_ == "memory_level";
    so.skip_sampling = keep_draw_ == "gap";
    so.keep_per_factorization = keep_per_ == "factorization";
    so.partition_probability = partition_probability_;
    so.keep_at_least_one = keep_at_least_one_;
    so.seed = ctx.seed();
    // The budget's evaluations bound the loop blockings scored; the
    // framework counts only the mappings handed to it at the end.
    const auto& budget = ctx.budget();
    if (budget.max_evaluations) so.max_blockings = budget.max_evaluations;
    so.max_seconds = budget.max_seconds;

    // nn_dataflow's best schemes; when none has a canonical mapping (a
    // split the canonical form cannot carry), widen the ranking until one
    // has, and say so.
    ndf::SearchOutput out;
    std::vector<mapex::Mapping> batch;
    std::string first_refusal;
    std::size_t widened = 0;
    for (std::size_t n = so.ntops;; n *= 16) {
      so.ntops = n;
      out = ndf::search(pr.layer, pr.hw, pr.options, {pr.ifmaps}, so);
      batch.clear();
      for (const ndf::Found& f : out.tops) {
        mapex::Mapping m;
        if (auto err = ndf::mapping_from_scheme(ctx.op(), ctx.arch(), pr, f.scheme, m)) {
          if (first_refusal.empty()) first_refusal = *err;
          continue;
        }
        batch.push_back(std::move(m));
        if (batch.size() >= static_cast<std::size_t>(ntops_)) break;
      }
      if (!batch.empty() || out.tops.size() < n || n >= kMaxWidening) break;
      widened = n * 16;
    }
    const std::size_t room =
        budget.max_evaluations ? static_cast<std::size_t>(budget.max_evaluations) : batch.size();
    if (batch.size() > room) batch.resize(room);
    if (!batch.empty()) ctx.evaluate(batch);

    std::ostringstream why;
    why << (out.complete ? "space exhausted" : "budget")
        << "; nn_dataflow space: hybrid_partition=" << hybrid_ << " batch_partition=" << batch_
        << " ifmaps_partition=" << ifmaps_ << " ntops=" << ntops_
        << " gbuf_bypass=" << bypass_letters(pr.options.bypass)
        << " gbuf_sharing=" << (pr.options.forwarding ? "on" : "off")
        << " loop_blocking=" << blocking_ << " keep_probability=" << keep_probability_;
    if (keep_per_ != "blocking") why << " keep_per=" << keep_per_;
    if (keep_draw_ != "each") why << " keep_draw=" << keep_draw_;
    if (partition_probability_ >= 0) why << " partition_probability=" << partition_probability_;
    if (keep_at_least_one_) why << " keep_at_least_one=1";
    why << "; " << out.stats.partitions << " partitions (" << out.stats.pe_refused
        << " with a PE mapping under half the array), " << out.stats.node_layers
        << " per-node layers, " << out.stats.blockings << " loop blockings scored, "
        << out.stats.fitting << " fit";
    if (out.stats.sampled_out)
      why << ", " << out.stats.sampled_out << " partitions and blockings left out by sampling";
    if (keep_per_ == "factorization" && keep_probability_ < 1)
      why << " (" << out.stats.factorizations_kept << " of " << out.stats.factorizations
          << " factorisations kept)";
    if (out.stats.rotation_refused)
      why << ", " << out.stats.rotation_refused
          << " fit only with GBUF rotation, which the model does not compute (left out)";
    if (out.tops.empty())
      why << "; no scheme fits";
    else if (batch.empty())
      why << "; none of the best " << out.tops.size()
          << " schemes has a canonical mapping (first: " << first_refusal << ")";
    else if (widened)
      why << "; nn_dataflow's best scheme has no canonical mapping (" << first_refusal
          << "): the best of the top " << widened << " that has one is returned";
    return {out.complete, why.str()};
  }

 private:
  static constexpr std::size_t kMaxWidening = 4096;

  /// The job's model must be nn_dataflow's, with the settings asked for.
  const ndf::Problem& problem_of(const mapex::SearchContext& ctx) const {
    const auto* model = dynamic_cast<const ndf::BoundNnDataflowModel*>(&ctx.model());
    if (!model)
      throw mapex::InputError(
          std::string(kName) +
          ": it searches nn_dataflow's space with nn_dataflow's model; use the cost model "
          "tensor_centric with model=nn_dataflow");
    const ndf::Problem& pr = model->problem();
    if (bypass_ != "model" && parse_bypass(bypass_) != pr.options.bypass)
      throw mapex::InputError(std::string(kName) + ": gbuf_bypass=" + bypass_ +
                              " but the cost model lets " + bypass_letters(pr.options.bypass) +
                              " bypass the GBUF; set the same gbuf_bypass on both (or 'model')");
    if (sharing_ != "model" && (sharing_ == "on") != pr.options.forwarding)
      throw mapex::InputError(
          std::string(kName) + ": gbuf_sharing=" + sharing_ + " but the cost model has it " +
          (pr.options.forwarding ? "on" : "off") +
          " (tensor_centric's `forwarding`); set the same on both (or 'model')");
    return pr;
  }

  bool hybrid_, batch_, ifmaps_;
  std::int64_t ntops_;
  std::string bypass_, sharing_, blocking_;
  double keep_probability_;
  std::string keep_per_, keep_draw_;
  double partition_probability_;
  bool keep_at_least_one_;
};

const mapex::ParamSpec kParams[] = {
    {"hybrid_partition", mapex::ParamType::kBool, "false",
     "nn_dataflow's --hybrid-partition: combine output-channel, fmap, batch and input-channel "
     "partitions (else naive: fmap tiles for convolutions, output channels for FC layers)."},
    {"batch_partition", mapex::ParamType::kBool, "false",
     "nn_dataflow's --batch-partition: allow splitting the batch over nodes."},
    {"ifmaps_partition", mapex::ParamType::kBool, "false",
     "nn_dataflow's --ifmaps-partition: allow splitting input channels over nodes (needs "
     "hybrid_partition)."},
    {"ntops", mapex::ParamType::kInt, "1",
     "nn_dataflow's --top: loop blockings kept per processing pass (by access cost) and schemes "
     "kept per layer (by total cost); the kept schemes are all evaluated."},
    {"gbuf_bypass", mapex::ParamType::kString, "model",
     "Data that may bypass the GBUF (letters i, o, f; nn_dataflow's --disable-bypass is the "
     "complement). 'model': the cost model's gbuf_bypass; any other value must equal it."},
    {"gbuf_sharing", mapex::ParamType::kString, "model",
     "nn_dataflow's --enable-gbuf-sharing: model, on or off; must equal the cost model's "
     "forwarding. Schemes that fit only with GBUF rotation are left out (the model refuses "
     "them)."},
    {"loop_blocking", mapex::ParamType::kString, "exhaustive",
     "How each processing pass's loop blocking is chosen: exhaustive (nn_dataflow's, KAPLA's "
     "baseline B) or kapla (KAPLA's bottom-up greedy cost descending, §IV-C, over the same "
     "factors and orders: KAPLA's K in nn_dataflow's space)."},
    {"keep_probability", mapex::ParamType::kDouble, "1",
     "KAPLA §V's random search R (after Timeloop's): each partition and each loop blocking of "
     "the exhaustive enumeration is kept with this probability (a hash of the job's seed and "
     "its place), the rest never scored; in (0, 1], 1 is the full search. Needs "
     "loop_blocking=exhaustive."},
    {"keep_per", mapex::ParamType::kString, "blocking",
     "How keep_probability draws loop blockings: blocking (one draw per blocking, factors and "
     "orders together), memory_level (one draw per memory level from the top of the tree: "
     "the REGF tile, the GBUF tile and order under it, the DRAM order under that; about "
     "p^3 of the blockings kept, and a tile left out drops every blocking under it; only "
     "kept tiles are walked) or factorization (one draw per factorisation of the loops over "
     "the blocking levels, then one per pair of loop orders under a kept one, as Timeloop's "
     "random mapper draws IndexFactorization and LoopPermutation apart and KAPLA's released "
     "random searcher keeps each with its probability; about p^2 of the blockings)."},
    {"partition_probability", mapex::ParamType::kDouble, "-1",
     "The probability R keeps each partition with (KAPLA's released random searcher: 0.04); "
     "below 0, keep_probability. Needs loop_blocking=exhaustive when below 1."},
    {"keep_at_least_one", mapex::ParamType::kBool, "false",
     "R keeps one candidate, drawn uniformly, at a level whose draws keep none (a pass's "
     "factorisations, a kept factorisation's order pairs, a layer's partitions; with "
     "keep_per=memory_level, the REGF tiles, GBUF tiles and orders, DRAM orders), as KAPLA's "
     "released random searcher does (util.random_collect)."},
    {"keep_draw", mapex::ParamType::kString, "each",
     "With keep_per=blocking, how the kept blockings are drawn: each (a hash of every "
     "blocking's place decides it, so all are visited) or gap (the gap to the next kept "
     "blocking is drawn, geometric with keep_probability, and the blockings between are "
     "passed over unvisited; each is still kept with keep_probability, but a seed keeps "
     "other blockings than with each)."},
};

mapex::Searcher* make(const mapex::Params& params) { return new NnDataflow(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "nn_dataflow",
    "1.0.0",
    "nn_dataflow's per-layer search (KAPLA's baseline B): its partitions, row-stationary passes "
    "and exhaustive loop blocking, scored with tensor_centric's model=nn_dataflow",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
