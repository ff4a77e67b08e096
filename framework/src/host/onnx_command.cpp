#include "host/onnx_command.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mapex/error.hpp>
#include <mapex/network.hpp>

extern char** environ;

namespace mapex::host {
namespace fs = std::filesystem;

namespace {

constexpr int kExitBadInput = 2;

const char* const kOnnxUsage =
    "usage: mapex import onnx MODEL.onnx -o NET.yaml [--batch N] [--force]\n"
    "  Conv, Gemm and MatMul become layers; pooling, activations, normalisation and\n"
    "  reshapes are folded into the shapes they produce; Add and Concat keep the\n"
    "  connections; other operators are listed in a warning.\n";

struct OnnxArgs {
  std::string model;
  std::string output;
  std::string batch;
  bool force = false;
};

OnnxArgs parse_onnx_args(const std::vector<std::string>& args) {
  OnnxArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if ((arg == "-o" || arg == "--output") && has_value) {
      a.output = args[++i];
    } else if (arg == "--batch" && has_value) {
      a.batch = args[++i];
    } else if (arg == "--force") {
      a.force = true;
    } else if (!arg.empty() && arg[0] != '-' && a.model.empty()) {
      a.model = arg;
    } else {
      throw InputError("import onnx: unexpected argument '" + arg + "'\n" + kOnnxUsage);
    }
  }
  if (a.model.empty() || a.output.empty())
    throw InputError(std::string("import onnx needs MODEL.onnx and -o NET.yaml\n") + kOnnxUsage);
  if (!a.batch.empty() && a.batch.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--batch expects a positive integer, got '" + a.batch + "'");
  return a;
}

/// What the importer said: its exit status (1 when it could not be
/// started or died from a signal) and its standard error, which holds its
/// warnings or its one-line error.
struct ImporterResult {
  int status = 1;
  std::string messages;
};

/// Runs the importer with its standard error on a pipe, so that its
/// messages reach the caller's error stream (a terminal, or a Python
/// caller's warnings) rather than this process's file descriptor 2.
ImporterResult run_importer(const std::vector<std::string>& argv) {
  std::vector<char*> cargs;
  for (const auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) throw Error("cannot make a pipe for the ONNX importer");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  ImporterResult result;
  if (spawned != 0) {
    close(fds[0]);
    throw Error("cannot start " + argv[0] + " to read the ONNX model (Debian: python3)");
  }
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0)
      result.messages.append(buffer, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return result;
}

}  // namespace

std::string onnx_importer_script() {
  if (const char* env = std::getenv("MAPEX_ONNX_IMPORTER")) return env;
  const fs::path exe_dir = boost::dll::program_location().parent_path();
  const fs::path beside = exe_dir / ".." / "share" / "mapex" / "onnx_import.py";
  if (fs::exists(beside)) return beside.lexically_normal().string();
  return MAPEX_SOURCE_SCRIPTS "/onnx_import.py";
}

int onnx_import_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    out << kOnnxUsage;
    return 0;
  }
  const OnnxArgs a = parse_onnx_args(args);
  if (!fs::exists(a.model))
    throw InputError(SourceLocation{a.model, 0, 0}, "", "ONNX model file does not exist");
  if (fs::is_directory(a.output))
    throw InputError(SourceLocation{a.output, 0, 0}, "-o",
                     "is a directory; expected the network YAML file to write");
  // Never over the model; over an earlier import's network (its first line
  // says so) yes; over any other file only with --force.
  std::error_code ec;
  if (fs::exists(a.output, ec)) {
    if (fs::equivalent(a.output, a.model, ec))
      throw InputError(SourceLocation{a.output, 0, 0}, "-o",
                       "is the model being imported; refusing to write over it");
    std::ifstream in(a.output);
    std::string first;
    std::getline(in, first);
    if (!a.force && first.find("by `mapex import onnx`") == std::string::npos)
      throw InputError(SourceLocation{a.output, 0, 0}, "-o",
                       "exists and was not written by mapex import onnx; refusing to replace it "
                       "(remove it, give another -o, or --force)");
  }
  std::vector<std::string> argv{MAPEX_PYTHON, onnx_importer_script(), a.model, "-o", a.output};
  if (!a.batch.empty()) argv.insert(argv.end(), {"--batch", a.batch});
  const ImporterResult imported = run_importer(argv);
  err << imported.messages;
  if (imported.status != 0) return imported.status == kExitBadInput ? kExitBadInput : 1;

  // The importer's file goes through mapex's reader: its checks (shapes
  // positive, channels and batches agreeing along the edges) apply.
  const Network net = Network::load(a.output);
  std::int64_t total = 0;
  out << "layer\ttype\tmacs\tinputs\n";
  for (const auto& layer : net.layers()) {
    out << layer.op.name() << '\t' << layer.op.kind() << '\t' << layer.op.macs() << '\t';
    for (size_t i = 0; i < layer.producers.size(); ++i)
      out << (i ? "," : "") << net.layers()[static_cast<size_t>(layer.producers[i])].op.name();
    out << '\n';
    total += layer.op.macs();
  }
  out << "kept " << net.layers().size() << " layers, " << total << " MACs; wrote " << a.output
      << "\n";
  return 0;
}

}  // namespace mapex::host
