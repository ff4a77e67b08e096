#include "host/schedule_command.hpp"

#include <tbb/task_arena.h>

#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <iomanip>
#include <mapex/schedule.hpp>
#include <nlohmann/json.hpp>

#include "host/plugin_registry.hpp"

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
  int k_s = 4;
  int max_segment_layers = 4;
  std::uint64_t seed = 1;
  int threads = 0;
  bool no_layer_by_layer = false;
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
      "seed", po::value(&a.seed)->default_value(a.seed), "random seed")(
      "threads,j", po::value(&a.threads), "worker threads (0: all cores)")(
      "format", po::value(&a.format)->default_value(a.format), "table or json");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      out << desc;
      a.help = true;
      return a;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string(e.what()) + " (see `mapex schedule --help`)");
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
  for (const auto* path : {&a.workload, &a.arch})
    if (!boost::filesystem::exists(*path))
      throw InputError(SourceLocation{*path, 0, 0}, "", "file does not exist");
  return a;
}

std::map<std::string, std::string> key_values(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--costmodel-param expects key=value, got '" + item + "'");
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

void print_table(const ScheduleArgs& a, const Network& net, const Architecture& arch,
                 const NetworkSchedule& s, std::ostream& out) {
  out << net.name() << " (" << net.layers().size() << " layers) on " << arch.name() << " by "
      << a.searcher << " under " << a.costmodel << " (" << a.objective << "), k_S = " << a.k_s
      << ", segments of at most " << a.max_segment_layers << " layers\n";
  out << std::setprecision(4) << "scheduled in " << s.seconds << " s; inter-layer schemes of "
      << s.segments_considered << " segments: " << s.counts.candidates << " enumerated, "
      << s.counts.valid << " after validity pruning, " << s.counts.pareto
      << " after Pareto pruning (" << std::setprecision(3) << pruned_percent(s.counts)
      << "% pruned); " << s.chains_evaluated << " chains solved (" << s.intra_layer_solves
      << " intra-layer solves, " << s.evaluations << " evaluations)\n";
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
  require_connected(net);
  const Architecture arch = Architecture::load(a.arch);
  const PluginRegistry registry = load_plugins();
  const auto searcher = registry.make_searcher(a.searcher, {});
  const auto* scheduler = dynamic_cast<const NetworkScheduler*>(searcher.get());
  if (!scheduler)
    throw InputError("searcher '" + a.searcher +
                     "' maps one layer at a time and cannot schedule whole networks; use kapla");
  const auto model = registry.make_costmodel(a.costmodel, key_values(a.costmodel_params));
  ScheduleOptions options;
  options.objective = parse_objective(a.objective);
  options.k_s = a.k_s;
  options.max_segment_layers = a.max_segment_layers;
  options.seed = a.seed;
  options.layer_by_layer_baseline = !a.no_layer_by_layer;
  NetworkSchedule s;
  tbb::task_arena arena(a.threads > 0 ? a.threads : tbb::this_task_arena::max_concurrency());
  arena.execute([&] { s = scheduler->schedule(net, arch, *model, options); });
  if (a.format == "json")
    print_json(a, net, arch, s, out);
  else
    print_table(a, net, arch, s, out);
  return s.valid ? 0 : 1;
}

}  // namespace mapex::host
