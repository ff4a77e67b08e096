// The compiled half of the Python module `mapex` (README, "Python"): the
// file readers (so loading validates exactly as the CLI does) and one entry
// into the CLI's command functions, which the Python half calls for
// evaluate, search, mapspace counts and runs. Nothing here re-implements a
// command: a Python call and the CLI run the same host code.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/mapping.hpp>
#include <mapex/network.hpp>
#include <mapex/version.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "host/commands.hpp"

namespace py = pybind11;

namespace {

/// Runs `mapex ARGS...` in process; returns (exit status, stdout, stderr).
/// The GIL is released: searches and runs use every worker thread.
std::tuple<int, std::string, std::string> run_cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"mapex"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int status = 0;
  {
    py::gil_scoped_release release;
    status = mapex::host::main_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  }
  return {status, out.str(), err.str()};
}

/// One layer as a dict: name, kind, macs, dims {name: bound}, inputs.
py::dict layer_dict(const mapex::Network& net, const mapex::Layer& layer) {
  py::dict d;
  d["name"] = layer.op.name();
  d["kind"] = layer.op.kind();
  d["macs"] = layer.op.macs();
  py::dict dims;
  for (const auto& dim : layer.op.dims()) dims[py::str(dim.name)] = dim.bound;
  d["dims"] = dims;
  py::list inputs;
  for (int p : layer.producers) inputs.append(net.layers()[static_cast<size_t>(p)].op.name());
  d["inputs"] = inputs;
  return d;
}

const mapex::Operator& layer_of(const mapex::Network& net, const std::string& layer) {
  if (layer.empty()) {
    if (net.layers().size() != 1)
      throw mapex::InputError("network '" + net.name() + "' has " +
                              std::to_string(net.layers().size()) +
                              " layers; expected layer= naming one");
    return net.layers().front().op;
  }
  const int index = net.find_layer(layer);
  if (index < 0)
    throw mapex::InputError("no layer '" + layer + "' in network '" + net.name() + "'");
  return net.layers()[static_cast<size_t>(index)].op;
}

}  // namespace

PYBIND11_MODULE(_mapex, m) {
  m.doc() = "mapex: mappings of DNN operators on spatial accelerators (compiled half)";
  // Translators are tried newest first, so InputError (derived) before Error.
  static py::exception<mapex::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<mapex::InputError> input_error(m, "InputError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const mapex::InputError& e) {
      input_error(e.what());
    } catch (const mapex::Error& e) {
      error(e.what());
    }
  });

  py::class_<mapex::Network>(m, "Network")
      .def_property_readonly("name", &mapex::Network::name)
      .def_property_readonly("layers",
                             [](const mapex::Network& net) {
                               py::list out;
                               for (const auto& l : net.layers()) out.append(layer_dict(net, l));
                               return out;
                             })
      .def("__len__", [](const mapex::Network& net) { return net.layers().size(); });
  py::class_<mapex::Architecture>(m, "Architecture")
      .def_property_readonly("name", &mapex::Architecture::name)
      .def_property_readonly("levels", [](const mapex::Architecture& a) {
        std::vector<std::string> names;
        for (const auto& level : a.levels()) names.push_back(level.name);
        return names;
      });

  m.def("load_network", &mapex::Network::load, py::arg("path"),
        "Reads a workload file (network or single operator); InputError on bad input.");
  m.def("load_architecture", &mapex::Architecture::load, py::arg("path"),
        "Reads an architecture file; InputError on bad input.");
  m.def(
      "mapping_yaml",
      [](const std::string& path, const mapex::Network& net, const mapex::Architecture& arch,
         const std::string& layer) {
        const mapex::Operator& op = layer_of(net, layer);
        return mapex::Mapping::load(path, op, arch).to_yaml(op, arch);
      },
      py::arg("path"), py::arg("network"), py::arg("architecture"), py::arg("layer") = "",
      "Reads a mapping file for one layer and returns it in canonical YAML.");
  m.def("cli", &run_cli, py::arg("args"),
        "Runs a mapex command in process: (exit status, stdout, stderr).");
  m.attr("__version__") = mapex::version();
}
