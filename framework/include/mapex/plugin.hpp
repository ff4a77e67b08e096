#pragma once
/// \file
/// The plugin ABI (docs/design.md, Plugin ABI; docs/style.md, Plugin entry point).
///
/// A plugin is a shared object exporting one C-linkage function,
/// `mapex_plugin_descriptor`, that returns a pointer to a static
/// PluginDescriptor. The host reads `abi_version` first and refuses any
/// other value before touching the rest; it then compares `build_id`,
/// because the factories hand C++ objects across the boundary and so need
/// the same compiler, standard library ABI and language standard. Libraries
/// are loaded with RTLD_NOW | RTLD_LOCAL and never unloaded, so every object
/// a plugin makes may outlive its last use by the host.
///
/// Writing a plugin: see plugins/README.md and plugins/templates/.

#include <boost/config.hpp>
#include <cstddef>
#include <cstdint>
#include <mapex/costmodel.hpp>
#include <mapex/error.hpp>
#include <mapex/params.hpp>
#include <mapex/search.hpp>

namespace mapex {

/// Bumped whenever a header under mapex/ changes a type a plugin sees.
inline constexpr std::uint32_t kPluginAbiVersion = 13;

#define MAPEX_DETAIL_STR2(x) #x
#define MAPEX_DETAIL_STR(x) MAPEX_DETAIL_STR2(x)
#if defined(__clang__)
#define MAPEX_DETAIL_COMPILER "clang-" __clang_version__
#elif defined(__GNUC__)
#define MAPEX_DETAIL_COMPILER "gcc-" MAPEX_DETAIL_STR(__GNUC__) "." MAPEX_DETAIL_STR(__GNUC_MINOR__)
#else
#define MAPEX_DETAIL_COMPILER "unknown"
#endif
/// Compiler, C++ standard library ABI and language standard of the
/// translation unit that expands it: the plugin's own when used in a
/// descriptor, the host's when used in the host.
#define MAPEX_BUILD_ID  \
  MAPEX_DETAIL_COMPILER \
  ";cxx11abi=" MAPEX_DETAIL_STR(_GLIBCXX_USE_CXX11_ABI) ";std=" MAPEX_DETAIL_STR(__cplusplus)

enum class PluginKind : std::uint32_t { kCostModel = 1, kSearcher = 2 };
std::string to_string(PluginKind kind);

/// The descriptor a plugin exports. `abi_version` must stay the first
/// member in every ABI version.
struct PluginDescriptor {
  std::uint32_t abi_version;
  const char* build_id;
  PluginKind kind;
  const char* name;     ///< unique across all loaded plugins, e.g. "roofline"
  const char* version;  ///< the plugin's own version, e.g. "1.0.0"
  const char* summary;  ///< one line: what it models or searches, and the paper
  const ParamSpec* params;
  std::size_t num_params;
  /// Exactly one of the two factories is set, matching `kind`. The host
  /// owns the returned object (deleted through its virtual destructor).
  CostModel* (*make_costmodel)(const Params& params);
  Searcher* (*make_searcher)(const Params& params);
};

}  // namespace mapex

/// Name of the exported entry point.
#define MAPEX_PLUGIN_ENTRY_NAME "mapex_plugin_descriptor"
using mapex_plugin_entry_fn = const mapex::PluginDescriptor*();

/// Defines the entry point of a plugin returning `descriptor` (an object of
/// static storage duration).
#define MAPEX_PLUGIN(descriptor)                                                              \
  extern "C" BOOST_SYMBOL_EXPORT const ::mapex::PluginDescriptor* mapex_plugin_descriptor();  \
  extern "C" BOOST_SYMBOL_EXPORT const ::mapex::PluginDescriptor* mapex_plugin_descriptor() { \
    return &(descriptor);                                                                     \
  }
