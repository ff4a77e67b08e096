// `mapex import nn_dataflow`: nn_dataflow's search result as canonical
// mappings. The JSON's fields are described in refdata/nn_dataflow/README.

#include <cmath>
#include <limits>
#include <map>
#include <mapex/error.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_import.hpp>
#include <mapex/nn_dataflow_search.hpp>

#include "yaml_reader.hpp"

namespace mapex::ndf {

namespace {

struct Reader {
  std::string path;

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& why) const {
    yaml::fail(path, node, key, why);
  }
  YAML::Node need(const YAML::Node& node, const std::string& key, const std::string& what) const {
    if (!node.IsMap() || !node[key]) fail(node, key, "expected " + what);
    return node[key];
  }
  double number(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key, "expected a number");
    try {
      return node.as<double>();
    } catch (const YAML::Exception&) {
      fail(node, key, "expected a number, got '" + node.Scalar() + "'");
    }
  }
  std::int64_t integer(const YAML::Node& node, const std::string& key) const {
    const double v = number(node, key);
    if (v != std::floor(v) || v < 0 || v > 1e15) fail(node, key, "expected a non-negative integer");
    return static_cast<std::int64_t>(v);
  }
  YAML::Node seq(const YAML::Node& node, const std::string& key, size_t size) const {
    if (!node.IsSequence() || node.size() != size)
      fail(node, key, "expected a list of " + std::to_string(size));
    return node;
  }
  Partition partition(const YAML::Node& node, const std::string& key) const {
    seq(node, key, 2);
    Partition part;
    seq(node[0], key + ".order", 4);
    std::array<bool, 4> seen{};
    for (size_t i = 0; i < 4; ++i) {
      const auto p = integer(node[0][i], key + ".order");
      if (p > 3 || seen[static_cast<size_t>(p)])
        fail(node[0], key + ".order", "expected a permutation of 0..3");
      seen[static_cast<size_t>(p)] = true;
      part.order[i] = static_cast<int>(p);
    }
    seq(node[1], key + ".pdims", 4);
    for (size_t i = 0; i < 4; ++i) {
      seq(node[1][i], key + ".pdims", 2);
      part.pdims[i] =
          Dim2{integer(node[1][i][0], key + ".pdims"), integer(node[1][i][1], key + ".pdims")};
      if (part.pdims[i].h < 1 || part.pdims[i].w < 1)
        fail(node[1][i], key + ".pdims", "expected factors of at least 1");
    }
    return part;
  }
};

bool same(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
}

bool same_scheme(const Scheme& a, const Scheme& b) {
  if (a.ifms != b.ifms || a.ofms != b.ofms || !(a.part.dim() == b.part.dim())) return false;
  for (size_t p = 0; p < 4; ++p)
    if (!(a.part.pdims[p] == b.part.pdims[p])) return false;
  // The order matters only among parallelisms that split.
  std::vector<int> oa, ob;
  for (int p : a.part.order)
    if (a.part.size(p) > 1) oa.push_back(p);
  for (int p : b.part.order)
    if (b.part.size(p) > 1) ob.push_back(p);
  if (oa != ob) return false;
  for (size_t bl = 0; bl < 3; ++bl)
    if (a.blocking.t[bl] != b.blocking.t[bl]) return false;
  // Loop orders matter among the non-trivial loops of a level.
  for (size_t bl = 0; bl < 2; ++bl)
    for (size_t x = 0; x < 3; ++x)
      for (size_t y = 0; y < 3; ++y) {
        if (a.blocking.t[bl][x] == 1 || a.blocking.t[bl][y] == 1) continue;
        if ((a.blocking.ord[bl][x] < a.blocking.ord[bl][y]) !=
            (b.blocking.ord[bl][x] < b.blocking.ord[bl][y]))
          return false;
      }
  return true;
}

}  // namespace

namespace {

/// The input layout, among `recorded` and those nn_dataflow tries for the
/// network input, under which the mapping costs least (the first on ties).
Partition cheapest_input_layout(const Operator& op, const Architecture& arch,
                                const std::string& bypass, bool forwarding,
                                const SearchOptions& options, const Mapping& mapping,
                                const Partition& recorded) {
  auto cost_under = [&](const Partition& part) {
    Problem pr;
    if (make_problem(op, arch, bypass, format_layout(part), forwarding ? "on" : "off", pr))
      return std::numeric_limits<double>::infinity();
    const Result r = evaluate_mapping(pr, mapping);
    return r.valid ? r.cost() : std::numeric_limits<double>::infinity();
  };
  Partition best = recorded;
  double best_cost = cost_under(recorded);
  Problem base;
  if (make_problem(op, arch, bypass, "", forwarding ? "on" : "off", base)) return best;
  for (const Layout& l : network_input_layouts(base.layer, base.hw, options)) {
    const double c = cost_under(l.part);
    if (c < best_cost) {
      best_cost = c;
      best = l.part;
    }
  }
  return best;
}

}  // namespace

