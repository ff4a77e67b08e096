#pragma once
/// \file
/// The part of the `mapex` command line that needs neither yaml-cpp nor TBB
/// (docs/design.md, Command line): the usage text, how a failure becomes an
/// exit status, `version`, `help` and `evaluate --maestro`. The executable
/// links only this part and libmapex; every other command is in
/// libmapex_cli.so, which it opens on demand (cli_link_dlopen.cpp), the way
/// it opens libmapex_store.so. Mapping yaml-cpp and TBB was about 0.3 ms of
/// the 2.2 ms a 66-layer `evaluate --maestro` process takes (issue 20's 5x
/// MAESTRO target needs about 2.0 ms).

#include <functional>
#include <map>
#include <mapex/error.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

/// Bad usage: the message goes out as it is, with exit status 2.
class UsageError : public InputError {
 public:
  explicit UsageError(const std::string& message) : InputError(message) {}
};

/// The usage text of `mapex` (all commands), printed after a usage error.
const char* cli_usage();

/// `--param key=value` items as a map; a malformed item is a UsageError.
std::map<std::string, std::string> parse_params(const std::vector<std::string>& items);

/// The options of `mapex evaluate`, parsed once by the executable (for
/// `--maestro`) and again by the full CLI (for the YAML form).
struct EvaluateOptions {
  std::string workload, arch_path, mapping_path, directives_path, layer, costmodel, format, maestro,
      hw;
  std::vector<std::string> params;
  bool help = false;
  bool maestro_compat = false;
  bool costmodel_defaulted = true;
  std::string help_text;
};

/// Parses `mapex evaluate`'s arguments; bad usage throws InputError. In
/// libmapex_cli.so (evaluate_options.cpp), with Boost.ProgramOptions.
EvaluateOptions parse_evaluate_options(const std::vector<std::string>& args);

/// The common `evaluate --maestro F --hw H [--format X] [--costmodel C]
/// [--param k=v]... [--maestro-compat]` read without Boost.ProgramOptions,
/// whose option table and parser took 160k of the 4.2M instructions of a
/// 66-layer run (issue 20). Only exact long options, each once (--param
/// any number of times), as `--name value` or `--name=value` with a
/// non-empty value that does not start with '-'. nullopt for anything else
/// (help, abbreviations, repeats, unknown or positional arguments), which
/// parse_evaluate_options hands to the full parser and its messages; where
/// this accepts, the result is the full parser's.
std::optional<EvaluateOptions> parse_plain_maestro_options(const std::vector<std::string>& args);

/// parse_evaluate_options without the plain reader: Boost.ProgramOptions
/// for every argument list (what the plain reader must agree with).
EvaluateOptions parse_evaluate_options_in_full(const std::vector<std::string>& args);

/// Runs `evaluate --help` or `evaluate --maestro F --hw H`; nullopt for the
/// YAML form, which the full CLI runs.
std::optional<int> evaluate_without_yaml(const EvaluateOptions& options, std::ostream& out);

/// Runs what needs no yaml-cpp or TBB: no command (a UsageError), version,
/// help and `evaluate --maestro` in the plain form. nullopt: the command is
/// one of the others, or an evaluate line the plain reader declines (the
/// full command line parses it with Boost.ProgramOptions, which the
/// executable does not carry).
std::optional<int> run_light_command(int argc, const char* const* argv, std::ostream& out);

/// Runs `body` and turns an exception into "mapex: error: ..." on `err` and
/// exit status 2 (InputError) or 1 (anything else).
int run_guarded(std::ostream& err, const std::function<int()>& body);

/// The full command line (libmapex_cli.so in the executable): every command.
int call_full_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace mapex::host

/// The full CLI library's entry point, looked up by name after dlopen.
#define MAPEX_CLI_ENTRY_NAME "mapex_cli_main"
extern "C" int mapex_cli_main(int argc, const char* const* argv, std::ostream& out,
                              std::ostream& err);
