// `mapex evaluate`'s options through Boost.ProgramOptions, in libmapex_cli.so
// only (cli_light.hpp): the executable reads the plain `evaluate --maestro`
// form itself and hands every other evaluate line to the full command line.

#include <boost/program_options.hpp>

#include "host/cli_args.hpp"
#include "host/cli_light.hpp"

namespace mapex::host {
namespace po = boost::program_options;

EvaluateOptions parse_evaluate_options(const std::vector<std::string>& args) {
  if (auto plain = parse_plain_maestro_options(args)) return *std::move(plain);
  return parse_evaluate_options_in_full(args);
}

EvaluateOptions parse_evaluate_options_in_full(const std::vector<std::string>& args) {
  EvaluateOptions o;
  po::options_description desc("mapex evaluate");
  desc.add_options()("help,h", "show this help")("workload", po::value(&o.workload),
                                                 "workload (network or operator) YAML")(
      "layer", po::value(&o.layer), "layer of the workload (needed when it has several)")(
      "arch", po::value(&o.arch_path), "architecture YAML")("mapping", po::value(&o.mapping_path),
                                                            "mapping YAML")(
      "directives", po::value(&o.directives_path),
      "KAPLA tensor-centric directives of the layer (instead of --mapping)")(
      "maestro", po::value(&o.maestro), "MAESTRO mapping file (instead of --workload/--mapping)")(
      "hw", po::value(&o.hw), "MAESTRO hardware file (with --maestro)")(
      "costmodel", po::value(&o.costmodel)->default_value("roofline"), "cost model plugin")(
      "param", po::value(&o.params)->composing(), "cost model parameter key=value (repeatable)")(
      "format", po::value(&o.format)->default_value("table"), "table, csv or json")(
      "maestro-compat",
      "with --maestro: reproduce MAESTRO's own numbers (its iteration space, including its "
      "miscounts on strided layers) instead of the true ones");
  const po::positional_options_description none;
  const auto vm = parse_command_line(desc, &none, args, "\n" + std::string(cli_usage()));
  o.help = vm.count("help") > 0;
  if (o.help) o.help_text = options_text(desc);
  o.maestro_compat = vm.count("maestro-compat") > 0;
  o.costmodel_defaulted = vm["costmodel"].defaulted();
  return o;
}

}  // namespace mapex::host
