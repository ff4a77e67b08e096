// `mapex check` (Marvel's conformability rules), apart from `evaluate
// --maestro` in mdc_commands.cpp: it reads a YAML workload, and the
// executable links only what needs no yaml-cpp (cli_light.hpp).

#include <boost/program_options.hpp>
#include <filesystem>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>

#include "host/cli_args.hpp"
#include "host/mdc_commands.hpp"

namespace mapex::host {

int cmd_check(const std::vector<std::string>& args, std::ostream& out) {
  namespace po = boost::program_options;
  po::options_description desc("mapex check");
  std::string workload, layer;
  desc.add_options()("help,h", "show this help")("workload", po::value(&workload),
                                                 "workload (network or operator) YAML")(
      "layer", po::value(&layer), "check only this layer");
  const po::variables_map vm = parse_command_line(desc, nullptr, args, "");
  if (vm.count("help")) {
    out << desc;
    return 0;
  }
  if (workload.empty()) throw InputError("mapex check: --workload is required");
  if (!std::filesystem::exists(workload))
    throw InputError(SourceLocation{workload, 0, 0}, "", "workload file does not exist");
  const Network net = Network::load(workload);
  if (!layer.empty() && net.find_layer(layer) < 0)
    throw InputError(SourceLocation{workload, 0, 0}, "layer",
                     "no layer '" + layer + "' in network '" + net.name() + "'");
  int broken = 0;
  for (const auto& l : net.layers()) {
    if (!layer.empty() && l.op.name() != layer) continue;
    const auto issues = mdc::check_conformability(l.op);
    if (issues.empty()) {
      out << l.op.name() << ": conformable (Marvel §3, rules 1-4)\n";
      continue;
    }
    ++broken;
    out << l.op.name() << ": not conformable\n";
    for (const auto& i : issues)
      out << "  rule " << i.rule << (i.tensor.empty() ? "" : " (tensor " + i.tensor + ")") << ": "
          << i.detail << "\n";
  }
  return broken > 0 ? 1 : 0;
}

}  // namespace mapex::host