std::vector<ImportedLayer> import_result(const std::string& path, const Network& workload,
                                         const Architecture& arch) {
  const Reader rd{path};
  const YAML::Node root = yaml::load_file(path);
  if (!root.IsMap() || !root["schedules"] || !root["options"] || !root["cost"])
    rd.fail(root, "schedules",
            "not an nn_dataflow result: expected the search tool's JSON with 'schedules', "
            "'options' and 'cost'");
  const YAML::Node options = root["options"];
  const YAML::Node cost = root["cost"];
  // Options: bypass per data category, GBUF sharing or access forwarding.
  std::string bypass;
  const YAML::Node byp = rd.seq(rd.need(options, "sw_gbuf_bypass", "a list"), "sw_gbuf_bypass", 3);
  const char letters[3] = {'f', 'i', 'o'};
  for (size_t c = 0; c < 3; ++c)
    if (byp[c].as<std::string>() == "true") bypass += letters[c];
  auto flag = [&](const std::string& key) {
    return rd.need(options, key, "true or false").as<std::string>() == "true";
  };
  const bool forwarding = flag("hw_gbuf_sharing") || flag("hw_access_forwarding");
  SearchOptions search_options;
  search_options.hybrid = flag("partition_hybrid");
  search_options.batch = flag("partition_batch");
  search_options.ifmaps = flag("partition_ifmaps");

  // Unit costs: the architecture's must be the JSON's up to one scale
  // (the JSON may be in joules, the architecture in pJ).
  const YAML::Node hier = rd.seq(rd.need(cost, "mem_hier", "four unit costs"), "mem_hier", 4);
  const double json_mac = rd.number(rd.need(cost, "mac_op", "a number"), "mac_op");
  if (json_mac <= 0) rd.fail(cost["mac_op"], "mac_op", "expected a positive MAC cost");
  const double scale = arch.mac_energy_pj() / json_mac;

  std::vector<ImportedLayer> out;
  std::map<std::string, Partition> partitions;
  const YAML::Node schedules = root["schedules"];
  if (!schedules.IsMap() || schedules.size() == 0)
    rd.fail(schedules, "schedules", "expected a map of layer name to schedule");
  for (const auto& item : schedules) {
    const std::string name = item.first.as<std::string>();
    const int index = workload.find_layer(name);
    if (index < 0)
      rd.fail(item.first, "schedules",
              "layer '" + name + "' is not in workload '" + workload.name() + "'");
    const Operator& op = workload.layers()[static_cast<size_t>(index)].op;
    const YAML::Node scheme_node = rd.seq(item.second, name, 3)[0];
    auto field = [&](const std::string& key) {
      return rd.need(scheme_node, key, "the scheme's " + key);
    };
    Problem pr;
    if (auto err = make_problem(op, arch, bypass, "", forwarding ? "on" : "off", pr))
      rd.fail(item.first, name, *err);
    // Every unit cost must be the result's, at the MAC's scale.
    static const char* kLevel[4] = {"DRAM", "GBUF", "ITCN", "REGF"};
    for (size_t m = 0; m < 4; ++m) {
      const double theirs = scale * rd.number(hier[m], "mem_hier");
      if (!same(pr.hw.mem_cost[m], theirs))
        rd.fail(hier, "mem_hier",
                std::string("the architecture's unit costs are not the result's (") + kLevel[m] +
                    " " + std::to_string(pr.hw.mem_cost[m]) + " pJ against " +
                    std::to_string(theirs) + " at the MAC's scale): evaluate it on its own chip");
    }
    const double hop = scale * rd.number(rd.need(cost, "noc_hop", "a number"), "noc_hop");
    if (pr.roles.node_array >= 0 && !same(pr.hw.hop_cost, hop))
      rd.fail(cost["noc_hop"], "noc_hop",
              "the architecture's NoC hop cost (" + std::to_string(pr.hw.hop_cost) +
                  " pJ) is not the result's (" + std::to_string(hop) + ")");

    Scheme sc;
    sc.part = rd.partition(field("part"), name + ".part");
    const YAML::Node tvals = rd.seq(field("tvals"), name + ".tvals", 3);
    for (size_t bl = 0; bl < 3; ++bl) {
      rd.seq(tvals[bl], name + ".tvals", 3);
      for (size_t l = 0; l < 3; ++l)
        sc.blocking.t[bl][l] = rd.integer(tvals[bl][l], name + ".tvals");
    }
    const YAML::Node orders = rd.seq(field("orders"), name + ".orders", 2);
    for (size_t bl = 0; bl < 2; ++bl) {
      rd.seq(orders[bl], name + ".orders", 3);
      for (size_t l = 0; l < 3; ++l)
        sc.blocking.ord[bl][l] = static_cast<int>(rd.integer(orders[bl][l], name + ".orders"));
    }
    // The replication is not stored: it is the choice whose GBUF unit sizes
    // are the scheme's.
    double occ = 0;
    const Layer nl = part_layer(pr.layer, sc.part, &occ);
    PeMapping pe;
    if (auto err = pe_mapping(nl, pr.hw.array, pe)) rd.fail(item.first, name, *err);
    const YAML::Node usize = rd.seq(field("unit_size"), name + ".unit_size", 2)[0];
    bool found = false;
    for (const auto& [ifms, ofms] : pe.repl_choices) {
      const LoopDesc d = loop_desc(nl, occ, pe, ifms, ofms);
      bool match = true;
      for (size_t c = 0; c < 3; ++c)
        match = match && same(d.usize_gbuf[c], rd.number(usize[c], name + ".unit_size"));
      if (match) {
        sc.ifms = ifms;
        sc.ofms = ofms;
        found = true;
        break;
      }
    }
    if (!found)
      rd.fail(usize, name + ".unit_size",
              "no row-stationary replication of the layer has these GBUF unit sizes: the "
              "layer's shape is not the one the result was made for");

    ImportedLayer il;
    il.name = name;
    if (auto err = mapping_from_scheme(op, arch, pr, sc, il.mapping))
      rd.fail(item.first, name, "this scheme cannot be expressed as a mapping: " + *err);
    Scheme back;
    if (auto err = scheme_from_mapping(pr, il.mapping, back))
      rd.fail(item.first, name, "this scheme cannot be expressed as a mapping: " + *err);
    if (!same_scheme(sc, back))
      rd.fail(item.first, name,
              "this scheme cannot be expressed as a mapping: its loop blocking overshoots the "
              "trip counts in a way tiles cannot carry");

    // The input: the network input's layout for a first layer, else where
    // the producer left its output.
    Partition in_part;
    const auto& producers = workload.layers()[static_cast<size_t>(index)].producers;
    if (!producers.empty()) {
      const auto& producer = workload.layers()[static_cast<size_t>(producers[0])].op;
      const auto it = partitions.find(producer.name());
      if (producers.size() != 1 || it == partitions.end())
        rd.fail(item.first, name,
                "the layer's input comes from layers the result does not schedule first");
      Problem pp;
      if (auto err = make_problem(producer, arch, bypass, "", forwarding ? "on" : "off", pp))
        rd.fail(item.first, name, *err);
      in_part = ofmap_layout(pp.layer, it->second, pp.hw.dram).part;
    } else {
      const YAML::Node layout =
          rd.seq(rd.need(root, "input_layout", "the input layout"), "input_layout", 3);
      rd.seq(layout[2], "input_layout", 1);
      in_part = rd.partition(layout[2][0], "input_layout");
      // nn_dataflow tries every input layout of the network input
      // (NNDataflow._gen_input_layout) and keeps the cheapest schedule; the
      // layout the JSON records does not always reproduce the hops it
      // reports (its own unit_nhops_to_proc_region on it gives ours), so the
      // layer is scored as the search scored it: under the cheapest of those
      // layouts for this scheme, the recorded one winning ties.
      in_part =
          cheapest_input_layout(op, arch, bypass, forwarding, search_options, il.mapping, in_part);
    }
    partitions[name] = sc.part;
    il.params = {{"model", "nn_dataflow"},
                 {"gbuf_bypass", bypass},
                 {"forwarding", forwarding ? "on" : "off"},
                 {"ifmap_layout", format_layout(in_part)}};

    Reported& r = il.reported;
    auto num = [&](const std::string& key) { return rd.number(field(key), name + "." + key); };
    r.cost = num("cost") * scale;
    r.cost_op = num("cost_op") * scale;
    r.cost_access = num("cost_access") * scale;
    r.cost_noc = num("cost_noc") * scale;
    r.cost_static = num("cost_static") * scale;
    r.time = num("time");
    r.ops = num("ops");
    r.proc_time = num("proc_time");
    r.bus_time = num("bus_time");
    r.dram_time = num("dram_time");
    const YAML::Node access = rd.seq(field("access"), name + ".access", 4);
    for (size_t m = 0; m < 4; ++m) {
      rd.seq(access[m], name + ".access", 3);
      for (size_t c = 0; c < 3; ++c) r.access[m][c] = rd.number(access[m][c], name + ".access");
    }
    const YAML::Node hops = rd.seq(field("total_nhops"), name + ".total_nhops", 3);
    for (size_t c = 0; c < 3; ++c) r.nhops[c] = rd.number(hops[c], name + ".total_nhops");
    out.push_back(std::move(il));
  }
  return out;
}

}  // namespace mapex::ndf
