#include "host/plugin_registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>

namespace mapex::host {
namespace fs = std::filesystem;

namespace {

// Every library ever loaded stays loaded until the process ends (docs/style.md:
// Boost.DLL's list of what breaks after unloading). Deliberately leaked.
std::vector<boost::dll::shared_library>& loaded_libraries() {
  static auto* libraries = new std::vector<boost::dll::shared_library>();
  return *libraries;
}
std::mutex& loaded_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

const PluginDescriptor* open_plugin(const std::string& path) {
  boost::dll::shared_library lib;
  try {
    lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError(path + ": cannot load shared object: " + e.what());
  }
  if (!lib.has(MAPEX_PLUGIN_ENTRY_NAME))
    throw PluginError(path + ": not a mapex plugin: it does not export the entry point '" +
                      std::string(MAPEX_PLUGIN_ENTRY_NAME) + "' (define it with MAPEX_PLUGIN)");
  auto& entry = lib.get<mapex_plugin_entry_fn>(MAPEX_PLUGIN_ENTRY_NAME);
  const PluginDescriptor* d = entry();
  if (!d) throw PluginError(path + ": the entry point returned no descriptor");
  // Only the first member is read before the version check.
  if (d->abi_version != kPluginAbiVersion)
    throw PluginError(path + ": plugin was built for mapex plugin ABI " +
                      std::to_string(d->abi_version) + ", this mapex uses ABI " +
                      std::to_string(kPluginAbiVersion) + "; rebuild the plugin");
  const std::string host_build = MAPEX_BUILD_ID;
  if (!d->build_id || host_build != d->build_id)
    throw PluginError(path + ": plugin was built with '" +
                      std::string(d->build_id ? d->build_id : "?") + "', this mapex with '" +
                      host_build + "'; rebuild the plugin with the same toolchain");
  if (!d->name || !*d->name) throw PluginError(path + ": the descriptor has no name");
  const bool costmodel =
      d->kind == PluginKind::kCostModel && d->make_costmodel && !d->make_searcher;
  const bool searcher = d->kind == PluginKind::kSearcher && d->make_searcher && !d->make_costmodel;
  if (!costmodel && !searcher)
    throw PluginError(path + ": plugin '" + d->name +
                      "' has a kind that does not match its factory");
  for (std::size_t i = 0; i < d->num_params; ++i)
    if (!d->params || !d->params[i].name || !d->params[i].default_value)
      throw PluginError(path + ": plugin '" + d->name +
                        "' declares a parameter without a name or default");
  std::lock_guard<std::mutex> lock(loaded_mutex());
  loaded_libraries().push_back(std::move(lib));
  return d;
}

}  // namespace

// Every command pays for this before its first plugin: the plain
// string form below (one readlink, leading "../" climbed by hand) costs a
// few hundred instructions where building it with std::filesystem paths
// cost about 35 k of a 3.9 M-instruction `evaluate --maestro` run. Paths it
// does not expect (no absolute link target, dots inside `subdir`) take the
// general form.
std::string folder_beside_executable(const std::string_view subdir) {
  char link[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", link, sizeof link);
  if (n > 0 && n < static_cast<ssize_t>(sizeof link) && link[0] == '/') {
    std::string dir(link, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/'));
    std::string_view rest = subdir;
    while (rest.starts_with("../") && dir.rfind('/') != std::string::npos && dir.rfind('/') > 0) {
      dir.resize(dir.rfind('/'));
      rest.remove_prefix(3);
    }
    if (!rest.empty() && rest.find("./") == std::string_view::npos &&
        rest.find("//") == std::string_view::npos && !rest.ends_with(".") && !rest.ends_with("/"))
      return dir + '/' + std::string(rest);
  }
  const fs::path exe_dir = boost::dll::program_location().parent_path();
  return (exe_dir / fs::path(subdir)).lexically_normal().string();
}

std::vector<std::string> PluginRegistry::default_search_path() {
  std::vector<std::string> dirs;
  dirs.push_back(folder_beside_executable(MAPEX_DEFAULT_PLUGIN_SUBDIR));
  if (const char* env = std::getenv("MAPEX_PLUGIN_PATH")) {
    std::string all = env;
    size_t start = 0;
    while (start <= all.size()) {
      const size_t end = std::min(all.find(':', start), all.size());
      if (end > start) dirs.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  return dirs;
}

void PluginRegistry::scan(const std::vector<std::string>& directories) {
  for (const auto& dir : directories) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".so" && fs::is_regular_file(it->path(), ec))
        files.push_back(it->path().string());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      try {
        load_file(file);
      } catch (const PluginError& e) {
        problems_.push_back(PluginProblem{file, e.what()});
      }
    }
  }
}

void PluginRegistry::load_file(const std::string& path) {
  // realpath(3) rather than fs::canonical: the same resolved name for the
  // same file reached twice, at a fraction of the cost on every start.
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) throw PluginError(path + ": no such plugin file");
  const std::string canonical = resolved;
  std::free(resolved);
  for (const auto& p : plugins_)
    if (p.path == canonical) return;  // the same file reached twice
  const PluginDescriptor* d = open_plugin(canonical);
  for (const auto& p : plugins_)
    if (std::strcmp(p.descriptor->name, d->name) == 0) {
      auto& paths = duplicates_[d->name];
      if (paths.empty()) paths.push_back(p.path);
      paths.push_back(canonical);
      return;
    }
  plugins_.push_back(LoadedPlugin{canonical, d});
}

std::string PluginRegistry::describe_known(PluginKind kind) const {
  std::string known;
  for (const auto& p : plugins_)
    if (p.descriptor->kind == kind)
      known += (known.empty() ? "" : ", ") + std::string(p.descriptor->name);
  std::string out = known.empty() ? "none found" : "known: " + known;
  for (const auto& problem : problems_) out += "; could not load " + problem.message;
  return out;
}

const LoadedPlugin& PluginRegistry::find(const std::string& name, PluginKind kind) const {
  if (auto it = duplicates_.find(name); it != duplicates_.end()) {
    std::string paths;
    for (const auto& p : it->second) paths += (paths.empty() ? "" : " and ") + p;
    throw PluginError("plugin '" + name + "' is provided by more than one file: " + paths +
                      "; remove one or change MAPEX_PLUGIN_PATH");
  }
  for (const auto& p : plugins_) {
    if (name != p.descriptor->name) continue;
    if (p.descriptor->kind != kind)
      throw PluginError("plugin '" + name + "' is a " + to_string(p.descriptor->kind) +
                        ", expected a " + to_string(kind));
    return p;
  }
  throw PluginError("unknown " + to_string(kind) + " '" + name + "' (" + describe_known(kind) +
                    ")");
}

Params PluginRegistry::resolve_params(const LoadedPlugin& plugin,
                                      const std::map<std::string, std::string>& params) const {
  const PluginDescriptor* d = plugin.descriptor;
  return Params::resolve(d->params, d->num_params, params,
                         to_string(d->kind) + " '" + std::string(d->name) + "'");
}

std::unique_ptr<CostModel> PluginRegistry::make_costmodel(
    const std::string& name, const std::map<std::string, std::string>& params) const {
  const LoadedPlugin& p = find(name, PluginKind::kCostModel);
  const Params resolved = resolve_params(p, params);
  std::unique_ptr<CostModel> model(p.descriptor->make_costmodel(resolved));
  if (!model) throw PluginError("costmodel '" + name + "' returned no object");
  return model;
}

std::unique_ptr<Searcher> PluginRegistry::make_searcher(
    const std::string& name, const std::map<std::string, std::string>& params) const {
  const LoadedPlugin& p = find(name, PluginKind::kSearcher);
  const Params resolved = resolve_params(p, params);
  std::unique_ptr<Searcher> searcher(p.descriptor->make_searcher(resolved));
  if (!searcher) throw PluginError("searcher '" + name + "' returned no object");
  return searcher;
}

PluginRegistry load_plugins(const std::vector<std::string>& extra) {
  PluginRegistry registry;
  auto dirs = PluginRegistry::default_search_path();
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  registry.scan(dirs);
  return registry;
}

PluginRegistry load_plugins_named(const std::vector<std::string>& names,
                                  const std::vector<std::string>& extra) {
  PluginRegistry registry;
  auto dirs = PluginRegistry::default_search_path();
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  bool all_found = true;
  for (const auto& name : names) {
    bool found = false;
    for (const auto& dir : dirs) {
      const fs::path file = fs::path(dir) / (name + ".so");
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) continue;
      try {
        registry.load_file(file.string());
      } catch (const PluginError&) {
        continue;  // the full scan below records it as a problem
      }
      for (const auto& p : registry.plugins()) found = found || name == p.descriptor->name;
    }
    all_found = all_found && found;
  }
  if (!all_found) registry.scan(dirs);
  return registry;
}

}  // namespace mapex::host
