#include "host/experiment.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "constraints_yaml.hpp"
#include "host/plugin_registry.hpp"
#include "host/sweep.hpp"
#include "yaml_reader.hpp"

namespace mapex::host {
namespace fs = std::filesystem;

std::uint64_t stable_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex_id(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

namespace {

std::string resolve(const std::string& base_file, const std::string& relative) {
  const fs::path p(relative);
  if (p.is_absolute()) return p.string();
  return (fs::path(base_file).parent_path() / p).lexically_normal().string();
}

/// Whether a named file exists; a name the system cannot even look up (too
/// long, say) does not, instead of escaping as a filesystem_error.
bool file_exists(const std::string& path) {
  std::error_code error;
  return fs::exists(path, error) && !error;
}

/// Why the file an entry names cannot be read as one: it does not exist,
/// or it is a directory (which read as an empty file and was reported at
/// the directory's "line 1"; found by fuzz_experiment). Nothing when it is
/// a file.
std::optional<std::string> not_a_file(const std::string& path) {
  if (!file_exists(path)) return "does not exist";
  std::error_code error;
  if (fs::is_directory(path, error)) return "is a directory";
  return std::nullopt;
}

Budget read_budget(const std::string& file, const YAML::Node& node, Budget fallback) {
  yaml::Map m(file, node, "budget");
  Budget b = fallback;
  if (auto e = m.optional("evaluations")) {
    const std::int64_t v = yaml::as_int(file, *e, "evaluations");
    if (v < 0) yaml::fail(file, *e, "evaluations", "expected 0 (unlimited) or a positive integer");
    b.max_evaluations = static_cast<std::uint64_t>(v);
  }
  if (auto s = m.optional("seconds")) {
    const double v = yaml::as_double(file, *s, "seconds");
    if (v < 0) yaml::fail(file, *s, "seconds", "expected 0 (unlimited) or a positive number");
    b.max_seconds = v;
  }
  m.finish();
  return b;
}

std::map<std::string, std::string> read_params(const std::string& file, const YAML::Node& node) {
  if (!node.IsMap()) yaml::fail(file, node, "params", "expected a map of parameter to value");
  std::map<std::string, std::string> out;
  for (const auto& item : node) {
    const std::string key = yaml::as_string(file, item.first, "params");
    out[key] = yaml::as_scalar(file, item.second, key);
  }
  return out;
}

// A plugin use is either a bare name or {plugin, label, params[, budget]}.
template <typename Use>
Use read_use(const std::string& file, const YAML::Node& node, const char* what, Budget* budget,
             std::optional<YAML::Node>* mapspace = nullptr) {
  Use use;
  use.where = yaml::location(file, node);
  if (node.IsScalar()) {
    use.plugin = yaml::as_string(file, node, what);
  } else {
    yaml::Map m(file, node, what);
    use.plugin = m.string("plugin");
    use.label = m.string("label", "");
    if (auto p = m.optional("params")) use.params = read_params(file, *p);
    if (budget) {
      if (auto b = m.optional("budget")) *budget = read_budget(file, *b, *budget);
      m.allow("sweep");      // searcher entries may sweep; read by the caller
      m.allow("operators");  // and name their operator kinds; read by the caller
    }
    if (mapspace) *mapspace = m.optional("mapspace");
    m.finish();
  }
  if (use.label.empty()) use.label = use.plugin;
  return use;
}

// `operators: [gemm, fc]`: the operator kinds a searcher runs on.
std::vector<std::string> read_operator_kinds(const std::string& file, const YAML::Node& node) {
  static const std::set<std::string> known{"conv2d", "fc", "gemm", "loopnest"};
  auto kinds = yaml::as_string_list(file, node, "operators");
  if (kinds.empty())
    yaml::fail(file, node, "operators",
               "expected a non-empty list of operator kinds (conv2d, fc, gemm, loopnest)");
  for (const auto& k : kinds)
    if (!known.count(k))
      yaml::fail(file, node, "operators",
                 "expected operator kinds among conv2d, fc, gemm, loopnest, got '" + k + "'");
  return kinds;
}

// A searcher restricted to operator kinds that no layer of the experiment
// has would run no job: the user meant something else.
void check_every_searcher_has_a_layer(const Experiment& e) {
  for (const auto& su : e.searchers) {
    bool any = false;
    for (const auto& w : e.workloads)
      for (int layer : w.layers)
        any = any || su.applies_to(w.network.layers()[static_cast<size_t>(layer)].op);
    if (!any)
      throw InputError(
          su.where, "operators",
          "searcher '" + su.label + "' runs on no layer of the experiment's workloads");
  }
}

// Searcher variants: `sweep:` over `params.<name>`, `budget.evaluations`
// and `budget.seconds`; each point is labelled "<label>[name=value,...]".
std::vector<SearcherUse> searcher_variants(const std::string& file, const SearcherUse& base,
                                           const Sweep& sweep) {
  std::vector<SearcherUse> out;
  for (auto point : sweep.points(file)) {
    SearcherUse use = base;
    for (auto& a : point) {
      if (a.key.rfind("params.", 0) == 0 && a.key.size() > 7) {
        if (!a.value.IsScalar())
          throw InputError(a.where, a.key, "expected a value for the parameter, got a list");
        use.params[a.key.substr(7)] = a.value.Scalar();
        a.key = a.key.substr(7);
      } else if (a.key == "budget.evaluations" || a.key == "budget.seconds") {
        YAML::Node b;
        b[a.key.substr(7)] = a.value;
        use.budget = read_budget(file, b, use.budget);
      } else {
        throw InputError(a.key_where, a.key,
                         "names no searcher parameter; expected params.<name>, "
                         "budget.evaluations or budget.seconds");
      }
    }
    bool keep = true;
    for (const auto& f : sweep.filters)
      keep = keep && f.keep([&](const std::string& name) -> std::optional<double> {
        for (const auto& a : point) {
          if (a.key != name && "params." + a.key != name) continue;
          char* end = nullptr;
          const double v = std::strtod(a.text.c_str(), &end);
          if (end && *end == '\0' && !a.text.empty()) return v;
          if (a.text == "true") return 1.0;
          if (a.text == "false") return 0.0;
        }
        return std::nullopt;
      });
    if (!keep) continue;
    use.label = variant_name(base.label, point);
    out.push_back(std::move(use));
  }
  return out;
}

Technology read_technology(const std::string& file, const YAML::Node& node) {
  yaml::Map m(file, node, "technology");
  Technology t;
  // Bounded like the architecture's energies: wide enough for any process,
  // narrow enough that area and power (up to PEs squared times a
  // coefficient) stay finite doubles.
  constexpr double kMax = 1e9;
  auto coefficient = [&](const char* key, double fallback) {
    return m.double_in(key, 0, kMax, fallback);
  };
  t.node_nm = m.double_in("node_nm", 1e-3, 1e6, t.node_nm);
  t.mac_area_um2 = coefficient("mac_area_um2", t.mac_area_um2);
  t.sram_area_um2_per_byte = coefficient("sram_area_um2_per_byte", t.sram_area_um2_per_byte);
  t.regfile_area_um2_per_byte =
      coefficient("regfile_area_um2_per_byte", t.regfile_area_um2_per_byte);
  t.regfile_max_bytes = m.double_in("regfile_max_bytes", 0, 1e18, t.regfile_max_bytes);
  t.sram_leakage_uw_per_kib = coefficient("sram_leakage_uw_per_kib", t.sram_leakage_uw_per_kib);
  t.bus_area_um2_per_pe_byte = coefficient("bus_area_um2_per_pe_byte", t.bus_area_um2_per_pe_byte);
  t.arbiter_area_um2_per_pe2 = coefficient("arbiter_area_um2_per_pe2", t.arbiter_area_um2_per_pe2);
  t.logic_mw_per_mm2_ghz = coefficient("logic_mw_per_mm2_ghz", t.logic_mw_per_mm2_ghz);
  m.finish();
  return t;
}

DseOptions read_dse(const std::string& file, const YAML::Node& node) {
  yaml::Map m(file, node, "dse");
  DseOptions d;
  if (auto caps = m.optional("caps")) {
    yaml::Map c(file, *caps, "caps");
    if (c.has("area_mm2")) d.max_area_mm2 = c.positive_double("area_mm2");
    if (c.has("power_mw")) d.max_power_mw = c.positive_double("power_mw");
    c.allow("area_mm2");
    c.allow("power_mw");
    c.finish();
  }
  if (auto t = m.optional("technology")) d.technology = read_technology(file, *t);
  if (auto p = m.optional("pareto")) {
    d.pareto = yaml::as_string_list(file, *p, "pareto");
    static const std::set<std::string> known{"latency", "energy", "edp", "area", "power"};
    if (d.pareto.empty())
      yaml::fail(file, *p, "pareto",
                 "expected a non-empty list of latency, energy, edp, area, power");
    for (const auto& k : d.pareto)
      if (!known.count(k))
        yaml::fail(file, *p, "pareto",
                   "expected metrics among latency, energy, edp, area, power, got '" + k + "'");
  }
  m.finish();
  return d;
}

// A workload variant with another batch size or its training graph (KAPLA
// §II-A): the file's `batch`, `training` and name are replaced before it is
// parsed, so every layer's N follows and backward layers are generated.
Network network_variant(const std::string& path, const std::vector<Assignment>& point) {
  YAML::Node root = yaml::load_file(path);
  for (const auto& a : point) {
    if (a.key == "batch")
      root["batch"] = yaml::as_positive_int(a.where.file, a.value, a.key);
    else
      root["training"] = yaml::as_bool(a.where.file, a.value, a.key);
  }
  const std::string name = root["network"] ? root["network"].as<std::string>() : "network";
  root["network"] = variant_name(name, point);
  YAML::Emitter emitter;
  emitter << root;
  return Network::parse(emitter.c_str(), path);
}

YAML::Node require_list(const std::string& file, const YAML::Node& node, const char* key) {
  if (!node.IsSequence() || node.size() == 0)
    yaml::fail(file, node, key, "expected a non-empty list");
  return node;
}

}  // namespace

Experiment load_experiment(const std::string& path) {
  return parse_experiment(yaml::read_text(path), path);
}

Experiment parse_experiment(const std::string& text, const std::string& path) {
  Experiment e;
  e.path = path;
  e.text = text;
  const YAML::Node root = yaml::load_text(text, path);
  yaml::Map top(path, root, "an experiment file");
  e.name = top.string("name");
  if (auto s = top.optional("seed")) {
    const std::int64_t v = yaml::as_int(path, *s, "seed");
    if (v < 0) yaml::fail(path, *s, "seed", "expected a non-negative integer");
    e.seed = static_cast<std::uint64_t>(v);
  }
  if (auto o = top.optional("objective")) {
    try {
      e.objective = parse_objective(yaml::as_string(path, *o, "objective"));
    } catch (const InputError& err) {
      yaml::fail(path, *o, "objective",
                 "expected latency, energy or edp, got " + yaml::describe(*o));
    }
  }
  Budget budget;
  if (auto b = top.optional("budget")) budget = read_budget(path, *b, budget);
  if (auto ms = top.optional("mapspace")) {
    e.mapspace = parse_constraint_spec(path, *ms);
    e.mapspace_key = YAML::Dump(*ms);
  }
  if (auto d = top.optional("dse")) e.dse = read_dse(path, *d);
  e.traces = top.boolean("traces", false);
  if (auto pp = top.optional("plugin_paths"))
    for (const auto& dir : yaml::as_string_list(path, *pp, "plugin_paths"))
      e.plugin_paths.push_back(resolve(path, dir));

  for (const auto& w : require_list(path, top.required("workloads"), "workloads")) {
    WorkloadUse use;
    use.where = yaml::location(path, w);
    std::vector<std::string> wanted;
    YAML::Node file_node = w;
    std::optional<Sweep> sweep;
    if (!w.IsScalar()) {
      yaml::Map m(path, w, "a workload entry");
      file_node.reset(m.required("file"));  // rebind, do not assign into w
      if (auto layers = m.optional("layers"))
        wanted = yaml::as_string_list(path, *layers, "layers");
      if (auto sw = m.optional("sweep")) sweep = read_sweep(path, *sw);
      m.finish();
    }
    use.path = resolve(path, yaml::as_string(path, file_node, "file"));
    if (const auto why = not_a_file(use.path))
      yaml::fail(path, file_node, "file", "workload file '" + use.path + "' " + *why);
    use.network = Network::load(use.path);
    std::vector<Network> variants;
    if (sweep) {
      if (!sweep->filters.empty())
        throw InputError(sweep->filters.front().where(), "filter",
                         "workload sweeps take no filter (only batch and training are swept)");
      for (const auto& point : sweep->points(path)) {
        for (const auto& a : point)
          if (a.key != "batch" && a.key != "training")
            throw InputError(a.key_where, a.key,
                             "names no workload parameter; expected batch or training");
        variants.push_back(network_variant(use.path, point));
      }
    }
    if (wanted.empty()) {
      for (size_t i = 0; i < use.network.layers().size(); ++i)
        use.layers.push_back(static_cast<int>(i));
    } else {
      for (const auto& name : wanted) {
        const int index = use.network.find_layer(name);
        if (index < 0)
          yaml::fail(path, w, "layers",
                     "network '" + use.network.name() + "' has no layer '" + name + "'");
        use.layers.push_back(index);
      }
    }
    if (variants.empty()) {
      e.workloads.push_back(std::move(use));
    } else {
      for (auto& net : variants) {
        // A training graph has more layers than the file: without a list
        // of layers, all of them (backward ones included) are run.
        std::vector<int> layers = use.layers;
        if (wanted.empty()) {
          layers.clear();
          for (size_t i = 0; i < net.layers().size(); ++i) layers.push_back(static_cast<int>(i));
        }
        WorkloadUse v{use.path, std::move(net), std::move(layers), use.where};
        e.workloads.push_back(std::move(v));
      }
    }
  }
  for (const auto& a : require_list(path, top.required("architectures"), "architectures")) {
    YAML::Node file_node = a;
    std::optional<Sweep> sweep;
    YAML::Node sweep_node;
    if (!a.IsScalar()) {
      yaml::Map m(path, a, "an architecture entry");
      file_node.reset(m.required("file"));  // rebind, do not assign into w
      if (auto sw = m.optional("sweep")) {
        sweep_node.reset(*sw);
        sweep = read_sweep(path, *sw);
      }
      m.finish();
    }
    const std::string arch_path = resolve(path, yaml::as_string(path, file_node, "file"));
    if (const auto why = not_a_file(arch_path))
      yaml::fail(path, file_node, "file", "architecture file '" + arch_path + "' " + *why);
    const Architecture base = Architecture::load(arch_path);
    std::vector<Architecture> points;
    if (!sweep) {
      points.push_back(base);
    } else {
      for (const auto& point : sweep->points(path)) {
        Architecture variant = apply_architecture(base, point, variant_name(base.name(), point));
        bool keep = true;
        for (const auto& f : sweep->filters)
          keep = keep &&
                 f.keep([&](const std::string& key) { return architecture_value(variant, key); });
        if (keep) points.push_back(std::move(variant));
      }
      if (points.empty())
        yaml::fail(path, sweep_node, "filter",
                   "the filters remove every design point of the sweep");
    }
    for (auto& arch : points) {
      for (const auto& other : e.architectures)
        if (other.arch.name() == arch.name())
          yaml::fail(path, file_node, "architectures",
                     "design point '" + arch.name() + "' appears twice");
      ++e.design_points;
      HardwareCost cost = estimate_cost(arch, e.dse.technology);
      // MAESTRO case study II: only design points within the area and power
      // caps are explored.
      if ((e.dse.max_area_mm2 && cost.area_mm2 > *e.dse.max_area_mm2) ||
          (e.dse.max_power_mw && cost.power_mw > *e.dse.max_power_mw)) {
        ++e.design_points_over_caps;
        continue;
      }
      e.architectures.push_back(
          ArchitectureUse{arch_path, std::move(arch), std::move(cost), yaml::location(path, a)});
    }
  }
  if (e.architectures.empty())
    yaml::fail(path, top.required("architectures"), "architectures",
               "all " + std::to_string(e.design_points) +
                   " design points are above the area or power caps of 'dse'");
  for (const auto& s : require_list(path, top.required("searchers"), "searchers")) {
    Budget b = budget;
    SearcherUse use;
    std::optional<Sweep> sweep;
    if (s.IsMap() && s["sweep"]) sweep = read_sweep(path, s["sweep"]);
    std::optional<YAML::Node> ms;
    static_cast<PluginUse&>(use) = read_use<PluginUse>(path, s, "a searcher entry", &b, &ms);
    use.budget = b;
    if (ms) {
      use.mapspace = parse_constraint_spec(path, *ms);
      use.mapspace_key = YAML::Dump(*ms);
    }
    if (s.IsMap() && s["operators"]) use.operators = read_operator_kinds(path, s["operators"]);
    if (!sweep) {
      e.searchers.push_back(std::move(use));
    } else {
      auto variants = searcher_variants(path, use, *sweep);
      if (variants.empty())
        yaml::fail(path, s["sweep"], "filter", "the filters remove every point of the sweep");
      for (auto& v : variants) e.searchers.push_back(std::move(v));
    }
  }
  for (const auto& c : require_list(path, top.required("costmodels"), "costmodels"))
    e.costmodels.push_back(read_use<PluginUse>(path, c, "a costmodel entry", nullptr));
  top.finish();
  // Constraints name dimensions, levels and tensors: check them against
  // every layer and architecture now, so a contradiction is bad input
  // (exit 2) and not a failed job.
  for (const auto& w : e.workloads)
    for (int layer : w.layers)
      for (const auto& a : e.architectures) {
        const Operator& op = w.network.layers()[static_cast<size_t>(layer)].op;
        resolve(e.mapspace, op, a.arch);
        for (const auto& su : e.searchers)
          if (su.mapspace && su.applies_to(op)) resolve(*su.mapspace, op, a.arch);
      }
  check_every_searcher_has_a_layer(e);
  return e;
}

void check_plugins(const Experiment& e, const PluginRegistry& registry) {
  auto check = [&](const PluginUse& use, PluginKind kind) {
    try {
      registry.resolve_params(registry.find(use.plugin, kind), use.params);
    } catch (const InputError& err) {
      throw InputError(use.where, err.key(), err.problem());
    }
  };
  for (const auto& s : e.searchers) check(s, PluginKind::kSearcher);
  for (const auto& c : e.costmodels) check(c, PluginKind::kCostModel);
}

bool SearcherUse::applies_to(const Operator& op) const {
  return operators.empty() ||
         std::find(operators.begin(), operators.end(), op.kind()) != operators.end();
}

std::vector<Job> expand_jobs(const Experiment& e) {
  std::vector<Job> jobs;
  for (size_t w = 0; w < e.workloads.size(); ++w) {
    const auto& wl = e.workloads[w];
    for (int layer : wl.layers) {
      const Operator& op = wl.network.layers()[static_cast<size_t>(layer)].op;
      std::string op_key = op.kind();
      for (const auto& d : op.dims()) op_key += ";" + d.name + "=" + std::to_string(d.bound);
      for (const auto& [k, v] : op.attributes()) op_key += ";" + k + "=" + std::to_string(v);
      for (size_t a = 0; a < e.architectures.size(); ++a)
        for (size_t s = 0; s < e.searchers.size(); ++s)
          for (size_t c = 0; c < e.costmodels.size(); ++c) {
            const auto& su = e.searchers[s];
            if (!su.applies_to(op)) continue;
            const auto& cu = e.costmodels[c];
            std::string key =
                "workload=" + wl.network.name() + "/" + op.name() + "{" + op_key + "}";
            key += "|arch=" + e.architectures[a].arch.name() + "#" +
                   hex_id(e.architectures[a].arch.content_hash());
            key += "|searcher=" + su.label + ":" + su.plugin;
            for (const auto& [k, v] : su.params) key += "," + k + "=" + v;
            key += "|budget=" + std::to_string(su.budget.max_evaluations) + "," +
                   std::to_string(su.budget.max_seconds);
            key += "|costmodel=" + cu.label + ":" + cu.plugin;
            for (const auto& [k, v] : cu.params) key += "," + k + "=" + v;
            key += "|objective=" + to_string(e.objective);
            key += "|mapspace=" + (su.mapspace ? su.mapspace_key : e.mapspace_key);
            key += "|seed=" + std::to_string(e.seed);
            Job job;
            job.index = jobs.size();
            job.id = hex_id(stable_hash(key));
            job.workload = static_cast<int>(w);
            job.layer = layer;
            job.architecture = static_cast<int>(a);
            job.searcher = static_cast<int>(s);
            job.costmodel = static_cast<int>(c);
            job.seed = stable_hash(std::to_string(e.seed) + ":" + job.id);
            jobs.push_back(job);
          }
    }
  }
  return jobs;
}

}  // namespace mapex::host
