#pragma once
// Experiment files (docs/design.md, The flow of a job): workloads x architectures x
// searchers x cost models, a seed, an objective and a budget, expanded into
// jobs with stable ids.

#include <cstdint>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/constraints.hpp>
#include <mapex/error.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/network.hpp>
#include <mapex/search.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/hardware_cost.hpp"

namespace mapex::host {

class PluginRegistry;

struct PluginUse {
  std::string plugin;  ///< plugin name
  std::string label;   ///< name in results; defaults to the plugin name
  std::map<std::string, std::string> params;
  SourceLocation where;  ///< of the entry, for errors found later
};

struct SearcherUse : PluginUse {
  Budget budget;
  /// The searcher's own `mapspace:` block, replacing the experiment's (so
  /// one experiment compares mapping styles side by side).
  std::optional<ConstraintSpec> mapspace;
  std::string mapspace_key;  ///< the block's text, for job ids
  /// Operator kinds the searcher runs on (`operators:`); empty: every layer.
  /// A searcher built for one operator (FLASH searches GEMMs, §4) joins an
  /// experiment of mixed layers without a failed job per other layer.
  std::vector<std::string> operators;
  bool applies_to(const Operator& op) const;
};

struct WorkloadUse {
  std::string path;
  Network network;          ///< named "<network>[batch=4]" for a swept variant
  std::vector<int> layers;  ///< indices into network.layers()
  SourceLocation where;     ///< of the entry, for errors found later
};

/// One design point: an architecture file, possibly with swept parameters.
struct ArchitectureUse {
  std::string path;
  Architecture arch;     ///< named "<base>[key=value,...]" for a swept variant
  HardwareCost cost;     ///< area and power (DSE)
  SourceLocation where;  ///< of the entry, for errors found later
};

/// Hardware DSE settings (`dse:`): the building-block constants, caps on
/// area and power (design points above them are not run), and the metrics
/// whose Pareto set is marked in the results.
struct DseOptions {
  Technology technology;
  std::optional<double> max_area_mm2;
  std::optional<double> max_power_mw;
  /// Minimised together: latency (seconds), energy, edp, area, power.
  std::vector<std::string> pareto{"latency", "energy"};
};

struct Experiment {
  std::string path;
  std::string text;  ///< the file as read, stored with the results
  std::string name;
  std::uint64_t seed = 1;
  Objective objective = Objective::kLatency;
  ConstraintSpec mapspace;
  std::string mapspace_key;  ///< the `mapspace:` block's text, for job ids
  std::vector<WorkloadUse> workloads;
  std::vector<ArchitectureUse> architectures;
  std::vector<SearcherUse> searchers;
  std::vector<PluginUse> costmodels;
  std::vector<std::string> plugin_paths;  ///< absolute
  DseOptions dse;
  bool traces = false;                      ///< store each job's convergence trace
  std::size_t design_points = 0;            ///< architecture variants before the caps
  std::size_t design_points_over_caps = 0;  ///< of which above a cap (not run)
};

/// Loads and validates an experiment file; referenced workload and
/// architecture files are resolved relative to it and loaded too.
Experiment load_experiment(const std::string& path);
Experiment parse_experiment(const std::string& text, const std::string& path);

/// Checks every plugin name and parameter against the registry, so that bad
/// input fails before any job runs. Errors carry the entry's location.
void check_plugins(const Experiment& experiment, const PluginRegistry& registry);

struct Job {
  std::size_t index = 0;  ///< position in the expansion
  std::string id;         ///< 16 hex digits, a hash of what defines the job
  int workload = 0;
  int layer = 0;  ///< index into the network's layers
  int architecture = 0;
  int searcher = 0;
  int costmodel = 0;
  std::uint64_t seed = 0;  ///< derived from the experiment seed and the id
};

/// workloads x layers x architectures x searchers x cost models, in that
/// nesting order.
std::vector<Job> expand_jobs(const Experiment& experiment);

/// Stable 64-bit FNV-1a hash of a string.
std::uint64_t stable_hash(const std::string& text);
std::string hex_id(std::uint64_t value);

}  // namespace mapex::host
