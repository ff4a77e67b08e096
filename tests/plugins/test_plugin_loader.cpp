// The plugin loader against real and deliberately broken shared objects:
// ABI mismatch, missing entry point, duplicate names, unknown names and
// parameters all give clear errors; the good plugins still load.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "host/plugin_registry.hpp"

namespace mapex::host {
namespace {

const std::string kDir = MAPEX_TEST_PLUGIN_DIR;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const PluginError& e) {
    return e.what();
  } catch (const InputError& e) {
    return std::string("InputError: ") + e.what();
  }
  return "no error";
}

TEST(PluginLoader, FindsTheBuiltInPlugins) {
  const PluginRegistry r = load_plugins();
  EXPECT_TRUE(r.problems().empty());
  for (const auto& [name, kind] : {std::pair{"roofline", PluginKind::kCostModel},
                                   {"exhaustive", PluginKind::kSearcher},
                                   {"random", PluginKind::kSearcher}}) {
    const LoadedPlugin& p = r.find(name, kind);
    EXPECT_EQ(p.descriptor->abi_version, kPluginAbiVersion);
    EXPECT_NE(p.path.find(std::string(name) + ".so"), std::string::npos);
  }
}

TEST(PluginLoader, FolderBesideTheExecutableIsTheLexicallyNormalJoin) {
  // The plain string form must name the same folder as the general
  // std::filesystem form for every shape of subfolder, the unusual ones
  // (dots inside, a trailing slash, climbing past the root) included.
  char link[4096];
  const ssize_t n = ::readlink("/proc/self/exe", link, sizeof link);
  ASSERT_GT(n, 0);
  const std::filesystem::path exe_dir =
      std::filesystem::path(std::string(link, static_cast<std::size_t>(n))).parent_path();
  for (const char* sub : {"../lib/mapex/plugins", "plugins", "../../x/y", "../lib/./mapex",
                          "../x/../y", "a//b", "../lib/", "x/..", "../../../../../../../../z"}) {
    SCOPED_TRACE(sub);
    EXPECT_EQ(folder_beside_executable(sub), (exe_dir / sub).lexically_normal().string());
  }
  EXPECT_EQ(folder_beside_executable("../lib/mapex/plugins"),
            (exe_dir.parent_path() / "lib" / "mapex" / "plugins").string());
}

TEST(PluginLoader, RefusesAnotherAbiNamingBothVersions) {
  PluginRegistry r;
  r.scan({kDir + "/broken_abi"});
  ASSERT_EQ(r.problems().size(), 1u);
  const std::string& message = r.problems()[0].message;
  EXPECT_NE(message.find("ABI " + std::to_string(kPluginAbiVersion + 100)), std::string::npos)
      << message;
  EXPECT_NE(message.find("uses ABI " + std::to_string(kPluginAbiVersion)), std::string::npos)
      << message;
  EXPECT_TRUE(r.plugins().empty());
  // Asking for it by name shows why it is missing.
  const std::string lookup = error_of([&] { r.find("broken_abi", PluginKind::kSearcher); });
  EXPECT_NE(lookup.find("unknown searcher 'broken_abi'"), std::string::npos) << lookup;
  EXPECT_NE(lookup.find("ABI"), std::string::npos) << lookup;
  // Loading the file directly throws the same reason.
  const std::string direct = error_of([&] { r.load_file(kDir + "/broken_abi/broken_abi.so"); });
  EXPECT_NE(direct.find("rebuild the plugin"), std::string::npos) << direct;
}

TEST(PluginLoader, RefusesASharedObjectWithoutEntryPoint) {
  PluginRegistry r;
  const std::string message = error_of([&] { r.load_file(kDir + "/no_entry/no_entry.so"); });
  EXPECT_NE(message.find("does not export the entry point 'mapex_plugin_descriptor'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no_entry.so"), std::string::npos) << message;
}

