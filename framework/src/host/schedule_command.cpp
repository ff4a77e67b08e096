#include "host/schedule_command.hpp"

#include <tbb/task_arena.h>

#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <iomanip>
#include <mapex/budget_requirement.hpp>
#include <mapex/plugin.hpp>
#include <mapex/schedule.hpp>
#include <mapex/version.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "host/cli_args.hpp"
#include "host/plugin_registry.hpp"
#include "host/result_store.hpp"

namespace mapex::host {
namespace po = boost::program_options;

namespace {

struct ScheduleArgs {
  std::string workload;
  std::string arch;
  std::string searcher = "kapla";
  std::string costmodel = "tensor_centric";
  std::vector<std::string> costmodel_params;
  std::string objective = "energy";
  std::string format = "table";
  std::string output;  ///< HDF5 result file, when given
  bool force = false;  ///< --force: -o may replace a file that is not a result file
  int k_s = 4;
  int max_segment_layers = 4;
  std::uint64_t seed = 1;
  int threads = 0;
  bool no_layer_by_layer = false;
  bool no_calibration = false;
  std::string inter_layer = "pruned";
  double allocation_probability = 1;
  bool allocation_keep_one = false;
  bool no_filter_pinning = false;
  std::string intra_searcher;  ///< empty: the scheduler's own
  std::vector<std::string> intra_params;
  std::int64_t intra_max_evaluations = 0;
  double intra_max_seconds = 0;
  bool help = false;
};

ScheduleArgs parse_args(const std::vector<std::string>& args, std::ostream& out) {
  ScheduleArgs a;
  po::options_description desc("mapex schedule");
  desc.add_options()("help,h", "show this help")("workload", po::value(&a.workload)->required(),
                                                 "network YAML (one connected graph)")(
      "arch", po::value(&a.arch)->required(), "architecture YAML (a multi-node chip)")(
      "searcher", po::value(&a.searcher)->default_value(a.searcher),
      "searcher plugin offering whole-network scheduling")(
      "costmodel", po::value(&a.costmodel)->default_value(a.costmodel), "cost model plugin")(
      "costmodel-param", po::value(&a.costmodel_params)->composing(),
      "cost model parameter key=value (repeatable)")(
      "objective", po::value(&a.objective)->default_value(a.objective), "energy or latency")(
      "k-s", po::value(&a.k_s)->default_value(a.k_s),
      "segment chains kept by the dynamic programme (KAPLA's k_S)")(
      "max-segment-layers", po::value(&a.max_segment_layers)->default_value(a.max_segment_layers),
      "longest segment tried, in layers (1: layer by layer)")(
      "no-layer-by-layer", po::bool_switch(&a.no_layer_by_layer),
      "do not also solve the layer-by-layer schedule (the paper's algorithm alone)")(
      "no-calibration", po::bool_switch(&a.no_calibration),
      "do not calibrate the inter-layer estimates by the layer-by-layer solves")(
      "inter-layer", po::value(&a.inter_layer)->default_value(a.inter_layer),
      "pruned (KAPLA: estimates, Pareto pruning, top-k_S chains) or exhaustive (every valid "
      "allocation solved, exact optimum chain: the baselines S and R)")(
      "allocation-probability",
      po::value(&a.allocation_probability)->default_value(a.allocation_probability),
      "with --inter-layer exhaustive: keep each multi-layer allocation with this probability "
      "(KAPLA's random search R)")(
      "allocation-keep-one", po::bool_switch(&a.allocation_keep_one),
      "with --allocation-probability below 1: where a multi-layer segment keeps none of its "
      "allocations, keep one drawn uniformly (KAPLA's released random searcher)")(
      "no-filter-pinning", po::bool_switch(&a.no_filter_pinning),
      "a segment holding the whole network does not pin filters kept whole in the GBUFs "
      "(nn_dataflow's no_time_mux; nn_dataflow model only)")(
      "intra-searcher", po::value(&a.intra_searcher),
      "per-layer searcher plugin for the intra-layer solves (default: the scheduler's own)")(
      "intra-param", po::value(&a.intra_params)->composing(),
      "parameter key=value of the intra-layer searcher (repeatable)")(
      "intra-max-evaluations", po::value(&a.intra_max_evaluations),
      "evaluation budget of each intra-layer solve (0: none)")(
      "intra-max-seconds", po::value(&a.intra_max_seconds),
      "time budget of each intra-layer solve in seconds (0: none)")(
      "seed", po::value(&a.seed)->default_value(a.seed), "random seed")(
      "threads,j", po::value(&a.threads), "worker threads (0: all cores)")(
      "format", po::value(&a.format)->default_value(a.format), "table or json")(
      "output,o", po::value(&a.output),
      "also write the schedule to this HDF5 result file (one row per layer)")(
      "force", po::bool_switch(&a.force),
      "let -o replace an existing file that is not a mapex result file");
  const po::variables_map vm =
      parse_command_line(desc, nullptr, args, " (see `mapex schedule --help`)");
  if (vm.count("help")) {
    out << desc;
    a.help = true;
    return a;
  }
  if (a.format != "table" && a.format != "json")
    throw InputError("--format expects table or json, got '" + a.format + "'");
  if (a.objective != "energy" && a.objective != "latency")
    throw InputError("--objective expects energy or latency, got '" + a.objective +
                     "' (segment costs add up for these two, not for edp)");
  if (a.k_s < 1) throw InputError("--k-s expects 1 or more, got " + std::to_string(a.k_s));
  if (a.max_segment_layers < 1)
    throw InputError("--max-segment-layers expects 1 or more, got " +
                     std::to_string(a.max_segment_layers));
  if (a.inter_layer != "pruned" && a.inter_layer != "exhaustive")
    throw InputError("--inter-layer expects pruned or exhaustive, got '" + a.inter_layer + "'");
  if (!(a.allocation_probability > 0 && a.allocation_probability <= 1))
    throw InputError("--allocation-probability expects a probability in (0, 1], got " +
                     std::to_string(a.allocation_probability));
  if (a.allocation_probability < 1 && a.inter_layer != "exhaustive")
    throw InputError(
        "--allocation-probability samples the exhaustive inter-layer search: give "
        "--inter-layer exhaustive too");
  if (a.allocation_keep_one && a.allocation_probability >= 1)
    throw InputError(
        "--allocation-keep-one keeps an allocation where --allocation-probability keeps none: "
        "give --allocation-probability below 1 too");
  if (a.intra_max_evaluations < 0)
    throw InputError("--intra-max-evaluations expects 0 (none) or a positive count, got " +
                     std::to_string(a.intra_max_evaluations));
  if (a.intra_max_seconds < 0)
    throw InputError("--intra-max-seconds expects 0 (none) or a positive number of seconds");
  if (a.intra_searcher.empty() && !a.intra_params.empty())
    throw InputError("--intra-param needs --intra-searcher");
  if (!a.output.empty()) {
    // Checked before the schedule runs, which can take minutes.
    const auto dir = boost::filesystem::absolute(a.output).parent_path();
    if (!boost::filesystem::is_directory(dir))
      throw InputError(SourceLocation{a.output, 0, 0}, "",
                       "the directory of the result file does not exist");
    check_output_target(a.output, {a.workload, a.arch}, a.force);
  }
  for (const auto* path : {&a.workload, &a.arch})
    if (!boost::filesystem::exists(*path))
      throw InputError(SourceLocation{*path, 0, 0}, "", "file does not exist");
  return a;
}

std::map<std::string, std::string> key_values(const std::vector<std::string>& items,
                                              const std::string& option) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--" + option + " expects key=value, got '" + item + "'");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

std::string on_chip_text(const LayerPlacement& p) {
  if (p.input_on_chip && p.output_on_chip) return "in+out";
  if (p.input_on_chip) return "in";
  if (p.output_on_chip) return "out";
  return "-";
}

std::string region_text(const NodeRegion& r) {
  return std::to_string(r.rows) + "x" + std::to_string(r.cols) + " @ row " + std::to_string(r.row);
}

double pruned_percent(const PruningCounts& c) {
  return c.candidates > 0 ? 100.0 * static_cast<double>(c.candidates - c.pareto) /
                                static_cast<double>(c.candidates)
                          : 0;
}

/// The command line's `--costmodel-param` or `--intra-param` list, space
/// separated, recorded with the result so that a run's parameters (R's
/// keep_probability, KAPLA §V) stay with its numbers.
std::string joined_params(const std::vector<std::string>& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string intra_name(const ScheduleArgs& a) {
  return a.intra_searcher.empty() ? a.searcher : a.intra_searcher;
}

std::string inter_text(const ScheduleArgs& a) {
  if (a.inter_layer == "pruned")
    return "k_S = " + std::to_string(a.k_s) + " (pruned inter-layer search)";
  std::ostringstream text;
  text << "exhaustive inter-layer search";
  if (a.allocation_probability < 1)
    text << " keeping each allocation with probability " << a.allocation_probability
         << (a.allocation_keep_one ? " (one where none is kept)" : "");
  return text.str();
}

nlohmann::ordered_json counts_json(const PruningCounts& c) {
  return {{"candidates", c.candidates},
          {"after_validity_pruning", c.valid},
          {"after_pareto_pruning", c.pareto},
          {"pruned_percent", pruned_percent(c)}};
}

void print_json(const ScheduleArgs& a, const Network& net, const Architecture& arch,
                const NetworkSchedule& s, std::ostream& out) {
  nlohmann::ordered_json j;
  j["network"] = net.name();
  j["layers"] = net.layers().size();
  j["architecture"] = arch.name();
  j["searcher"] = a.searcher;
  j["costmodel"] = a.costmodel;
  j["objective"] = a.objective;
  j["k_s"] = a.k_s;
  j["max_segment_layers"] = a.max_segment_layers;
  j["inter_layer"] = a.inter_layer;
  j["calibrated"] = a.inter_layer == "pruned" && !a.no_layer_by_layer && !a.no_calibration;
  if (a.inter_layer == "exhaustive") {
    j["allocation_probability"] = a.allocation_probability;
    j["allocation_keep_one"] = a.allocation_keep_one;
  }
  j["filter_pinning"] = !a.no_filter_pinning;
  j["intra_searcher"] = intra_name(a);
  j["intra_params"] = joined_params(a.intra_params);
  j["costmodel_params"] = joined_params(a.costmodel_params);
  j["valid"] = s.valid;
  if (!s.valid) j["invalid_reason"] = s.invalid_reason;
  j["energy_pj"] = s.energy_pj;
  j["latency_cycles"] = s.latency_cycles;
  j["seconds"] = s.seconds;
  j["segments_considered"] = s.segments_considered;
  j["pruning"] = counts_json(s.counts);
  j["chains_evaluated"] = s.chains_evaluated;
  if (s.layer_by_layer_valid)
    j["layer_by_layer"] = {{"energy_pj", s.layer_by_layer_energy_pj},
                           {"latency_cycles", s.layer_by_layer_latency_cycles},
                           {"chosen", s.layer_by_layer_chosen}};
  j["intra_layer_solves"] = s.intra_layer_solves;
  j["intra_layer_solves_cut"] = s.intra_layer_solves_cut;
  j["evaluations"] = s.evaluations;
  auto segs = nlohmann::ordered_json::array();
  for (const auto& seg : s.segments) {
    nlohmann::ordered_json js;
    js["first_layer"] = net.layers()[static_cast<size_t>(seg.first_layer)].op.name();
    js["last_layer"] = net.layers()[static_cast<size_t>(seg.last_layer)].op.name();
    js["energy_pj"] = seg.energy_pj;
    js["latency_cycles"] = seg.latency_cycles;
    js["estimate_energy_pj"] = seg.estimate_energy_pj;
    js["estimate_latency_cycles"] = seg.estimate_latency_cycles;
    js["pruning"] = counts_json(seg.counts);
    auto layers = nlohmann::ordered_json::array();
    for (const auto& p : seg.layers)
      layers.push_back({{"layer", p.name},
                        {"region",
                         {{"row", p.region.row},
                          {"col", p.region.col},
                          {"rows", p.region.rows},
                          {"cols", p.region.cols}}},
                        {"input_on_chip", p.input_on_chip},
                        {"output_on_chip", p.output_on_chip},
                        {"reserved_bytes_per_node", p.reserved_bytes_per_node},
                        {"energy_pj", p.energy_pj},
                        {"latency_cycles", p.latency_cycles},
                        {"estimate_energy_pj", p.estimate_energy_pj},
                        {"estimate_latency_cycles", p.estimate_latency_cycles},
                        {"mapping_yaml", p.mapping_yaml}});
    js["layers"] = layers;
    segs.push_back(js);
  }
  j["segments"] = segs;
  out << j.dump(2) << "\n";
}

/// The schedule as a result file (README, "Result file"): one row of the
/// `jobs` table per layer, in network order, with its region's figures and
/// scheme, and the schedule's totals and counts as file attributes, so
/// `mapex report` and the analysis scripts read it like a run's results.
void write_results(const ScheduleArgs& a, const Network& net, const Architecture& arch,
                   const NetworkSchedule& s) {
  std::ostringstream number;
  number << std::setprecision(17);
  const auto text = [&](auto value) {
    number.str("");
    number << value;
    return number.str();
  };
  std::map<std::string, std::string> attrs{
      {"kind", "schedule"},
      {"mapex_version", version()},
      {"plugin_abi", std::to_string(kPluginAbiVersion)},
      {"network", net.name()},
      {"network_path", a.workload},
      {"architecture", arch.name()},
      {"architecture_path", a.arch},
      {"searcher", a.searcher},
      {"intra_searcher", intra_name(a)},
      {"intra_params", joined_params(a.intra_params)},
      {"costmodel_params", joined_params(a.costmodel_params)},
      {"costmodel", a.costmodel},
      {"objective", a.objective},
      {"inter_layer", a.inter_layer},
      {"calibrated",
       a.inter_layer == "pruned" && !a.no_layer_by_layer && !a.no_calibration ? "1" : "0"},
      {"allocation_probability", text(a.allocation_probability)},
      {"allocation_keep_one", a.allocation_keep_one ? "1" : "0"},
      {"filter_pinning", a.no_filter_pinning ? "0" : "1"},
      {"k_s", std::to_string(a.k_s)},
      {"max_segment_layers", std::to_string(a.max_segment_layers)},
      {"seed", std::to_string(a.seed)},
      {"valid", s.valid ? "1" : "0"},
      {"invalid_reason", s.invalid_reason},
      {"energy_pj", text(s.energy_pj)},
      {"latency_cycles", text(s.latency_cycles)},
      {"seconds", text(s.seconds)},
      {"evaluations", std::to_string(s.evaluations)},
      {"intra_layer_solves", std::to_string(s.intra_layer_solves)},
      {"intra_layer_solves_cut", std::to_string(s.intra_layer_solves_cut)},
      {"segments", std::to_string(s.segments.size())},
      {"segments_considered", std::to_string(s.segments_considered)},
      {"chains_evaluated", std::to_string(s.chains_evaluated)},
      {"candidates", std::to_string(s.counts.candidates)},
      {"after_validity_pruning", std::to_string(s.counts.valid)},
      {"after_pareto_pruning", std::to_string(s.counts.pareto)},
      {"layer_by_layer_valid", s.layer_by_layer_valid ? "1" : "0"},
      {"layer_by_layer_energy_pj", text(s.layer_by_layer_energy_pj)},
      {"layer_by_layer_latency_cycles", text(s.layer_by_layer_latency_cycles)},
      {"layer_by_layer_chosen", s.layer_by_layer_chosen ? "1" : "0"}};
  // The writer writes under another name and renames: the path never
  // holds half a file.
  {
    ResultWriter writer(a.output, attrs);
    std::vector<JobRow> rows;
    for (size_t i = 0; i < s.segments.size(); ++i)
      for (const auto& p : s.segments[i].layers) {
        JobRow row;
        row.job_index = static_cast<std::uint64_t>(p.layer);
        row.job_id = net.name() + "/" + p.name;
        row.workload = net.name();
        row.layer = p.name;
        row.architecture = arch.name() + "[" + std::to_string(p.region.rows) + "x" +
                           std::to_string(p.region.cols) + "]";
        row.searcher = intra_name(a);
        row.costmodel = a.costmodel;
        row.objective = a.objective;
        row.status = "ok";
        row.stop_reason = "scheduled";
        row.latency_cycles = p.latency_cycles;
        row.energy_pj = p.energy_pj;
        row.edp = p.latency_cycles * p.energy_pj;
        row.macs = static_cast<double>(net.layers()[static_cast<size_t>(p.layer)].op.macs());
        row.seed = a.seed;
        row.best_mapping = p.mapping_yaml;
        row.mapping_summary =
            "segment " + std::to_string(i) + " (" +
            net.layers()[static_cast<size_t>(s.segments[i].first_layer)].op.name() + ".." +
            net.layers()[static_cast<size_t>(s.segments[i].last_layer)].op.name() +
            "), node rows " + std::to_string(p.region.row) + "-" +
            std::to_string(p.region.row + p.region.rows - 1) + ", on chip: " + on_chip_text(p);
        rows.push_back(std::move(row));
      }
    writer.append(rows);
    writer.flush();
  }
}

void print_table(const ScheduleArgs& a, const Network& net, const Architecture& arch,
                 const NetworkSchedule& s, std::ostream& out) {
  out << net.name() << " (" << net.layers().size() << " layers) on " << arch.name() << " by "
      << a.searcher << " (intra-layer: " << intra_name(a) << ") under " << a.costmodel << " ("
      << a.objective << "), " << inter_text(a) << ", segments of at most " << a.max_segment_layers
      << " layers" << (a.no_filter_pinning ? ", no filter pinning" : "") << "\n";
  out << std::setprecision(4) << "scheduled in " << s.seconds << " s; inter-layer schemes of "
      << s.segments_considered << " segments: " << s.counts.candidates << " enumerated, "
      << s.counts.valid << " after validity pruning, " << s.counts.pareto
      << " after Pareto pruning (" << std::setprecision(3) << pruned_percent(s.counts)
      << "% pruned); " << s.chains_evaluated << " chains solved (" << s.intra_layer_solves
      << " intra-layer solves, " << s.evaluations << " evaluations)\n";
  if (s.intra_layer_solves_cut > 0)
    out << s.intra_layer_solves_cut << " intra-layer solves ended on their budget\n";
  if (!s.valid) {
    out << "no valid schedule: " << s.invalid_reason << "\n";
    return;
  }
  out << std::setprecision(6) << "total: energy_pj " << s.energy_pj << ", latency_cycles "
      << s.latency_cycles << ", " << s.segments.size() << " segments\n";
  if (s.layer_by_layer_valid)
    out << "layer by layer: energy_pj " << s.layer_by_layer_energy_pj << ", latency_cycles "
        << s.layer_by_layer_latency_cycles
        << (s.layer_by_layer_chosen ? " (chosen: better than the k_S chains)" : "") << "\n";
  out << "\n";
  out << "| segment | layer | nodes (rows x cols @ row) | on chip | energy_pj | latency_cycles | "
         "estimate_energy_pj | schemes (enumerated/valid/Pareto) |\n"
      << "|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const auto& seg = s.segments[i];
    for (const auto& p : seg.layers)
      out << "| " << i << " | " << p.name << " | " << region_text(p.region) << " | "
          << on_chip_text(p) << " | " << p.energy_pj << " | " << p.latency_cycles << " | "
          << p.estimate_energy_pj << " | " << seg.counts.candidates << "/" << seg.counts.valid
          << "/" << seg.counts.pareto << " |\n";
    out << "| " << i << " | (segment, idle included) | | | " << seg.energy_pj << " | "
        << seg.latency_cycles << " | " << seg.estimate_energy_pj << " | |\n";
  }
}

}  // namespace

int cmd_schedule(const std::vector<std::string>& args, std::ostream& out) {
  const ScheduleArgs a = parse_args(args, out);
  if (a.help) return 0;
  const Network net = Network::load(a.workload);
  require_connected(net, a.workload);
  const Architecture arch = Architecture::load(a.arch);
  const PluginRegistry registry = load_plugins();
  const auto searcher = registry.make_searcher(a.searcher, {});
  const auto* scheduler = dynamic_cast<const NetworkScheduler*>(searcher.get());
  if (!scheduler)
    throw InputError("searcher '" + a.searcher +
                     "' maps one layer at a time and cannot schedule whole networks; use kapla");
  const auto model =
      registry.make_costmodel(a.costmodel, key_values(a.costmodel_params, "costmodel-param"));
  ScheduleOptions options;
  options.objective = parse_objective(a.objective);
  options.k_s = a.k_s;
  options.max_segment_layers = a.max_segment_layers;
  options.seed = a.seed;
  options.layer_by_layer_baseline = !a.no_layer_by_layer;
  options.calibrate_estimates = !a.no_calibration;
  options.inter_layer =
      a.inter_layer == "exhaustive" ? InterLayerSearch::kExhaustive : InterLayerSearch::kPruned;
  options.allocation_probability = a.allocation_probability;
  options.allocation_keep_one = a.allocation_keep_one;
  options.filter_pinning = !a.no_filter_pinning;
  options.intra_layer_budget =
      Budget{static_cast<std::uint64_t>(a.intra_max_evaluations), a.intra_max_seconds};
  // A per-layer searcher for the intra-layer solves: KAPLA's baselines S
  // and R (§V) on the same inter-layer space. Searchers are stateless
  // across calls (`search` is const), so one instance serves every solve.
  std::shared_ptr<const Searcher> intra;
  if (!a.intra_searcher.empty()) {
    intra = registry.make_searcher(a.intra_searcher, key_values(a.intra_params, "intra-param"));
    // One that would never stop without a budget is refused before the
    // schedule starts (issue 18), at the options that give one.
    if (const auto* needs = dynamic_cast<const BudgetRequirement*>(intra.get()))
      if (const auto why = needs->unbounded(options.intra_layer_budget))
        throw InputError(SourceLocation{"--intra-max-evaluations", 0, 0}, "budget", *why);
    options.intra_layer = [intra](SearchContext& ctx) { return intra->search(ctx); };
  }
  NetworkSchedule s;
  tbb::task_arena arena(a.threads > 0 ? a.threads : tbb::this_task_arena::max_concurrency());
  arena.execute([&] { s = scheduler->schedule(net, arch, *model, options); });
  // Printed first: a result file that cannot be written loses nothing shown.
  if (a.format == "json")
    print_json(a, net, arch, s, out);
  else
    print_table(a, net, arch, s, out);
  out.flush();
  if (!a.output.empty()) write_results(a, net, arch, s);
  return s.valid ? 0 : 1;
}

}  // namespace mapex::host
