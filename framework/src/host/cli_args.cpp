#include "host/cli_args.hpp"

#include <mapex/error.hpp>
#include <sstream>

namespace mapex::host {

namespace po = boost::program_options;

po::variables_map parse_command_line(const po::options_description& desc,
                                     const po::positional_options_description* positional,
                                     const std::vector<std::string>& args,
                                     const std::string& after) {
  po::variables_map vm;
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) return vm;
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string(e.what()) + after);
  }
  return vm;
}

std::string options_text(const po::options_description& desc) {
  std::ostringstream out;
  out << desc;
  return out.str();
}

}  // namespace mapex::host
