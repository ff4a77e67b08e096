#include "host/timeloop_commands.hpp"

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/mapping.hpp>
#include <mapex/network.hpp>
#include <mapex/timeloop.hpp>
#include <sstream>

#include "host/cli_args.hpp"

namespace mapex::host {

namespace po = boost::program_options;

namespace {

po::variables_map parse_args(const po::options_description& desc,
                             const po::positional_options_description& positional,
                             const std::vector<std::string>& args) {
  return parse_command_line(desc, &positional, args, "\n" + options_text(desc));
}

void require_file(const std::string& path, const char* what) {
  if (!std::filesystem::is_regular_file(path))
    throw InputError(SourceLocation{path, 0, 0}, what, "no such file");
}

// -o must not write over the command's own inputs (`import timeloop
// arch.yaml -o .` would replace arch.yaml), nor, unless --force, over a file
// whose first line does not show that this command wrote it (`mark`).
// Checked before anything is written.
void check_target(const std::string& path, const std::vector<std::string>& inputs,
                  const std::string& mark, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  for (const auto& input : inputs)
    if (fs::equivalent(path, input, ec))
      throw InputError(SourceLocation{path, 0, 0}, "-o",
                       "is an input of this command; refusing to write over it");
  if (fs::is_directory(path, ec))
    throw InputError(SourceLocation{path, 0, 0}, "-o", "is a directory; expected a file name");
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (!force && first + "\n" != mark)
    throw InputError(SourceLocation{path, 0, 0}, "-o",
                     "exists and was not written by this command; refusing to replace it (remove "
                     "it, give another -o, or --force)");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int cmd_import_timeloop(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("mapex import timeloop FILE.yaml [FILE.yaml ...] -o DIR");
  std::string format, dir;
  std::vector<std::string> files;
  bool force = false;
  desc.add_options()("help,h", "show this help")("format", po::value(&format), "timeloop")(
      "files", po::value(&files)->multitoken(),
      "Timeloop's input files, read as one document (problem, architecture, constraints, "
      "mapping, ERT)")("output,o", po::value(&dir), "folder for the mapex files")(
      "force", po::bool_switch(&force), "let -o replace files an import did not write");
  po::positional_options_description positional;
  positional.add("format", 1).add("files", -1);
  const auto vm = parse_args(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return 0;
  }
  if (files.empty() || dir.empty())
    throw InputError("import timeloop needs FILE.yaml ... and -o DIR");
  for (const auto& f : files) require_file(f, "timeloop file");
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir))
    throw InputError(SourceLocation{dir, 0, 0}, "-o",
                     "exists and is not a directory; expected the folder for the mapex files");
  const auto imported = timeloop::import_files(files);
  // Check that the files read back as mapex reads them before writing.
  if (!imported.workload_yaml.empty() && !imported.arch_yaml.empty()) {
    const std::string origin = timeloop::converted_origin(files.front());
    const Network net = Network::parse(imported.workload_yaml, origin);
    const Architecture arch = Architecture::parse(imported.arch_yaml, origin);
    (void)net;
    (void)arch;
  }
  std::filesystem::create_directories(dir);
  // The same Timeloop content gives the same files, whatever the file
  // names (import, export, import again round-trips byte for byte).
  const std::string header = "# imported from Timeloop by mapex import timeloop\n";
  for (const char* name : {"workload.yaml", "arch.yaml", "constraints.yaml", "mapping.yaml"})
    check_target((std::filesystem::path(dir) / name).string(), files, header, force);
  for (const auto& [name, text] :
       {std::pair<const char*, const std::string*>{"workload.yaml", &imported.workload_yaml},
        {"arch.yaml", &imported.arch_yaml},
        {"constraints.yaml", &imported.constraints_yaml},
        {"mapping.yaml", &imported.mapping_yaml}}) {
    if (text->empty()) continue;
    const std::string path = (std::filesystem::path(dir) / name).string();
    write_file(path, header + *text);
    out << path << "\n";
  }
  return 0;
}

int cmd_export(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "mapex export timeloop --workload W --arch A --mapping M [--layer L] [-o FILE]");
  std::string format, workload, arch_path, mapping_path, layer, file;
  bool force = false;
  desc.add_options()("help,h", "show this help")("format", po::value(&format), "timeloop")(
      "force", po::bool_switch(&force), "let -o replace a file that is not a Timeloop mapping")(
      "workload", po::value(&workload), "the workload (mapex or Timeloop)")(
      "arch", po::value(&arch_path), "the architecture (mapex or Timeloop)")(
      "mapping", po::value(&mapping_path), "the mapping to write")(
      "layer", po::value(&layer), "the layer (when the workload has several)")(
      "output,o", po::value(&file), "write here instead of standard output");
  po::positional_options_description positional;
  positional.add("format", 1);
  const auto vm = parse_args(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return 0;
  }
  if (format != "timeloop")
    throw InputError(
        "export writes Timeloop mappings: mapex export timeloop --workload W "
        "--arch A --mapping M");
  if (workload.empty() || arch_path.empty() || mapping_path.empty())
    throw InputError("export timeloop needs --workload, --arch and --mapping");
  require_file(workload, "workload");
  require_file(arch_path, "architecture");
  require_file(mapping_path, "mapping");
  // An earlier export (a Timeloop mapping: its first line is `mapping:`)
  // may be replaced; any other existing file only with --force.
  if (!file.empty()) check_target(file, {workload, arch_path, mapping_path}, "mapping:\n", force);
  const Network net = Network::load(workload);
  const Architecture arch = Architecture::load(arch_path);
  int index = 0;
  if (!layer.empty()) {
    index = net.find_layer(layer);
    if (index < 0)
      throw InputError(SourceLocation{workload, 0, 0}, "layer",
                       "no layer '" + layer + "' in network '" + net.name() + "'");
  } else if (net.layers().size() != 1) {
    throw InputError(workload + " has " + std::to_string(net.layers().size()) +
                     " layers; choose one with --layer");
  }
  const Operator& op = net.layers()[static_cast<size_t>(index)].op;
  const Mapping mapping = Mapping::load(mapping_path, op, arch);
  std::string text;
  try {
    text = timeloop::export_mapping(op, arch, mapping);
  } catch (const InputError& e) {
    throw InputError(SourceLocation{mapping_path, 0, 0}, e.key(), e.problem());
  }
  if (file.empty())
    out << text;
  else
    write_file(file, text);
  return 0;
}

}  // namespace mapex::host
