#include "host/commands.hpp"

#include <tbb/task_arena.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <mapex/analysis.hpp>
#include <mapex/budget_requirement.hpp>
#include <mapex/constraints.hpp>
#include <mapex/directives.hpp>
#include <mapex/layer_location.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/nn_dataflow_import.hpp>
#include <mapex/timeloop.hpp>
#include <mapex/version.hpp>
#include <sstream>

#include "host/cli_args.hpp"
#include "host/cli_light.hpp"
#include "host/experiment.hpp"
#include "host/json_output.hpp"
#include "host/mdc_commands.hpp"
#include "host/onnx_command.hpp"
#include "host/plugin_registry.hpp"
#include "host/runner.hpp"
#include "host/store_commands.hpp"
#include "host/timeloop_commands.hpp"

namespace mapex::host {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* const kUsage = cli_usage();

po::variables_map parse(const po::options_description& desc,
                        const po::positional_options_description& positional,
                        const std::vector<std::string>& args) {
  return parse_command_line(desc, &positional, args, "\n" + std::string(kUsage));
}

const Operator& select_layer(const Network& net, const std::string& workload_path,
                             const std::string& layer) {
  if (!layer.empty()) {
    const int index = net.find_layer(layer);
    if (index < 0) {
      std::string known;
      for (const auto& l : net.layers()) known += (known.empty() ? "" : ", ") + l.op.name();
      throw InputError(
          SourceLocation{workload_path, 0, 0}, "layer",
          "no layer '" + layer + "' in network '" + net.name() + "'; expected one of: " + known);
    }
    return net.layers()[static_cast<size_t>(index)].op;
  }
  if (net.layers().size() != 1)
    throw UsageError(workload_path + " has " + std::to_string(net.layers().size()) +
                     " layers; choose one with --layer");
  return net.layers().front().op;
}

/// Where `level.key` is written in a mapping file (line and column of the
/// key, or of the level, or the file alone when it is not there, e.g. in
/// directives).
SourceLocation key_location(const std::string& path, const std::string& level,
                            const std::string& key) {
  SourceLocation at{path, 0, 0};
  // yaml-cpp leaks its read buffer when the stream fails (a directory).
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return at;
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (root.IsMap() && root["mapping"]) root.reset(root["mapping"]);
    if (!root.IsMap()) return at;
    for (const auto& item : root) {
      if (!item.first.IsScalar() || item.first.Scalar() != level) continue;
      at = SourceLocation{path, item.first.Mark().line + 1, item.first.Mark().column + 1};
      if (!item.second.IsMap()) return at;
      for (const auto& entry : item.second)
        if (entry.first.IsScalar() && entry.first.Scalar() == key)
          return SourceLocation{path, entry.first.Mark().line + 1, entry.first.Mark().column + 1};
    }
  } catch (const YAML::Exception&) {
    // Not YAML (directives): the file alone.
  }
  return at;
}

/// Where `key` first appears in the YAML file at `path`, at any depth (the
/// architecture key a model refuses at bind time); the file alone when it
/// does not.
SourceLocation first_key_location(const std::string& path, const std::string& key) {
  SourceLocation at{path, 0, 0};
  std::function<bool(const YAML::Node&)> find = [&](const YAML::Node& node) {
    if (node.IsMap()) {
      for (const auto& item : node) {
        if (item.first.IsScalar() && item.first.Scalar() == key) {
          at = SourceLocation{path, item.first.Mark().line + 1, item.first.Mark().column + 1};
          return true;
        }
        if (find(item.second)) return true;
      }
    } else if (node.IsSequence()) {
      for (const auto& item : node)
        if (find(item)) return true;
    }
    return false;
  };
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return at;
  try {
    find(YAML::LoadFile(path));
  } catch (const YAML::Exception&) {
    // Unreadable here: the file alone.
  }
  return at;
}

/// Binds a model to the layer and chip; a refusal of an architecture key
/// (which a model reports without a place) is located in `arch_path`, a
/// refusal of the layer (no key) at the layer's entry in its workload.
std::unique_ptr<BoundCostModel> bind_located(const CostModel& model, const Operator& op,
                                             const Architecture& arch, const std::string& arch_path,
                                             const std::string& workload_path) {
  try {
    return model.bind(op, arch);
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;
    if (e.key().empty()) throw placed_at(e, layer_file_location(workload_path, op.name()));
    throw InputError(first_key_location(arch_path, e.key()), e.key(), e.problem());
  }
}

