#include "host/store_commands.hpp"

#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <mapex/error.hpp>

#include "host/cli_args.hpp"
#include "host/commands.hpp"
#include "host/report.hpp"
#include "host/run_command.hpp"
#include "host/schedule_command.hpp"

namespace mapex::host {
namespace po = boost::program_options;

namespace {

/// Bad usage of `report`: exit status 2 with the usage text, as for every
/// other command.
po::variables_map parse_report_args(const po::options_description& desc,
                                    const po::positional_options_description& positional,
                                    const std::vector<std::string>& args) {
  return parse_command_line(desc, &positional, args, "\n" + std::string(cli_usage()));
}

int cmd_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mapex report");
  std::string path, format;
  ReportOptions options;
  desc.add_options()("help,h", "show this help")("results", po::value(&path)->required(),
                                                 "result file (HDF5)")(
      "format", po::value(&format)->default_value("markdown"), "markdown or csv")(
      "table", po::value(&options.table)->default_value("all"),
      "all (markdown), jobs, summary (geometric means per group) or dse (design points)")(
      "baseline", po::value(&options.baseline),
      "ratios to this baseline: searcher=NAME, costmodel=NAME or architecture=NAME");
  po::positional_options_description positional;
  positional.add("results", 1);
  const auto vm = parse_report_args(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return 0;
  }
  const TableFormat table = parse_table_format(format);
  if (!boost::filesystem::exists(path))
    throw InputError(SourceLocation{path, 0, 0}, "", "result file does not exist");
  const ResultFile file = read_results(path);
  if (file.format1) err << format1_warning(path);
  print_report(file, table, out, options);
  return 0;
}

}  // namespace

int store_command(const std::string& command, const std::vector<std::string>& args,
                  std::ostream& out, std::ostream& err) {
  if (command == "run") return run_command(args, out, err);
  if (command == "merge") return merge_command(args, out, err);
  if (command == "report") return cmd_report(args, out, err);
  if (command == "schedule") return cmd_schedule(args, out);
  throw Error("'" + command + "' is not a command of the store library");
}

}  // namespace mapex::host
