#include "host/cli_light.hpp"

#include <mapex/plugin.hpp>
#include <mapex/version.hpp>
#include <string_view>

#include "host/mdc_commands.hpp"

namespace mapex::host {

namespace {

const char* const kUsageText =
    "usage: mapex <command> [options]\n"
    "\n"
    "commands:\n"
    "  run EXPERIMENT.yaml [-o results.h5] [-j N] [--resume] [--shard i/N] [--quiet]\n"
    "      (under mpirun: ranks share the jobs, rank 0 writes the file)\n"
    "  merge RESULTS.h5 ... -o ALL.h5\n"
    "  evaluate --workload W --arch A --mapping M|--directives D [--layer L]\n"
    "           [--costmodel roofline]\n"
    "           [--param k=v ...] [--format table|csv|json]\n"
    "  evaluate --maestro MAPPING.m --hw HW.m [--costmodel mdc] [--format table|csv|json]\n"
    "           [--maestro-compat]\n"
    "  check    --workload W [--layer L]\n"
    "  import   nn_dataflow RESULT.json --workload W --arch A -o DIR\n"
    "  import   timeloop FILE.yaml [FILE.yaml ...] -o DIR\n"
    "  export   timeloop --workload W --arch A --mapping M [--layer L] [-o FILE]\n"
    "  import   onnx MODEL.onnx -o NET.yaml [--batch N]\n"
    "  search   --workload W --arch A --searcher S [--layer L] [--param k=v ...]\n"
    "           [--costmodel roofline] [--objective latency|energy|edp] [--seed N]\n"
    "           [--max-evaluations N] [--max-seconds S] [-j N] [--format table|json]\n"
    "  mapspace --workload W --arch A [--layer L]\n"
    "  schedule --workload NET --arch A [--k-s 4] [--max-segment-layers 4]\n"
    "           [--objective energy|latency] [--costmodel tensor_centric] [--format table|json]\n"
    "           [--inter-layer pruned|exhaustive] [--allocation-probability P]\n"
    "           [--allocation-keep-one] [--no-filter-pinning]\n"
    "           [--intra-searcher S] [--intra-param k=v ...] [--intra-max-evaluations N]\n"
    "           [--intra-max-seconds S] [--no-layer-by-layer] [--no-calibration]\n"
    "           [--seed N] [-j N] [-o SCHEDULE.h5]\n"
    "  directives --workload W --arch A [--layer L] --mapping M|--directives D\n"
    "      (KAPLA tensor-centric directives from a mapping, or the mapping they give)\n"
    "  plugins\n"
    "  report   RESULTS.h5 [--format markdown|csv] [--table all|jobs|summary|dse]\n"
    "           [--baseline searcher=NAME|costmodel=NAME|architecture=NAME]\n"
    "  version\n"
    "\n"
    "Run `mapex <command> --help` for the options of a command.\n";
}  // namespace

const char* cli_usage() { return kUsageText; }

std::map<std::string, std::string> parse_params(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--param expects key=value, got '" + item + "'");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}
namespace {

/// The option a plain argument list may name, and where its value goes.
std::string* plain_option_value(EvaluateOptions& o, std::string_view name) {
  if (name == "maestro") return &o.maestro;
  if (name == "hw") return &o.hw;
  if (name == "format") return &o.format;
  if (name == "costmodel") return &o.costmodel;
  return nullptr;
}

}  // namespace

std::optional<EvaluateOptions> parse_plain_maestro_options(const std::vector<std::string>& args) {
  EvaluateOptions o;
  o.format = "table";
  o.costmodel = "roofline";
  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") return std::nullopt;
    std::string_view name = arg.substr(2);
    const auto eq = name.find('=');
    if (eq != std::string_view::npos) name = name.substr(0, eq);
    if (name != "param") {
      for (const auto& earlier : seen)
        if (earlier == name) return std::nullopt;
      seen.push_back(name);
    }
    if (name == "maestro-compat") {
      if (eq != std::string_view::npos) return std::nullopt;
      o.maestro_compat = true;
      continue;
    }
    std::string* value = plain_option_value(o, name);
    if (value == nullptr && name != "param") return std::nullopt;
    std::string_view text;
    if (eq != std::string_view::npos) {
      text = arg.substr(2 + eq + 1);
    } else {
      if (i + 1 == args.size()) return std::nullopt;
      text = args[++i];
    }
    if (text.empty() || text.front() == '-') return std::nullopt;
    if (value == nullptr)
      o.params.emplace_back(text);
    else
      value->assign(text);
    if (name == "costmodel") o.costmodel_defaulted = false;
  }
  if (o.maestro.empty() || o.hw.empty()) return std::nullopt;
  return o;
}

std::optional<int> evaluate_without_yaml(const EvaluateOptions& o, std::ostream& out) {
  if (o.help) {
    out << o.help_text;
    return kExitOk;
  }
  if (o.maestro.empty() && o.hw.empty()) return std::nullopt;
  if (o.maestro.empty() || o.hw.empty()) throw UsageError("--maestro and --hw go together");
  auto model_params = parse_params(o.params);
  if (o.maestro_compat) model_params["maestro_compat"] = "true";
  return evaluate_maestro(o.maestro, o.hw, o.costmodel_defaulted ? "mdc" : o.costmodel, o.format,
                          model_params, out);
}

std::optional<int> run_light_command(int argc, const char* const* argv, std::ostream& out) {
  if (argc < 2) throw UsageError(std::string("no command given\n") + kUsageText);
  const std::string command = argv[1];
  // Only the plain form: anything else (help, the YAML form, a line the
  // plain reader declines) goes to the full command line in libmapex_cli.so,
  // so that the executable carries no Boost.ProgramOptions.
  if (command == "evaluate") {
    const auto plain = parse_plain_maestro_options({argv + 2, argv + argc});
    if (!plain) return std::nullopt;
    return evaluate_without_yaml(*plain, out);
  }
  if (command == "version" || command == "--version") {
    out << "mapex " << version() << " (plugin ABI " << kPluginAbiVersion << ")\n";
    return kExitOk;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    out << kUsageText;
    return kExitOk;
  }
  return std::nullopt;
}

int run_guarded(std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    err << "mapex: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "mapex: error: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace mapex::host