/// Runs `f` (building a layer's mapspace) and places a refusal that names
/// no file (a dimension with too many tile chains) at the layer's entry in
/// its workload file.
template <class F>
auto at_layer(const std::string& workload_path, const Operator& op, F f) {
  try {
    return f();
  } catch (const InputError& e) {
    if (!e.where().file.empty()) throw;
    throw placed_at(e, layer_file_location(workload_path, op.name()));
  }
}

/// Runs `make` (a plugin built from command-line parameters) and places a
/// parameter error that has no file at the option that gave it
/// (`--param: key 'victory_condition': ...`).
template <class Make>
auto made_from_option(const char* option, Make make) {
  try {
    return make();
  } catch (const InputError& e) {
    if (!e.where().file.empty() || e.key().empty()) throw;
    throw InputError(SourceLocation{option, 0, 0}, e.key(), e.problem());
  }
}

void require_file(const std::string& path, const char* what) {
  if (!fs::exists(path))
    throw InputError(SourceLocation{path, 0, 0}, "", std::string(what) + " file does not exist");
}

void print_metrics_table(const Metrics& m, std::ostream& out) {
  if (!m.valid) {
    out << "invalid mapping: " << m.invalid_reason << "\n";
    return;
  }
  out << std::setprecision(6);
  out << "latency_cycles   " << m.latency_cycles << "  (bound by " << m.bound_by << ")\n";
  out << "compute_cycles   " << m.compute_cycles << "\n";
  out << "energy_pj        " << m.energy_pj << "\n";
  out << "edp_pj_cycles    " << m.edp() << "\n";
  out << "utilization      " << m.utilization << "\n";
  out << "macs             " << m.macs << "\n\n";
  out << "| level | required_bytes | capacity_bytes | transfer_cycles | energy_pj |";
  for (const auto& t : m.levels.front().tensors) out << " " << t.tensor << " reads/writes |";
  out << "\n|---|---|---|---|---|";
  for (size_t i = 0; i < m.levels.front().tensors.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& l : m.levels) {
    out << "| " << l.level << " | " << l.required_bytes << " | " << l.capacity_bytes << " | "
        << l.transfer_cycles << " | " << l.energy_pj << " |";
    for (const auto& t : l.tensors) out << " " << t.reads << " / " << t.writes << " |";
    out << "\n";
  }
}

Mapping load_mapping(const std::string& path, const Operator& op, const Architecture& arch) {
  require_file(path, "mapping");
  return Mapping::load(path, op, arch);
}

/// The mapping a KAPLA directives file (§III-B, Listing 1) gives the layer:
/// the file's section for the layer, converted to the canonical mapping.
Mapping load_directives(const std::string& path, const Network& net, const Operator& op,
                        const Architecture& arch) {
  require_file(path, "directives");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<const Operator*> ops;  // a file may hold sections for every layer
  for (const auto& l : net.layers()) ops.push_back(&l.op);
  for (const auto& layer : parse_directives(text.str(), path, ops, arch))
    if (layer.layer == op.name()) return to_mapping(layer, op, arch, path);
  throw InputError(SourceLocation{path, 0, 0}, "",
                   "no section for layer '" + op.name() + "' (a line '" + op.name() + ":')");
}

/// `mapex import nn_dataflow RESULT.json --workload W --arch A -o DIR`:
/// every layer nn_dataflow scheduled as a mapping file, and the parameters
/// under which tensor_centric (model=nn_dataflow) scores it as nn_dataflow
/// did, with nn_dataflow's own figures beside them.
// What `import -o DIR` would write over: one of the command's inputs
// always, any other existing file unless it is a mapping an earlier import
// wrote (its first line says so) or --force is given. Checked before any
// file is written.
void check_import_targets(const std::vector<std::string>& files,
                          const std::vector<std::string>& inputs, bool force) {
  std::error_code ec;
  for (const auto& file : files) {
    if (!fs::exists(file, ec)) continue;
    for (const auto& input : inputs)
      if (fs::equivalent(file, input, ec))
        throw InputError(SourceLocation{file, 0, 0}, "-o",
                         "is an input of this command; import refuses to write a mapping over it");
    if (fs::is_directory(file, ec))
      throw InputError(SourceLocation{file, 0, 0}, "-o",
                       "is a directory; import writes a mapping file there");
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    if (!force && first.find(" as scheduled in ") == std::string::npos)
      throw InputError(SourceLocation{file, 0, 0}, "-o",
                       "exists and is not a mapping mapex import wrote; import refuses to replace "
                       "it (remove it, give another -o, or --force)");
  }
}