TEST(PluginLoader, DuplicateNamesNameBothFiles) {
  PluginRegistry r = load_plugins({kDir + "/duplicate"});
  const std::string message = error_of([&] { r.find("random", PluginKind::kSearcher); });
  EXPECT_NE(message.find("more than one file"), std::string::npos) << message;
  EXPECT_NE(message.find("random.so"), std::string::npos) << message;
  EXPECT_NE(message.find("duplicate_random.so"), std::string::npos) << message;
  // Other names are unaffected.
  EXPECT_NO_THROW(r.find("exhaustive", PluginKind::kSearcher));
}

// A command loads only the plugins it names (load_plugins_named): the
// file NAME.so of each directory, nothing else.
TEST(PluginLoader, NamedLoadingLoadsOnlyTheNamedPlugins) {
  const PluginRegistry r = load_plugins_named({"roofline", "exhaustive"});
  ASSERT_EQ(r.plugins().size(), 2u);
  EXPECT_NO_THROW(r.find("roofline", PluginKind::kCostModel));
  EXPECT_NO_THROW(r.find("exhaustive", PluginKind::kSearcher));
  EXPECT_TRUE(r.problems().empty());
}

// A name without a file of that name (a typo here) falls back to the full
// scan: the error lists every known plugin, as load_plugins' does.
TEST(PluginLoader, NamedLoadingFallsBackToTheFullScan) {
  const PluginRegistry named = load_plugins_named({"tabu_search"});
  const PluginRegistry all = load_plugins();
  EXPECT_EQ(named.plugins().size(), all.plugins().size());
  const std::string message = error_of([&] { named.find("tabu_search", PluginKind::kSearcher); });
  EXPECT_NE(message.find("unknown searcher 'tabu_search'"), std::string::npos) << message;
  EXPECT_NE(message.find("exhaustive"), std::string::npos) << message;
}

// NAME.so in two directories of the path is still a duplicate.
TEST(PluginLoader, NamedLoadingReportsTheSameNameInTwoDirectories) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mapex_named_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string original = load_plugins_named({"roofline"}).plugins().front().path;
  std::filesystem::copy_file(original, dir / "roofline.so",
                             std::filesystem::copy_options::overwrite_existing);
  const PluginRegistry r = load_plugins_named({"roofline"}, {dir.string()});
  const std::string message = error_of([&] { r.find("roofline", PluginKind::kCostModel); });
  std::filesystem::remove_all(dir);
  EXPECT_NE(message.find("more than one file"), std::string::npos) << message;
}

TEST(PluginLoader, UnknownNameListsKnownOnes) {
  const PluginRegistry r = load_plugins();
  const std::string message = error_of([&] { r.find("tabu_search", PluginKind::kSearcher); });
  EXPECT_NE(message.find("unknown searcher 'tabu_search'"), std::string::npos) << message;
  EXPECT_NE(message.find("exhaustive"), std::string::npos) << message;
  const std::string kind = error_of([&] { r.find("roofline", PluginKind::kSearcher); });
  EXPECT_NE(kind.find("is a costmodel, expected a searcher"), std::string::npos) << kind;
}

TEST(PluginLoader, ParametersAreChecked) {
  const PluginRegistry r = load_plugins();
  const std::string unknown = error_of([&] { r.make_searcher("random", {{"temperature", "3"}}); });
  EXPECT_NE(unknown.find("key 'temperature'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("victory_condition"), std::string::npos) << unknown;
  const std::string wrong = error_of([&] { r.make_searcher("random", {{"batch_size", "many"}}); });
  EXPECT_NE(wrong.find("expects int, got 'many'"), std::string::npos) << wrong;
  const std::string range = error_of([&] { r.make_searcher("random", {{"batch_size", "0"}}); });
  EXPECT_NE(range.find("at least 1"), std::string::npos) << range;
  EXPECT_NE(r.make_costmodel("roofline", {{"check_capacity", "false"}}), nullptr);
}

TEST(PluginLoader, MissingFileIsAnError) {
  PluginRegistry r;
  const std::string message = error_of([&] { r.load_file(kDir + "/nowhere/x.so"); });
  EXPECT_NE(message.find("no such plugin file"), std::string::npos) << message;
}

}  // namespace
}  // namespace mapex::host
