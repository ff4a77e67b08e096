#pragma once
// Experiment files (DESIGN.md, Experiment): workloads x architectures x
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
};

struct WorkloadUse {
  std::string path;
  Network network;
  std::vector<int> layers;  ///< indices into network.layers()
};

struct ArchitectureUse {
  std::string path;
  Architecture arch;
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
