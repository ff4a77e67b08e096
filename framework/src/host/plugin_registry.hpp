#pragma once
// Finds, loads and checks plugins (docs/design.md, Plugin ABI). Libraries are
// loaded with RTLD_NOW | RTLD_LOCAL and never unloaded: every object a
// plugin makes may outlive the registry.

#include <map>
#include <mapex/plugin.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mapex::host {

/// `subdir` (relative, e.g. "../lib/mapex/plugins") resolved against the
/// running executable's folder, lexically normal: where the build's or the
/// installation's plugins are.
std::string folder_beside_executable(std::string_view subdir);

struct LoadedPlugin {
  std::string path;
  const PluginDescriptor* descriptor = nullptr;
};

struct PluginProblem {
  std::string path;
  std::string message;
};

class PluginRegistry {
 public:
  /// The build's (or installation's) plugin directory, next to the binary,
  /// then each entry of MAPEX_PLUGIN_PATH (colon-separated).
  static std::vector<std::string> default_search_path();

  /// Loads every `*.so` directly inside each directory (missing directories
  /// are skipped). A file that fails is kept as a problem, not thrown, so
  /// one broken plugin does not hide the others; asking for its name later
  /// reports it.
  void scan(const std::vector<std::string>& directories);
  /// Loads one file; throws PluginError when it is not a usable plugin.
  void load_file(const std::string& path);

  /// The plugin called `name` of `kind`. Throws PluginError when none is
  /// (listing the known ones and the files that failed to load), when two
  /// files provide the name, or when it is of the other kind.
  const LoadedPlugin& find(const std::string& name, PluginKind kind) const;

  /// Resolves parameters against the plugin's declared ones and makes an
  /// instance. `owner_context` prefixes parameter errors (e.g. a file and line).
  std::unique_ptr<CostModel> make_costmodel(const std::string& name,
                                            const std::map<std::string, std::string>& params) const;
  std::unique_ptr<Searcher> make_searcher(const std::string& name,
                                          const std::map<std::string, std::string>& params) const;
  /// Resolved parameters of a plugin (defaults filled in).
  Params resolve_params(const LoadedPlugin& plugin,
                        const std::map<std::string, std::string>& params) const;

  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  const std::vector<PluginProblem>& problems() const { return problems_; }

 private:
  std::string describe_known(PluginKind kind) const;
  std::vector<LoadedPlugin> plugins_;
  std::vector<PluginProblem> problems_;
  std::map<std::string, std::vector<std::string>> duplicates_;  // name -> paths
};

/// A registry scanned over the default search path plus `extra` directories.
PluginRegistry load_plugins(const std::vector<std::string>& extra = {});

/// A registry holding only the plugins a command names: `NAME.so` from every
/// directory of the search path (so a name provided twice is still reported
/// as a duplicate). Loading all nine plugins costs a command about as much
/// as its own work on a one-layer file. When a name has no such file (a
/// plugin whose file is named otherwise, or a typo), it falls back to the
/// full scan, so lookups and their error messages are those of
/// `load_plugins`.
PluginRegistry load_plugins_named(const std::vector<std::string>& names,
                                  const std::vector<std::string>& extra = {});

}  // namespace mapex::host