int cmd_import(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty() && args.front() == "timeloop") return cmd_import_timeloop(args, out);
  po::options_description desc("mapex import nn_dataflow");
  std::string format, result, workload, arch_path, dir;
  bool force = false;
  desc.add_options()("help,h", "show this help")("format", po::value(&format),
                                                 "the source tool: nn_dataflow")(
      "result", po::value(&result), "the tool's result (nn_dataflow: its JSON output)")(
      "workload", po::value(&workload), "the network it scheduled (mapex workload YAML)")(
      "arch", po::value(&arch_path), "the chip it scheduled on (mapex architecture YAML)")(
      "output,o", po::value(&dir), "folder for the mapping files")(
      "force", po::bool_switch(&force), "let -o replace files that mapex import did not write");
  po::positional_options_description positional;
  positional.add("format", 1).add("result", 1);
  const auto vm = parse(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  if (format != "nn_dataflow")
    throw UsageError(
        "import reads nn_dataflow results: mapex import nn_dataflow RESULT.json "
        "--workload W --arch A -o DIR");
  if (result.empty() || workload.empty() || arch_path.empty() || dir.empty())
    throw UsageError("import nn_dataflow needs RESULT.json, --workload, --arch and -o DIR");
  require_file(result, "result");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  // -o names a folder; an existing file there would make create_directories
  // throw a filesystem error after the import's work, so refuse it first.
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw InputError(SourceLocation{dir, 0, 0}, "-o",
                     "exists and is not a directory; expected the folder for the mapping files");
  const Network net = Network::load(workload);
  const Architecture arch = Architecture::load(arch_path);
  const auto layers = ndf::import_result(result, net, arch);
  std::vector<std::string> files;
  for (const auto& il : layers)
    files.push_back((fs::path(dir) / (il.name + ".mapping.yaml")).string());
  check_import_targets(files, {result, workload, arch_path}, force);
  fs::create_directories(dir);
  out << "layer\tmapping\tparams\tnn_dataflow_energy_pj\tnn_dataflow_cycles\n";
  for (const auto& il : layers) {
    const Operator& op = net.layers()[static_cast<size_t>(net.find_layer(il.name))].op;
    const std::string& file = files[static_cast<size_t>(&il - layers.data())];
    std::ofstream f(file);
    f << "# " << il.name << " as scheduled in " << result
      << "\n# mapex evaluate --costmodel tensor_centric";
    for (const auto& [k, v] : il.params) f << " --param " << k << "=" << v;
    f << "\n" << il.mapping.to_yaml(op, arch);
    if (!f) throw std::runtime_error("cannot write " + file);
    out << il.name << '\t' << file << '\t';
    for (const auto& [k, v] : il.params) out << k << '=' << v << ' ';
    out << '\t' << il.reported.cost << '\t' << il.reported.time << '\n';
  }
  return kExitOk;
}

