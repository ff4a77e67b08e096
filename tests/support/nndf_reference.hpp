#pragma once
// The single-layer nn_dataflow reference runs (refdata/nn_dataflow/
// layers.csv and runs/<id>.cmd) as search problems: the layer of the
// run's workload on the run's chip, with the run's options (partitioning,
// bypass, GBUF sharing) read from its exact command line. Shared by the
// search's golden test and its benchmark.

#include <filesystem>
#include <fstream>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/network.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace mapex::ndf::reference {

using Row = std::map<std::string, std::string>;

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r')
      cur += c;
  }
  out.push_back(cur);
  return out;
}

/// Every row of layers.csv, keyed by column name.
inline std::vector<Row> read_layers(const std::filesystem::path& refdata) {
  std::ifstream in(refdata / "layers.csv");
  std::string line;
  std::getline(in, line);
  const auto header = split_csv(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    const auto cells = split_csv(line);
    Row r;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

/// One reference layer ready to search.
struct Setup {
  std::string id;
  Network net;
  int layer = -1;  ///< the searched layer's index in `net` (the run's layer_name)
  Architecture arch;
  Problem problem;
  SearchOptions options;
  std::vector<Layout> layouts;  ///< the network-input layouts nn_dataflow tries
  double scale = 1;             ///< mapex's energy unit per nn_dataflow's (pJ per J on `mn`)
  double ref_cost = 0;          ///< nn_dataflow's L_cost, in its unit
  double ref_cpu_s = 0;         ///< nn_dataflow's CPU seconds for the whole run
};

/// The run's setup, or why the model cannot take it (the reason names the
/// layer kind or the missing workload).
inline std::optional<std::string> load(const std::filesystem::path& refdata,
                                       const std::filesystem::path& test_data,
                                       const std::filesystem::path& archs, const Row& row,
                                       Setup& out) {
  out.id = row.at("id");
  if (row.at("status") != "ok") return "the reference run did not finish";
  if (row.at("kind") != "conv" && row.at("kind") != "fc" && row.at("kind") != "pool")
    return "a " + row.at("kind") +
           " layer: the nn_dataflow model covers convolution, fully-connected and local-region "
           "layers";
  const auto workload = test_data / "nn_dataflow" / (out.id + ".yaml");
  if (!std::filesystem::exists(workload)) return "no workload file " + workload.string();
  out.net = Network::load(workload.string());
  out.arch = Architecture::load(
      (row.at("hw") == "mn" ? archs / "kapla_multinode.yaml" : test_data / "nn_dataflow/sm4.yaml")
          .string());
  // The options, from the exact command line.
  std::ifstream cmd(refdata / "runs" / (out.id + ".cmd"));
  std::vector<std::string> args;
  for (std::string w; cmd >> w;) args.push_back(w);
  std::string bypass = "fio";
  bool sharing = false;
  double op_cost = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--hybrid-partition") out.options.hybrid = true;
    if (a == "--batch-partition") out.options.batch = true;
    if (a == "--ifmaps-partition") out.options.ifmaps = true;
    if (a == "--enable-gbuf-sharing" || a == "--enable-access-forwarding") sharing = true;
    if (a == "--op-cost" && i + 1 < args.size()) op_cost = std::stod(args[i + 1]);
    if (a == "--disable-bypass")
      for (size_t j = i + 1; j < args.size() && args[j].rfind("--", 0) != 0; ++j)
        bypass.erase(bypass.find(args[j][0]), 1);
  }
  out.layer = out.net.find_layer(row.at("layer_name"));
  if (out.layer < 0)
    return "workload " + workload.string() + " has no layer " + row.at("layer_name");
  const auto& op = out.net.layers()[static_cast<size_t>(out.layer)].op;
  if (auto err = make_problem(op, out.arch, bypass, "", sharing ? "on" : "off", out.problem))
    return err;
  out.layouts = network_input_layouts(out.problem.layer, out.problem.hw, out.options);
  out.scale = out.problem.hw.mac_cost / op_cost;
  out.ref_cost = std::stod(row.at("L_cost"));
  out.ref_cpu_s = std::stod(row.at("cpu_s"));
  return std::nullopt;
}

}  // namespace mapex::ndf::reference