/// `mapex directives`: a mapping in KAPLA's tensor-centric directives, or
/// directives as a canonical mapping (§III-B, Listing 1).
int cmd_directives(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mapex directives");
  std::string workload, arch_path, mapping_path, directives_path, layer;
  desc.add_options()("help,h", "show this help")("workload", po::value(&workload),
                                                 "workload (network or operator) YAML")(
      "layer", po::value(&layer), "layer of the workload (needed when it has several)")(
      "arch", po::value(&arch_path), "architecture YAML")("mapping", po::value(&mapping_path),
                                                          "mapping YAML: printed as directives")(
      "directives", po::value(&directives_path), "directives: printed as a mapping YAML");
  const auto vm = parse(desc, {}, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  if (workload.empty() || arch_path.empty() || mapping_path.empty() == directives_path.empty())
    throw UsageError(
        "directives needs --workload, --arch and one of --mapping (to print its directives) or "
        "--directives (to print the mapping they describe); see `mapex directives --help`");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  const Network net = Network::load(workload);
  const Operator& op = select_layer(net, workload, layer);
  const Architecture arch = Architecture::load(arch_path);
  if (!directives_path.empty()) {
    out << load_directives(directives_path, net, op, arch).to_yaml(op, arch);
    return kExitOk;
  }
  const Mapping mapping = load_mapping(mapping_path, op, arch);
  out << format_directives(to_directives(op, arch, mapping), op);
  return kExitOk;
}

int cmd_evaluate(const std::vector<std::string>& args, std::ostream& out) {
  const EvaluateOptions options = parse_evaluate_options(args);
  if (auto status = evaluate_without_yaml(options, out)) return *status;
  const std::string& workload = options.workload;
  const std::string& arch_path = options.arch_path;
  const std::string& mapping_path = options.mapping_path;
  const std::string& directives_path = options.directives_path;
  const std::string& layer = options.layer;
  const std::string& costmodel = options.costmodel;
  const std::string& format = options.format;
  const std::vector<std::string>& params = options.params;
  if (!mapping_path.empty() && !directives_path.empty())
    throw UsageError("give the scheme once: --mapping or --directives, not both");
  if (workload.empty() || arch_path.empty() || (mapping_path.empty() && directives_path.empty()))
    throw UsageError(
        "evaluate needs --workload, --arch and --mapping or --directives (or --maestro and "
        "--hw)\n" +
        std::string(kUsage));
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format expects table, csv or json, got '" + format + "'");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  const Network net = Network::load(workload);
  const Operator& op = select_layer(net, workload, layer);
  const Architecture arch = Architecture::load(arch_path);
  const Mapping mapping = directives_path.empty() ? load_mapping(mapping_path, op, arch)
                                                  : load_directives(directives_path, net, op, arch);
  const PluginRegistry registry = load_plugins_named({costmodel});
  const auto model = made_from_option(
      "--param", [&] { return registry.make_costmodel(costmodel, parse_params(params)); });
  const auto bound = bind_located(*model, op, arch, arch_path, workload);
  if (auto refused = bound->unsupported(mapping))
    throw InputError(key_location(mapping_path.empty() ? directives_path : mapping_path,
                                  refused->level, refused->key),
                     refused->key, "level '" + refused->level + "': " + refused->reason);
  Metrics m;
  if (auto reason = bound->precheck(mapping))
    m = Metrics::invalid(*reason);
  else
    m = bound->evaluate(mapping);
  if (auto bad = non_finite_metric(m))
    throw InputError(SourceLocation{arch_path, 0, 0}, "",
                     "cost model '" + costmodel + "' gives " + *bad + " for layer '" + op.name() +
                         "'; an energy, bandwidth or clock of this architecture, or a cost-model "
                         "parameter, is out of range");
  if (format == "json") {
    nlohmann::ordered_json j;
    j["layer"] = op.name();
    j["architecture"] = arch.name();
    j["costmodel"] = costmodel;
    j["roofline_peak_cycles"] = roofline_peak(op, arch).cycles;
    j["metrics"] = metrics_json(m, arch);
    j["mapping"] = mapping_json(mapping, op, arch);
    out << j.dump(2) << "\n";
  } else if (format == "csv") {
    out << "layer_name,valid,latency_cycles,compute_cycles,energy_pj,edp_pj_cycles,utilization,"
           "macs,"
           "bound_by,invalid_reason\n";
    out << std::setprecision(17) << op.name() << "," << (m.valid ? 1 : 0) << "," << m.latency_cycles
        << "," << m.compute_cycles << "," << m.energy_pj << "," << m.edp() << "," << m.utilization
        << "," << m.macs << "," << m.bound_by << ",\"" << m.invalid_reason << "\"\n";
  } else {
    out << op.name() << " on " << arch.name() << " by " << costmodel << "\n"
        << "mapping: " << mapping.summary(op, arch) << "\n\n";
    print_metrics_table(m, out);
  }
  return m.valid ? kExitOk : kExitFailed;
}

/// The mapspace options shared by `search` and `mapspace`; they build a
/// ConstraintSpec like an experiment's `mapspace:` block (a file given with
/// --constraints is read first, flags then override it).
struct ConstraintFlags {
  int max_parallel_dims = -1;
  bool edge_tiles = false;
  bool no_capacity = false;
  bool explore_bypass = false;
  double min_utilization = -1;
  std::string style, file;
  /// The command's workload and architecture files: Timeloop constraints
  /// are read together with the Timeloop ones among them.
  std::vector<std::string> timeloop_context;

  void add(po::options_description& desc) {
    desc.add_options()("constraints", po::value(&file),
                       "constraints YAML (the keys of an experiment's mapspace block)")(
        "style", po::value(&style),
        "mapping style: row_stationary, weight_stationary, output_stationary, interstellar, "
        "dmazerunner")("min-utilization", po::value(&min_utilization),
                       "PE-utilisation bound p in [0, 1] (Marvel)")(
        "max-parallel-dims", po::value(&max_parallel_dims),
        "split dimensions per spatial level (0: array rank)")(
        "edge-tiles", po::bool_switch(&edge_tiles), "allow tiles that do not divide the bounds")(
        "no-capacity", po::bool_switch(&no_capacity), "do not reject tiles that overflow a buffer")(
        "explore-bypass", po::bool_switch(&explore_bypass),
        "enumerate keep/bypass of every tensor at every buffer level");
  }

  ConstraintSpec timeloop_constraints() const {
    std::vector<std::string> files;
    for (const auto& f : timeloop_context)
      if (f != file && std::find(files.begin(), files.end(), f) == files.end() &&
          timeloop::is_timeloop_file(f))
        files.push_back(f);
    files.push_back(file);
    return timeloop::load_constraints(files);
  }

  ConstraintSpec build() const {
    ConstraintSpec spec;
    if (!file.empty()) {
      require_file(file, "constraints");
      spec = timeloop::is_timeloop_file(file) ? timeloop_constraints() : load_constraint_spec(file);
    }
    if (!style.empty()) {
      spec.style = style;
      spec.style_where = SourceLocation{"--style", 0, 0};
    }
    if (edge_tiles) spec.factors_only = false;
    if (no_capacity) spec.check_capacity = false;
    if (explore_bypass) spec.explore_bypass = true;
    if (max_parallel_dims >= 0) spec.max_parallel_dims = max_parallel_dims;
    if (min_utilization >= 0 || (min_utilization != -1 && !(min_utilization >= 0))) {
      if (!(min_utilization >= 0 && min_utilization <= 1))
        throw UsageError("--min-utilization expects a fraction in [0, 1]");
      spec.min_utilization = min_utilization;
    }
    return spec;
  }
};

// SIGINT / SIGTERM during `search`: a flag the search polls at its next
// batch (SearchContext::set_stop_flag); a second signal ends mapex at once.
std::atomic<bool> g_search_stop{false};
std::atomic<int> g_search_signal{0};
extern "C" void mapex_on_search_signal(int signal_number) {
  g_search_signal.store(signal_number);
  g_search_stop.store(true);
}
std::atomic<bool>& search_stop_flag() { return g_search_stop; }
int search_stop_signal() { return g_search_signal.load(); }

class SearchSignalGuard {
 public:
  SearchSignalGuard() {
    g_search_stop.store(false);
    g_search_signal.store(0);
    struct sigaction action {};
    action.sa_handler = mapex_on_search_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SearchSignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SearchSignalGuard(const SearchSignalGuard&) = delete;
  SearchSignalGuard& operator=(const SearchSignalGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

int cmd_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mapex search");
  std::string workload, arch_path, layer, searcher, costmodel, objective, format;
  std::vector<std::string> params, costmodel_params;
  std::uint64_t seed = 1, max_evaluations = 0;
  double max_seconds = 0;
  int threads = 0;
  ConstraintFlags constraints;
  desc.add_options()("help,h", "show this help")("workload", po::value(&workload)->required(),
                                                 "workload (network or operator) YAML")(
      "layer", po::value(&layer), "layer of the workload (needed when it has several)")(
      "arch", po::value(&arch_path)->required(), "architecture YAML")(
      "searcher", po::value(&searcher)->required(), "searcher plugin")(
      "param", po::value(&params)->composing(), "searcher parameter key=value (repeatable)")(
      "costmodel", po::value(&costmodel)->default_value("roofline"), "cost model plugin")(
      "costmodel-param", po::value(&costmodel_params)->composing(),
      "cost model parameter key=value")(
      "objective", po::value(&objective)->default_value("latency"), "latency, energy or edp")(
      "seed", po::value(&seed), "random seed (default 1)")(
      "max-evaluations", po::value(&max_evaluations), "evaluation budget (0: unlimited)")(
      "max-seconds", po::value(&max_seconds), "time budget in seconds (0: unlimited)")(
      "threads,j", po::value(&threads), "worker threads (0: all cores)")(
      "format", po::value(&format)->default_value("table"), "table or json");
  constraints.add(desc);
  const auto vm = parse(desc, {}, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  if (format != "table" && format != "json")
    throw UsageError("--format expects table or json, got '" + format + "'");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  const Network net = Network::load(workload);
  const Operator& op = select_layer(net, workload, layer);
  const Architecture arch = Architecture::load(arch_path);
  const PluginRegistry registry = load_plugins_named({searcher, costmodel});
  const auto searcher_obj = made_from_option(
      "--param", [&] { return registry.make_searcher(searcher, parse_params(params)); });
  const auto model = made_from_option("--costmodel-param", [&] {
    return registry.make_costmodel(costmodel, parse_params(costmodel_params));
  });
  const Budget budget{max_evaluations, max_seconds};
  // A searcher that would never stop without a budget is refused before it
  // starts, at the options that give one (issue 18).
  if (const auto* needs = dynamic_cast<const BudgetRequirement*>(searcher_obj.get()))
    if (const auto why = needs->unbounded(budget))
      throw InputError(SourceLocation{"--max-evaluations", 0, 0}, "budget", *why);
  SearchRequest request;
  request.op = &op;
  request.arch = &arch;
  request.searcher = searcher_obj.get();
  request.costmodel = model.get();
  request.objective = made_from_option("--objective", [&] { return parse_objective(objective); });
  request.seed = seed;
  request.budget = budget;
  request.workload_path = workload;
  constraints.timeloop_context = {workload, arch_path};
  request.mapspace = constraints.build();
  resolve(request.mapspace, op, arch);  // contradictions are bad input (exit 2)
  // SIGINT / SIGTERM end the search at its next batch; its best so far is
  // printed, marked as interrupted, as `mapex run` keeps its finished jobs.
  request.stop = &search_stop_flag();
  JobResult r;
  int caught = 0;
  {
    SearchSignalGuard guard;
    tbb::task_arena arena(threads > 0 ? threads : tbb::this_task_arena::max_concurrency());
    arena.execute([&] { r = run_search(request); });
    caught = search_stop_signal();
  }
  if (r.status == JobStatus::kFailed && r.bad_input) throw InputError(r.error);
  if (r.status == JobStatus::kFailed) throw Error("search failed: " + r.error);

  if (format == "json") {
    nlohmann::ordered_json j;
    j["layer"] = op.name();
    j["architecture"] = arch.name();
    j["searcher"] = searcher;
    j["costmodel"] = costmodel;
    j["objective"] = objective;
    j["seed"] = seed;
    j["status"] = to_string(r.status);
    j["evaluations"] = r.evaluations;
    j["wall_seconds"] = r.wall_seconds;
    j["complete"] = r.complete;
    j["stop_reason"] = r.stop_reason;
    j["interrupted"] = r.interrupted;
    j["roofline_peak_cycles"] = r.roofline_peak_cycles;
    if (!r.pareto.empty()) {
      auto front = nlohmann::ordered_json::array();
      for (const auto& p : r.pareto)
        front.push_back({{"evaluation", p.evaluation},
                         {"latency_cycles", p.latency_cycles},
                         {"energy_pj", p.energy_pj},
                         {"mapping", p.mapping_summary}});
      j["pareto"] = front;
    }
    if (r.status == JobStatus::kOk) {
      j["metrics"] = metrics_json(r.best, arch);
      const Mapping best = Mapping::parse(r.mapping_yaml, "best mapping", op, arch);
      j["mapping"] = mapping_json(best, op, arch);
      j["mapping_yaml"] = r.mapping_yaml;
    } else {
      j["error"] = r.error;
    }
    out << j.dump(2) << "\n";
  } else {
    out << op.name() << " on " << arch.name() << " by " << searcher << " under " << costmodel
        << " (" << objective << ")\n";
    out << "evaluations " << r.evaluations << " in " << std::setprecision(3) << r.wall_seconds
        << " s; "
        << (r.complete      ? "whole space covered"
            : r.interrupted ? "INTERRUPTED: the best mapping found until then"
                            : "stopped: " + r.stop_reason)
        << "\n";
    if (r.status == JobStatus::kOk) {
      out << "best: " << r.mapping_summary << "\n\n";
      print_metrics_table(r.best, out);
      if (!r.pareto.empty()) {
        out << "\nlatency-energy Pareto front (" << r.pareto.size() << " mappings):\n"
            << "| latency_cycles | energy_pj | evaluation | mapping |\n|---|---|---|---|\n";
        for (const auto& p : r.pareto)
          out << "| " << p.latency_cycles << " | " << p.energy_pj << " | " << p.evaluation << " | "
              << p.mapping_summary << " |\n";
      }
      out << "\n" << r.mapping_yaml;
    } else {
      out << r.error << "\n";
    }
  }
  if (caught != 0) {
    err << "mapex: interrupted by " << (caught == SIGINT ? "SIGINT" : "SIGTERM") << " after "
        << r.evaluations << " evaluations: "
        << (r.status == JobStatus::kOk ? "printed the best mapping found so far"
                                       : "no valid mapping found so far")
        << "\n";
    return 128 + caught;
  }
  return r.status == JobStatus::kOk ? kExitOk : kExitFailed;
}

/// Parses "K=64,C=32" into one value per dimension of `op` (1 where absent).
std::vector<std::int64_t> parse_dim_values(const std::string& text, const Operator& op,
                                           const std::string& flag) {
  std::vector<std::int64_t> out(static_cast<size_t>(op.num_dims()), 1);
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    const DimId d = eq == std::string::npos ? -1 : op.find_dim(item.substr(0, eq));
    std::int64_t v = 0;
    try {
      v = eq == std::string::npos ? 0 : std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      v = 0;
    }
    if (d < 0 || v < 1 || v > op.dims()[static_cast<size_t>(d)].bound)
      throw UsageError(flag +
                       " expects DIM=SIZE pairs with known dimensions and sizes within "
                       "the bounds, got '" +
                       item + "'");
    out[static_cast<size_t>(d)] = v;
  }
  return out;
}

std::vector<std::int64_t> largest_fitting_outer_tile(const Mapspace& space) {
  auto tile = space.largest_outer_tile();
  if (tile.empty()) throw Error("no tile of " + space.op().name() + " fits the outermost buffer");
  return tile;
}

int cmd_mapspace(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mapex mapspace");
  std::string workload, arch_path, layer, format, outer;
  bool explain = false, subspaces = false, no_valid_count = false;
  ConstraintFlags constraints;
  desc.add_options()("help,h", "show this help")("workload", po::value(&workload)->required(),
                                                 "workload YAML")("layer", po::value(&layer),
                                                                  "layer of the workload")(
      "arch", po::value(&arch_path)->required(), "architecture YAML")(
      "explain", po::bool_switch(&explain),
      "also show how many mappings each rule rejects, from the space with edge tiles (seconds "
      "on large layers)")("subspaces", po::bool_switch(&subspaces),
                          "also show Marvel's off-chip and on-chip sub-spaces")(
      "no-valid-count", po::bool_switch(&no_valid_count),
      "skip counting the mappings that fit the buffers (it walks every valid tiling)")(
      "outer-tile", po::value(&outer),
      "outermost-buffer tile for the on-chip sub-space, e.g. K=64,C=32 (default: the largest "
      "tile that fits)")("format", po::value(&format)->default_value("table"), "table or json");
  constraints.add(desc);
  const auto vm = parse(desc, {}, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  if (format != "table" && format != "json")
    throw UsageError("--format expects table or json, got '" + format + "'");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  const Network net = Network::load(workload);
  const Operator& op = select_layer(net, workload, layer);
  const Architecture arch = Architecture::load(arch_path);
  constraints.timeloop_context = {workload, arch_path};
  const Mapspace space = at_layer(
      workload, op, [&] { return Mapspace(op, arch, resolve(constraints.build(), op, arch)); });
  const auto steps = space.count_steps(!no_valid_count);
  const BigInt valid = steps.back().size;
  // With factors-only tiles (Marvel §5.2's pruning), --explain also shows
  // the space with edge tiles, so the first pruning step is counted too.
  std::optional<BigInt> with_edge_tiles;
  if (explain && space.options().factors_only) {
    MapspaceOptions edges = space.options();
    edges.factors_only = false;
    with_edge_tiles = at_layer(
        workload, op, [&] { return Mapspace(op, arch, edges).count_steps(false).front().size; });
  }

  std::optional<SubspaceCounts> sub;
  std::vector<std::int64_t> outer_tile;
  if (subspaces && space.outer_buffer() < 0)
    throw UsageError(
        "--subspaces needs a chip whose level below DRAM is a buffer (Marvel's L2); '" +
        arch.name() + "' has a spatial level there");
  if (subspaces) {
    outer_tile = outer.empty() ? largest_fitting_outer_tile(space)
                               : parse_dim_values(outer, op, "--outer-tile");
    sub = space.subspaces(outer_tile);
  }

  if (format == "json") {
    nlohmann::ordered_json j;
    j["layer"] = op.name();
    j["architecture"] = arch.name();
    j["style"] = space.options().style;
    auto dims_json = nlohmann::ordered_json::array();
    for (const auto& dim : op.dims()) dims_json.push_back(dim.name);
    j["dimensions"] = dims_json;
    auto steps_json = nlohmann::ordered_json::array();
    for (const auto& st : steps)
      steps_json.push_back({{"rule", st.rule}, {"mappings", st.size.str()}});
    j["steps"] = steps_json;
    if (with_edge_tiles) j["with_edge_tiles"] = with_edge_tiles->str();
    j["size"] = space.size().str();
    if (no_valid_count || !space.options().check_capacity)
      j["valid"] = no_valid_count ? nlohmann::ordered_json() : nlohmann::ordered_json(valid.str());
    else
      j["valid"] = valid.str();
    if (sub) {
      j["outer_tile"] = outer_tile;
      j["offchip"] = sub->offchip.str();
      j["offchip_fitting"] = sub->offchip_fitting.str();
      j["offchip_fitting_tiles"] = sub->offchip_fitting_tiles.str();
      j["layouts"] = sub->layouts.str();
      j["onchip"] = sub->onchip.str();
      j["onchip_valid"] = sub->onchip_valid.str();
    }
    if (valid == 0)
      j["empty"] = space.empty_reason().value_or("the mapspace is empty after constraints");
    out << j.dump(2) << "\n";
    return valid == 0 ? kExitFailed : kExitOk;
  }
  out << op.name() << " on " << arch.name()
      << (space.options().style.empty() ? "" : " (style " + space.options().style + ")") << "\n";
  for (DimId d = 0; d < op.num_dims(); ++d)
    out << "  " << op.dims()[static_cast<size_t>(d)].name << " = "
        << op.dims()[static_cast<size_t>(d)].bound << ": " << space.num_chains(d)
        << " tile chains\n";
  out << "\n| constraint added | mappings |" << (explain ? " rejected by it |" : "")
      << "\n|---|---|" << (explain ? "---|" : "") << "\n";
  if (with_edge_tiles)
    out << "| tiles with edge tiles, splits within fan-outs, all loop orders | "
        << format_count(*with_edge_tiles) << " | - |\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    out << "| " << steps[i].rule << " | " << format_count(steps[i].size) << " |";
    if (explain) {
      const BigInt* before = i > 0             ? &steps[i - 1].size
                             : with_edge_tiles ? &*with_edge_tiles
                                               : nullptr;
      out << " " << (before ? format_count(*before - steps[i].size) : std::string("-")) << " |";
    }
    out << "\n";
  }
  if (sub) {
    std::string tile;
    for (DimId d = 0; d < op.num_dims(); ++d)
      tile += (d ? " " : "") + op.dims()[static_cast<size_t>(d)].name +
              std::to_string(outer_tile[static_cast<size_t>(d)]);
    const std::string outer_name = arch.levels()[static_cast<size_t>(space.outer_buffer())].name;
    out << "\nMarvel's sub-spaces (§5):\n"
        << "  off-chip: " << outer_name
        << " tiles x DRAM loop orders: " << format_count(sub->offchip) << "; those that fit "
        << outer_name << ": " << format_count(sub->offchip_fitting)
        << "\n  DRAM layouts (a dimension order per tensor): " << format_count(sub->layouts)
        << "\n  on-chip for the " << outer_name << " tile [" << tile
        << "]: " << format_count(sub->onchip) << "; valid: " << format_count(sub->onchip_valid)
        << "\n";
  }
  if (valid == 0) {
    // Consistent constraints that leave nothing (contradictions are caught
    // by `resolve` as bad input): name the rule that emptied the space.
    const auto reason = space.empty_reason();
    out << "\n" << reason.value_or("the mapspace is empty after constraints") << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

int cmd_plugins(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mapex plugins");
  desc.add_options()("help,h", "show this help");
  const auto vm = parse(desc, {}, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  const PluginRegistry registry = load_plugins();
  out << "| name | kind | version | abi | path |\n|---|---|---|---|---|\n";
  for (const auto& p : registry.plugins())
    out << "| " << p.descriptor->name << " | " << to_string(p.descriptor->kind) << " | "
        << p.descriptor->version << " | " << p.descriptor->abi_version << " | " << p.path << " |\n";
  out << "\n";
  for (const auto& p : registry.plugins()) {
    out << p.descriptor->name << ": " << p.descriptor->summary << "\n";
    for (std::size_t i = 0; i < p.descriptor->num_params; ++i) {
      const ParamSpec& s = p.descriptor->params[i];
      out << "    " << s.name << " (" << to_string(s.type) << ", default " << s.default_value
          << "): " << s.doc << "\n";
    }
  }
  for (const auto& problem : registry.problems())
    err << "mapex: warning: " << problem.message << "\n";
  return kExitOk;
}

}  // namespace

bool is_store_command(const std::string& command) {
  return command == "run" || command == "merge" || command == "report" || command == "schedule";
}

int main_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run_guarded(err, [&] {
    if (auto status = run_light_command(argc, argv, out)) return *status;
    const std::string command = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    if (is_store_command(command)) return call_store_command(command, args, out, err);
    if (command == "evaluate") return cmd_evaluate(args, out);
    if (command == "search") return cmd_search(args, out, err);
    if (command == "mapspace") return cmd_mapspace(args, out);
    if (command == "directives") return cmd_directives(args, out);
    if (command == "import" && !args.empty() && args[0] == "onnx")
      return onnx_import_command({args.begin() + 1, args.end()}, out, err);
    if (command == "import") return cmd_import(args, out);
    if (command == "export") return cmd_export(args, out);
    if (command == "check") return cmd_check(args, out);
    if (command == "plugins") return cmd_plugins(args, out, err);
    throw UsageError("unknown command '" + command + "'\n" + kUsage);
  });
}

}  // namespace mapex::host
