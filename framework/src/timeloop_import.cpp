// Timeloop's classic input format to mapex files (mapex/timeloop.hpp).
// The format is Timeloop's (NVlabs/timeloop: problem shapes, the v0.3
// `subtree`/`local` architecture tree, constraints and mappings as the
// mapper and model read them); the conversion rules are in the README,
// "Timeloop files".

#include <yaml-cpp/yaml.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mapex/checked.hpp>
#include <mapex/constraints.hpp>
#include <mapex/error.hpp>
#include <mapex/network.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "constraints_yaml.hpp"
#include "timeloop_reader.hpp"
#include "yaml_reader.hpp"

namespace mapex::timeloop {

namespace {

/// Timeloop's MAX_DATA_SPACES: a shape with more data spaces is refused by
/// timeloop-model, so it is bad input here too.
constexpr std::size_t kMaxDataSpaces = 5;

const char* const kSparse =
    "sparse densities and optimisations are not modelled by mapex (dense tensors only)";
const char* const kV04 =
    "a feature of Timeloop's v0.4 front end; give the v0.3 form (architecture: subtree/local)";

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

// ---------------------------------------------------------------- problem

struct Term {
  int dim = 0;
  std::int64_t coefficient = 1;
};

struct DataSpace {
  std::string name;
  bool read_write = false;
  std::vector<std::vector<Term>> ranks;
};

struct Problem {
  std::string file;
  std::string name = "timeloop";
  std::vector<std::string> dims;
  std::vector<std::int64_t> bounds;
  std::vector<DataSpace> spaces;
  int dim_index(const std::string& d) const {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == d) return static_cast<int>(i);
    return -1;
  }
};

std::string dim_list(const std::vector<std::string>& dims) {
  std::string s;
  for (const auto& d : dims) s += (s.empty() ? "" : ", ") + d;
  return s;
}

int dim_of(const Problem& p, const std::string& file, const YAML::Node& node,
           const std::string& key, const std::string& name) {
  const int d = p.dim_index(name);
  if (d < 0)
    yaml::fail(file, node, key,
               "unknown dimension '" + name + "'; the shape has " + dim_list(p.dims));
  return d;
}

void refuse_densities(Obj& m) {
  if (auto d = m.get("densities"); d && !(d->IsMap() && d->size() == 0) && !d->IsNull())
    yaml::fail(m.file(), *d, "densities",
               std::string("cannot be carried over to mapex: ") + kSparse);
  m.refuse("commonDensity", kSparse);
}

// A projection term: [dim] or [dim, coefficient] (a coefficient name or a
// number).
Term read_term(const Problem& p, const std::string& file, const YAML::Node& node,
               const std::map<std::string, std::int64_t>& coefficients) {
  if (!node.IsSequence() || node.size() == 0 || node.size() > 2)
    yaml::fail(file, node, "projection", "expected a term [dimension] or [dimension, coefficient]");
  Term t;
  t.dim = dim_of(p, file, node[0], "projection", yaml::as_string(file, node[0], "projection"));
  if (node.size() == 2) {
    const std::string c = yaml::as_scalar(file, node[1], "projection");
    if (auto it = coefficients.find(c); it != coefficients.end())
      t.coefficient = it->second;
    else if (!c.empty() && std::all_of(c.begin(), c.end(), ::isdigit))
      t.coefficient = yaml::as_positive_int(file, node[1], "projection");
    else
      yaml::fail(file, node[1], "projection", "unknown coefficient '" + c + "'");
    if (t.coefficient <= 0)
      yaml::fail(file, node[1], "projection", "coefficient '" + c + "' must be positive");
  }
  return t;
}

DataSpace read_data_space(const Problem& p, const std::string& file, const YAML::Node& node,
                          const std::map<std::string, std::int64_t>& coefficients) {
  Obj m(file, node, "a data space");
  DataSpace s;
  s.name = yaml::as_string(file, m.need("name"), "name");
  if (auto rw = m.get("read_write")) s.read_write = yaml::as_bool(file, *rw, "read_write");
  const YAML::Node proj = m.need("projection");
  if (proj.IsScalar())
    yaml::fail(file, proj, "projection",
               std::string("a projection written as an expression is ") + kV04);
  if (!proj.IsSequence() || proj.size() == 0)
    yaml::fail(file, proj, "projection", "expected a non-empty list of ranks");
  for (const auto& rank : proj) {
    if (rank.IsScalar()) {  // the flat form: one dimension per rank
      s.ranks.push_back({Term{
          dim_of(p, file, rank, "projection", yaml::as_string(file, rank, "projection")), 1}});
      continue;
    }
    if (!rank.IsSequence() || rank.size() == 0)
      yaml::fail(file, rank, "projection", "expected a rank: a list of terms");
    std::vector<Term> terms;
    for (const auto& term : rank) terms.push_back(read_term(p, file, term, coefficients));
    s.ranks.push_back(std::move(terms));
  }
  m.finish();
  return s;
}

Problem read_problem(const Section& sec) {
  Problem p;
  p.file = sec.file;
  const std::string& file = sec.file;
  Obj top(file, sec.value, "problem");
  top.ignore("version");
  refuse_densities(top);
  const YAML::Node shape_node = top.need("shape");
  if (shape_node.IsScalar())
    yaml::fail(
        file, shape_node, "shape",
        "a shape named by file is not read; give the shape (dimensions, data_spaces) inline");
  Obj shape(file, shape_node, "problem shape");
  if (auto n = shape.get("name")) p.name = yaml::as_string(file, *n, "name");
  const YAML::Node dims = shape.need("dimensions");
  if (!dims.IsSequence() || dims.size() == 0)
    yaml::fail(file, dims, "dimensions", "expected a non-empty list of dimension names");
  for (const auto& d : dims) {
    const std::string name = yaml::as_string(file, d, "dimensions");
    if (p.dim_index(name) >= 0)
      yaml::fail(file, d, "dimensions", "dimension '" + name + "' is listed twice");
    p.dims.push_back(name);
  }
  std::map<std::string, std::int64_t> coefficients;
  std::vector<std::pair<std::string, YAML::Node>> coefficient_nodes;
  if (auto cs = shape.get("coefficients")) {
    if (!cs->IsSequence())
      yaml::fail(file, *cs, "coefficients", "expected a list of {name, default}");
    for (const auto& c : *cs) {
      Obj cm(file, c, "a coefficient");
      const std::string name = yaml::as_string(file, cm.need("name"), "name");
      coefficients[name] =
          cm.has("default") ? yaml::as_positive_int(file, cm.need("default"), "default") : 1;
      cm.finish();
    }
  }
  shape.refuse("flatten", "flattened (merged) dimensions have no mapex counterpart");
  // Instance: the bounds, and coefficient values that override defaults.
  Obj inst(file, top.need("instance"), "problem instance");
  refuse_densities(inst);
  for (const auto& d : p.dims) p.bounds.push_back(yaml::as_positive_int(file, inst.need(d), d));
  for (auto& [name, value] : coefficients)
    if (auto v = inst.get(name)) value = yaml::as_positive_int(file, *v, name);
  inst.finish();
  const YAML::Node spaces = shape.need("data_spaces");
  if (!spaces.IsSequence() || spaces.size() == 0)
    yaml::fail(file, spaces, "data_spaces", "expected a non-empty list of data spaces");
  if (spaces.size() > kMaxDataSpaces)
    yaml::fail(file, spaces, "data_spaces",
               "the shape has " + std::to_string(spaces.size()) +
                   " data spaces; Timeloop allows at most " + std::to_string(kMaxDataSpaces));
  int outputs = 0;
  std::set<std::string> names;
  for (const auto& s : spaces) {
    p.spaces.push_back(read_data_space(p, file, s, coefficients));
    if (!names.insert(p.spaces.back().name).second)
      yaml::fail(file, s, "name", "data space '" + p.spaces.back().name + "' is listed twice");
    outputs += p.spaces.back().read_write ? 1 : 0;
  }
  if (outputs != 1)
    yaml::fail(file, spaces, "read_write",
               "expected exactly one read_write data space (the output), found " +
                   std::to_string(outputs));
  shape.finish();
  top.finish();
  return p;
}

std::string workload_yaml(const Problem& p) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "network" << YAML::Value << p.name;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "type" << YAML::Value << "loopnest";
  out << YAML::Key << "dims" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (size_t d = 0; d < p.dims.size(); ++d)
    out << YAML::Key << p.dims[d] << YAML::Value << p.bounds[d];
  out << YAML::EndMap << YAML::Key << "tensors" << YAML::Value << YAML::BeginSeq;
  for (const auto& s : p.spaces) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name;
    out << YAML::Key << "role" << YAML::Value << (s.read_write ? "output" : "input");
    if (s.read_write) out << YAML::Key << "reduction" << YAML::Value << "sum";
    out << YAML::Key << "subscripts" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& rank : s.ranks) {
      std::string e;
      for (const auto& t : rank) {
        e += (e.empty() ? "" : " + ") + p.dims[static_cast<size_t>(t.dim)];
        if (t.coefficient != 1) e += "*" + std::to_string(t.coefficient);
      }
      out << e;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ----------------------------------------------------------- architecture

struct Storage {
  std::string name;
  YAML::Node name_node;
  std::string file;
  bool dram = false;
  std::int64_t instances = 1, mesh_x = 1, mesh_y = 1;
  int word_bits = 0;
  YAML::Node word_bits_node;
  std::int64_t block_size = 1;
  std::optional<std::int64_t> size_words;
  std::optional<double> read_bw, write_bw, shared_bw;  // words per cycle
  bool double_buffered = false;
  std::optional<double> access_energy;            // vector_access_energy, per block
  double read_pj = 0, write_pj = 0, leak_pj = 0;  // per word (leak per instance)
};

struct Chip {
  std::string name = "timeloop";
  double cycle_seconds = 1e-9;
  std::vector<Storage> storages;  // outermost first, as Timeloop lists them
  std::int64_t mac_instances = 0;
  std::string mac_name;
  double mac_pj = 0;
};

bool class_has(const std::string& cls, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (cls.find(n) != std::string::npos) return true;
  return false;
}

using Attrs = std::map<std::string, std::pair<YAML::Node, std::string>>;  // value, file

Attrs merge_attributes(const Attrs& inherited, const std::string& file,
                       const std::optional<YAML::Node>& node) {
  Attrs out = inherited;
  if (!node) return out;
  if (!node->IsMap()) yaml::fail(file, *node, "attributes", "expected a map");
  for (const auto& e : *node)
    out[normal_key(yaml::as_string(file, e.first, "attributes"))] = {e.second, file};
  return out;
}

const YAML::Node* attr(const Attrs& a, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (auto it = a.find(k); it != a.end()) return &it->second.first;
  return nullptr;
}

std::int64_t attr_int(const Attrs& a, const std::string& file, const char* key) {
  return yaml::as_positive_int(file, a.at(key).first, key);
}

// Storage attributes that change what Timeloop models and that mapex
// cannot state: refused at their key, with the reason.
void refuse_storage_attributes(const Attrs& a, const std::string& file) {
  static const std::vector<std::pair<const char*, const char*>> refused = {
      {"metadata_block_size", kSparse},
      {"metadata_datawidth", kSparse},
      {"metadata_word_bits", kSparse},
      {"metadata_storage_width", kSparse},
      {"metadata_width", kSparse},
      {"metadata_storage_depth", kSparse},
      {"metadata_depth", kSparse},
      {"compression_supported", kSparse},
      {"decompression_supported", kSparse},
      {"concordant_compressed_tile_traversal", kSparse},
      {"tile_partition_supported", kSparse},
      {"network_read", "user-specified networks are not read; mapex infers one per fan-out"},
      {"network_fill", "user-specified networks are not read; mapex infers one per fan-out"},
      {"network_drain", "user-specified networks are not read; mapex infers one per fan-out"},
      {"network_update", "user-specified networks are not read; mapex infers one per fan-out"},
      {"per_dataspace_bandwidth_consumption_scale", "mapex has no per-tensor bandwidth scale"},
  };
  for (const auto& [key, reason] : refused)
    if (auto it = a.find(key); it != a.end())
      yaml::fail(file, it->second.first, key,
                 std::string("cannot be carried over to mapex: ") + reason);
  if (auto it = a.find("cluster_size"); it != a.end())
    if (yaml::as_positive_int(file, it->second.first, "cluster_size") != 1)
      yaml::fail(file, it->second.first, "cluster_size",
                 "cannot be carried over to mapex: a buffer of several clusters per row has no "
                 "mapex counterpart (give cluster_size 1)");
  if (auto it = a.find("allow_overbooking"); it != a.end())
    if (yaml::as_bool(file, it->second.first, "allow_overbooking"))
      yaml::fail(file, it->second.first, "allow_overbooking",
                 "cannot be carried over to mapex: tiles always fit their buffers in mapex");
  if (auto it = a.find("min_utilization"); it != a.end())
    if (yaml::as_double(file, it->second.first, "min_utilization") != 0)
      yaml::fail(file, it->second.first, "min_utilization",
                 "cannot be carried over to mapex: a buffer's minimum fill has no mapex "
                 "counterpart");
}

std::optional<double> attr_bandwidth(const Attrs& a, const char* key) {
  if (auto it = a.find(key); it != a.end())
    return yaml::as_positive_double(it->second.second, it->second.first, key);
  return std::nullopt;
}

Storage read_storage(const std::string& file, const YAML::Node& name_node, const std::string& name,
                     const std::string& cls, std::int64_t count, const Attrs& a) {
  Storage s;
  s.name = name;
  s.name_node = name_node;
  s.file = file;
  refuse_storage_attributes(a, file);
  s.dram = cls.find("DRAM") != std::string::npos;
  if (auto t = attr(a, {"technology"}); t && t->IsScalar() && t->Scalar() == "DRAM") s.dram = true;
  const YAML::Node* bits = attr(a, {"word_bits", "word_width", "datawidth"});
  if (!bits) yaml::fail(file, name_node, "word_bits", "storage '" + name + "' needs word_bits");
  s.word_bits_node = *bits;
  const std::int64_t wb = yaml::as_positive_int(file, *bits, "word_bits");
  if (wb % 8 != 0 || wb > 1024)
    yaml::fail(file, *bits, "word_bits",
               "mapex words are whole bytes; expected a multiple of 8, got " + std::to_string(wb));
  s.word_bits = static_cast<int>(wb);
  if (auto b = attr(a, {"block_size", "n_words"}))
    s.block_size = yaml::as_positive_int(file, *b, "block_size");
  else if (auto w = attr(a, {"width", "memory_width", "data_storage_width"})) {
    const std::int64_t width = yaml::as_positive_int(file, *w, "width");
    if (width % wb != 0)
      yaml::fail(file, *w, "width",
                 "width " + std::to_string(width) + " is not a multiple of word_bits " +
                     std::to_string(wb));
    s.block_size = width / wb;
  }
  // Sizes in words, and in bytes (what mapex states), must fit 64 bits.
  auto words = [&](const YAML::Node& node, const char* key, std::int64_t n, std::int64_t per) {
    const auto w = checked_mul(n, per);
    if (!w || !checked_mul(*w, wb / 8))
      yaml::fail(file, node, key, "the size of '" + name + "' does not fit 64 bits");
    return *w;
  };
  if (auto e = attr(a, {"entries"}))
    s.size_words = words(*e, "entries", yaml::as_positive_int(file, *e, "entries"), 1);
  else if (auto d = attr(a, {"depth", "memory_depth", "data_storage_depth"}))
    s.size_words = words(*d, "depth", yaml::as_positive_int(file, *d, "depth"), s.block_size);
  else if (auto kb = attr(a, {"sizeKB"}))
    s.size_words = words(*kb, "sizeKB", yaml::as_positive_int(file, *kb, "sizeKB"), 1024 * 8) / wb;
  if (!s.dram && !s.size_words)
    yaml::fail(file, name_node, "depth",
               "storage '" + name +
                   "' has no size (depth, entries or sizeKB): Timeloop reads that as unbounded; "
                   "mapex buffers need a size");
  s.instances = attr(a, {"instances"}) ? attr_int(a, file, "instances") : count;
  if (attr(a, {"meshX"})) {
    s.mesh_x = attr_int(a, file, "meshX");
    if (s.instances % s.mesh_x != 0)
      yaml::fail(file, a.at("meshX").first, "meshX",
                 "meshX " + std::to_string(s.mesh_x) + " does not divide the " +
                     std::to_string(s.instances) + " instances of '" + name + "'");
    s.mesh_y = s.instances / s.mesh_x;
    if (attr(a, {"meshY"}) && attr_int(a, file, "meshY") != s.mesh_y)
      yaml::fail(file, a.at("meshY").first, "meshY",
                 "meshX x meshY must equal the " + std::to_string(s.instances) + " instances");
  } else if (attr(a, {"meshY"})) {
    yaml::fail(file, a.at("meshY").first, "meshY", "meshY needs meshX (as in Timeloop)");
  } else {
    s.mesh_x = s.instances;
  }
  s.read_bw = attr_bandwidth(a, "read_bandwidth");
  s.write_bw = attr_bandwidth(a, "write_bandwidth");
  s.shared_bw = attr_bandwidth(a, "shared_bandwidth");
  if (auto bw = attr_bandwidth(a, "bandwidth")) {  // deprecated: split in two halves
    s.read_bw = *bw / 2;
    s.write_bw = *bw / 2;
  }
  if (auto mb = attr(a, {"multiple_buffering"})) {
    const double v = yaml::as_double(file, *mb, "multiple_buffering");
    if (v != 1 && v != 2)
      yaml::fail(file, *mb, "multiple_buffering",
                 "mapex buffers are single (1) or double (2) buffered");
    s.double_buffered = v == 2;
  }
  if (auto e = attr(a, {"vector_access_energy"}))
    s.access_energy = yaml::as_double_in(file, *e, "vector_access_energy", 0, 1e9);
  return s;
}

void walk_tree(Chip& chip, const std::string& file, const YAML::Node& node, std::int64_t mult,
               const Attrs& inherited, bool root) {
  Obj m(file, node, root ? "architecture" : "a subtree");
  std::int64_t here = mult;
  if (root) {
    m.ignore("version");
    m.refuse("nodes", kV04);
    m.refuse("local", "Timeloop reads components only inside `subtree`");
  } else {
    const YAML::Node name_node = m.need("name");
    const auto [name, count] =
        split_range(file, name_node, yaml::as_string(file, name_node, "name"));
    if (chip.name == "timeloop") chip.name = name;
    here = mult * count;
  }
  const Attrs attrs = merge_attributes(inherited, file, m.get("attributes"));
  if (auto gcs = attr(attrs, {"global_cycle_seconds"}))
    chip.cycle_seconds = yaml::as_positive_double(file, *gcs, "global_cycle_seconds");
  if (auto local = m.get("local")) {
    if (!local->IsSequence()) yaml::fail(file, *local, "local", "expected a list of components");
    for (const auto& c : *local) {
      Obj cm(file, c, "a component");
      const YAML::Node name_node = cm.need("name");
      const auto [name, count] =
          split_range(file, name_node, yaml::as_string(file, name_node, "name"));
      const std::string cls =
          cm.has("class") ? yaml::as_string(file, cm.need("class"), "class") : "";
      const Attrs ca = merge_attributes(attrs, file, cm.get("attributes"));
      for (const char* k : {"required_actions", "enabled", "area_share", "actions", "subclass"})
        cm.ignore(k);
      cm.refuse("constraints", kV04);
      cm.refuse("spatial", kV04);
      cm.finish();
      if (class_has(cls, {"DRAM", "SRAM", "regfile", "smartbuffer", "storage"})) {
        chip.storages.push_back(read_storage(file, name_node, name, cls, here * count, ca));
      } else if (class_has(cls, {"mac", "compute"})) {
        if (!chip.mac_name.empty())
          yaml::fail(file, name_node, "class",
                     "a second arithmetic component ('" + name + "' after '" + chip.mac_name +
                         "'); Timeloop has one arithmetic level");
        chip.mac_name = name;
        chip.mac_instances =
            attr(ca, {"instances"}) ? attr_int(ca, file, "instances") : here * count;
      } else if (class_has(cls, {"XY_NoC", "Legacy", "ReductionTree", "SimpleMulticast"})) {
        yaml::fail(file, name_node, "class",
                   "cannot be carried over to mapex: user-specified networks are not read; "
                   "mapex infers one per fan-out");
      }
      // Any other class is an Accelergy-only component Timeloop ignores too.
    }
  }
  if (auto sub = m.get("subtree")) {
    if (!sub->IsSequence() || sub->size() != 1)
      yaml::fail(file, *sub, "subtree",
                 "expected a list of one subtree (Timeloop reads one subtree per level)");
    walk_tree(chip, file, (*sub)[0], here, attrs, false);
  }
  m.finish();
}

// Per-action energies of one ERT table: the largest entry of each action
// (Accelergy lists several argument variants; Timeloop charges random
// accesses, the dearest).
std::map<std::string, double> ert_actions(const std::string& file, const YAML::Node& table) {
  std::map<std::string, double> out;
  const YAML::Node actions = table["actions"];
  if (!actions || !actions.IsSequence())
    yaml::fail(file, table, "actions", "expected a list of actions in the ERT table");
  for (const auto& a : actions) {
    const std::string name = yaml::as_string(file, a["name"], "name");
    const double e = yaml::as_double_in(file, a["energy"], "energy", 0, 1e9);
    auto [it, fresh] = out.emplace(name, e);
    if (!fresh) it->second = std::max(it->second, e);
  }
  return out;
}

void apply_ert(Chip& chip, const Section& sec) {
  Obj top(sec.file, sec.value, "ERT");
  top.ignore("version");
  const YAML::Node tables = top.need("tables");
  top.finish();
  if (!tables.IsSequence()) yaml::fail(sec.file, tables, "tables", "expected a list of tables");
  for (const auto& t : tables) {
    // The last component of `system.chip.PE[0..167].spad`: dots inside a
    // range are not separators.
    const std::string full = yaml::as_string(sec.file, t["name"], "name");
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      if (full[i] == '[') ++depth;
      if (full[i] == ']') --depth;
      if (full[i] == '.' && depth == 0) start = i + 1;
    }
    const std::string leaf = full.substr(start);
    const std::string name = split_range(sec.file, t["name"], leaf).first;
    const auto actions = ert_actions(sec.file, t);
    auto pick = [&](std::initializer_list<const char*> names) -> std::optional<double> {
      for (const char* n : names)
        if (auto it = actions.find(n); it != actions.end()) return it->second;
      return std::nullopt;
    };
    if (name == chip.mac_name) {
      auto e = pick({"compute", "mac_random", "mac"});
      if (!e)
        yaml::fail(sec.file, t, "actions",
                   "the arithmetic's table needs a compute (or mac_random) action");
      chip.mac_pj = *e;
      continue;
    }
    for (auto& s : chip.storages) {
      if (s.name != name) continue;
      const double block = static_cast<double>(s.block_size);
      s.read_pj = pick({"read", "random_read"}).value_or(0) / block;
      s.write_pj = pick({"write", "random_fill", "update"}).value_or(0) / block;
      s.leak_pj = pick({"leak"}).value_or(0);
      s.access_energy.reset();
    }
  }
}

Chip read_chip(const Section& arch, const Section* ert) {
  Chip chip;
  walk_tree(chip, arch.file, arch.value, 1, {}, true);
  if (chip.storages.empty())
    yaml::fail(arch.file, arch.value, "architecture",
               "no storage level (DRAM, SRAM, regfile, ...)");
  if (chip.mac_name.empty())
    yaml::fail(arch.file, arch.value, "architecture", "no arithmetic component (class mac, ...)");
  for (auto& s : chip.storages)
    if (s.access_energy)
      s.read_pj = s.write_pj = *s.access_energy / static_cast<double>(s.block_size);
  if (ert) apply_ert(chip, *ert);
  const Storage& top = chip.storages.front();
  if (!top.dram)
    yaml::fail(top.file, top.name_node, "class",
               "the outermost storage '" + top.name + "' must be DRAM (mapex's outermost level)");
  if (top.instances != 1)
    yaml::fail(top.file, top.name_node, "instances", "mapex has one DRAM; give it one instance");
  if (chip.storages.size() < 2)
    yaml::fail(top.file, top.name_node, "architecture", "mapex needs a buffer below DRAM");
  std::set<std::string> names;
  for (const auto& s : chip.storages) {
    if (!names.insert(s.name).second)
      yaml::fail(s.file, s.name_node, "name", "storage '" + s.name + "' is named twice");
    if (&s != &top && s.dram)
      yaml::fail(s.file, s.name_node, "class", "a DRAM inside the chip; mapex has one, outermost");
    if (s.word_bits != top.word_bits)
      yaml::fail(
          s.file, s.word_bits_node, "word_bits",
          "storage '" + s.name + "' has " + std::to_string(s.word_bits) + "-bit words and '" +
              top.name + "' " + std::to_string(top.word_bits) +
              ": mapex word widths are per tensor, not per level; give every level one width");
  }
  if (chip.mac_instances != chip.storages.back().instances)
    yaml::fail(arch.file, arch.value, "instances",
               "the arithmetic has " + std::to_string(chip.mac_instances) +
                   " instances and the innermost storage '" + chip.storages.back().name + "' " +
                   std::to_string(chip.storages.back().instances) +
                   ": mapex has no fan-out below its innermost buffer");
  return chip;
}

/// The spatial fan-out from storage `outer` to the next storage inward,
/// as [X, Y] (both 1: none).
std::array<std::int64_t, 2> fanout(const Storage& outer, const Storage& inner) {
  if (inner.instances % outer.instances != 0 || inner.mesh_x % outer.mesh_x != 0 ||
      inner.mesh_y % outer.mesh_y != 0)
    yaml::fail(inner.file, inner.name_node, "instances",
               "the instances (" + std::to_string(inner.instances) + ", mesh " +
                   std::to_string(inner.mesh_x) + " x " + std::to_string(inner.mesh_y) + ") of '" +
                   inner.name + "' are not a multiple of those of '" + outer.name + "' (" +
                   std::to_string(outer.instances) + ", mesh " + std::to_string(outer.mesh_x) +
                   " x " + std::to_string(outer.mesh_y) + ")");
  return {inner.mesh_x / outer.mesh_x, inner.mesh_y / outer.mesh_y};
}

std::string spatial_name(const Storage& outer) { return outer.name + "_spatial"; }

std::string arch_yaml(const Chip& chip) {
  const double clock_mhz = 1e-6 / chip.cycle_seconds;
  const double word_bytes = chip.storages.front().word_bits / 8.0;
  auto gbps = [&](double words_per_cycle) {
    return num(words_per_cycle * word_bytes * clock_mhz / 1000);
  };
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << chip.name;
  out << YAML::Key << "clock_mhz" << YAML::Value << num(clock_mhz);
  out << YAML::Key << "word_bits" << YAML::Value << chip.storages.front().word_bits;
  out << YAML::Key << "mac" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
      << "energy_pj" << YAML::Value << num(chip.mac_pj) << YAML::Key << "per_pe" << YAML::Value << 1
      << YAML::EndMap;
  out << YAML::Key << "levels" << YAML::Value << YAML::BeginSeq;
  for (size_t k = chip.storages.size(); k-- > 0;) {
    const Storage& s = chip.storages[k];
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name;
    out << YAML::Key << "kind" << YAML::Value << (s.dram ? "dram" : "buffer");
    if (!s.dram) {
      out << YAML::Key << "size_bytes" << YAML::Value
          << *s.size_words * static_cast<std::int64_t>(s.word_bits / 8);
      out << YAML::Key << "double_buffered" << YAML::Value << s.double_buffered;
    } else {
      out << YAML::Key << "block_bytes" << YAML::Value
          << s.block_size * static_cast<std::int64_t>(s.word_bits / 8);
    }
    out << YAML::Key << "read_energy_pj" << YAML::Value << num(s.read_pj);
    out << YAML::Key << "write_energy_pj" << YAML::Value << num(s.write_pj);
    if (s.leak_pj > 0)
      out << YAML::Key << "idle_energy_pj_per_cycle" << YAML::Value
          << num(s.leak_pj * static_cast<double>(s.instances));
    if (s.shared_bw) out << YAML::Key << "bandwidth_gbps" << YAML::Value << gbps(*s.shared_bw);
    if (s.read_bw) out << YAML::Key << "read_bandwidth_gbps" << YAML::Value << gbps(*s.read_bw);
    if (s.write_bw) out << YAML::Key << "write_bandwidth_gbps" << YAML::Value << gbps(*s.write_bw);
    // mapex's DRAM needs a bandwidth; Timeloop's without one is unlimited
    // (1e12 GB/s stands for that in mapex files).
    if (s.dram && !s.shared_bw) out << YAML::Key << "bandwidth_gbps" << YAML::Value << "1e12";
    out << YAML::EndMap;
    if (k == 0) break;
    const auto f = fanout(chip.storages[k - 1], s);
    if (f[0] * f[1] == 1) continue;
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
        << spatial_name(chip.storages[k - 1]);
    out << YAML::Key << "kind" << YAML::Value << "spatial";
    out << YAML::Key << "shape" << YAML::Value << YAML::Flow << YAML::BeginSeq << f[0] << f[1]
        << YAML::EndSeq;
    out << YAML::Key << "split_placement" << YAML::Value << "one_axis";
    // Timeloop's inferred networks: multicast and spatial reduction, no
    // bandwidth limit (mapex's defaults).
    out << YAML::Key << "noc" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ------------------------------------------------------------ constraints

/// Factors `K=4 C<=8 P>=2 R0` (commas or spaces between), or a list of
/// such items. Returns (dimension, relation, value, node).
struct Factor {
  int dim;
  std::string rel;  // "=", "<=", ">="
  std::int64_t value;
};

std::vector<Factor> read_factors(const Problem& p, const std::string& file,
                                 const YAML::Node& node) {
  std::string text;
  if (node.IsSequence()) {
    for (const auto& item : node) text += yaml::as_scalar(file, item, "factors") + " ";
  } else {
    text = yaml::as_scalar(file, node, "factors");
  }
  text = text.substr(0, text.find('#'));
  static const std::regex item(R"(([A-Za-z_]+)\s*(<=|>=|=)?\s*([0-9]+)(,[0-9]+)?)");
  std::vector<Factor> out;
  std::string rest = text;
  std::smatch m;
  while (std::regex_search(rest, m, item)) {
    const std::string between = m.prefix().str();
    if (between.find_first_not_of(" \t,") != std::string::npos)
      yaml::fail(file, node, "factors", "cannot read '" + between + "' in '" + text + "'");
    if (m[4].matched)
      yaml::fail(file, node, "factors",
                 "cannot be carried over to mapex: a residual factor (" + m[0].str() +
                     ") is a last iteration of another size; mapex's edge tiles are not stated "
                     "per loop");
    Factor f;
    f.dim = dim_of(p, file, node, "factors", m[1].str());
    f.rel = m[2].matched ? m[2].str() : "=";
    try {
      f.value = std::stoll(m[3].str());
    } catch (const std::exception&) {
      yaml::fail(file, node, "factors", "factor of " + m[1].str() + " is out of range");
    }
    const std::int64_t bound = p.bounds[static_cast<size_t>(f.dim)];
    if (f.value == 0 && f.rel == "=") f.value = bound;  // Timeloop: 0 is the whole dimension
    if (f.value <= 0)
      yaml::fail(file, node, "factors", "factor of " + m[1].str() + " must be positive");
    if (f.value > bound && f.rel != "<=")
      yaml::fail(file, node, "factors",
                 "factor " + std::to_string(f.value) + " of " + m[1].str() + " exceeds its bound " +
                     std::to_string(bound));
    out.push_back(f);
    rest = m.suffix().str();
  }
  if (rest.find_first_not_of(" \t,") != std::string::npos)
    yaml::fail(file, node, "factors", "cannot read '" + rest + "' in '" + text + "'");
  return out;
}

/// A permutation, innermost first: one character per dimension when every
/// name is one character (Timeloop's form), else names separated by spaces
/// or commas, or a list. `_` splits innermost from outermost pins.
std::pair<std::vector<int>, std::vector<int>> read_permutation(const Problem& p,
                                                               const std::string& file,
                                                               const YAML::Node& node) {
  std::vector<std::string> tokens;
  if (node.IsSequence()) {
    for (const auto& t : node) tokens.push_back(yaml::as_scalar(file, t, "permutation"));
  } else {
    const std::string text = yaml::as_scalar(file, node, "permutation");
    const bool single = std::all_of(p.dims.begin(), p.dims.end(),
                                    [](const std::string& d) { return d.size() == 1; });
    std::string cur;
    for (char c : text.substr(0, text.find('#'))) {
      if (c == ' ' || c == ',' || c == '\t') {
        if (!cur.empty()) tokens.push_back(cur);
        cur.clear();
      } else if (single || c == '_') {
        if (!cur.empty()) tokens.push_back(cur);
        cur.clear();
        tokens.push_back(std::string(1, c));
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) tokens.push_back(cur);
  }
  std::pair<std::vector<int>, std::vector<int>> out;
  bool suffix = false;
  std::set<int> seen;
  for (const auto& t : tokens) {
    if (t == "_") {
      suffix = true;
      continue;
    }
    const int d = dim_of(p, file, node, "permutation", t);
    if (!seen.insert(d).second)
      yaml::fail(file, node, "permutation", "dimension '" + t + "' appears twice");
    (suffix ? out.second : out.first).push_back(d);
  }
  return out;
}

struct LevelRules {
  std::map<int, std::int64_t> max_factor, min_factor;
  std::vector<int> innermost;  // outermost first
  std::vector<std::string> keep, bypass;
  bool has_perm = false;
};

struct ChipIndex {
  // Storage name -> (mapex level name of the storage, of its fan-out or "").
  std::map<std::string, std::pair<std::string, std::array<std::int64_t, 2>>> fan;
  std::string dram;
};

ChipIndex index_chip(const Chip& chip) {
  ChipIndex ix;
  for (size_t k = 0; k < chip.storages.size(); ++k) {
    std::array<std::int64_t, 2> f{1, 1};
    if (k + 1 < chip.storages.size()) f = fanout(chip.storages[k], chip.storages[k + 1]);
    ix.fan[chip.storages[k].name] = {f[0] * f[1] > 1 ? spatial_name(chip.storages[k]) : "", f};
  }
  ix.dram = chip.storages.front().name;
  return ix;
}

void set_factor(const std::string& file, const YAML::Node& node, const Problem& p,
                std::map<int, std::int64_t>& limits, int dim, std::int64_t v) {
  if (!limits.emplace(dim, v).second)
    yaml::fail(file, node, "factors",
               "factor of " + p.dims[static_cast<size_t>(dim)] +
                   " is given twice for this level (Timeloop refuses a re-specification)");
}

void add_factors(LevelRules& r, const Problem& p, const std::string& file, Obj& m) {
  if (auto f = m.get("factors"))
    for (const auto& fac : read_factors(p, file, *f)) {
      if (fac.rel != ">=") set_factor(file, *f, p, r.max_factor, fac.dim, fac.value);
      if (fac.rel != "<=") set_factor(file, *f, p, r.min_factor, fac.dim, fac.value);
    }
  for (const char* key : {"default_max_factor", "default_min_factor"})
    if (auto d = m.get(key)) {
      const std::int64_t v = yaml::as_positive_int(file, *d, key);
      auto& limits = std::string(key) == "default_max_factor" ? r.max_factor : r.min_factor;
      for (int dim = 0; dim < static_cast<int>(p.dims.size()); ++dim) limits.emplace(dim, v);
    }
}

// A spatial constraint's `split`: the dimensions before it in the
// permutation lie on X, the rest on Y. mapex places a split on any axis it
// fits, so the rule carries over exactly when a fan-out axis of size 1
// forbids splitting its dimensions (max factor 1), or when at most one
// dimension may split at all.
void add_split(LevelRules& r, const Problem& p, const std::string& file, const YAML::Node& node,
               std::int64_t split, const std::vector<int>& perm,
               const std::array<std::int64_t, 2>& shape) {
  std::vector<int> order = perm;
  for (int d = 0; d < static_cast<int>(p.dims.size()); ++d)
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  std::vector<int> free_dims;
  for (size_t i = 0; i < order.size(); ++i) {
    const int d = order[i];
    const std::int64_t axis = static_cast<std::int64_t>(i) < split ? shape[0] : shape[1];
    auto it = r.max_factor.find(d);
    if (it != r.max_factor.end() && it->second == 1) continue;
    if (axis == 1) {
      if (r.min_factor.count(d) && r.min_factor[d] > 1)
        yaml::fail(file, node, "split",
                   "dimension " + p.dims[static_cast<size_t>(d)] +
                       " must split but lies on an axis of size 1");
      r.max_factor[d] = 1;
      continue;
    }
    free_dims.push_back(d);
  }
  if (shape[0] > 1 && shape[1] > 1 && free_dims.size() > 1)
    yaml::fail(file, node, "split",
               "cannot be carried over to mapex: it places dimensions on the X and Y axes of a "
               "2-D fan-out, and mapex places a split on any axis it fits; pin all but one "
               "spatial dimension to 1 or leave the split out");
  if (free_dims.size() == 1) {
    const int d = free_dims[0];
    const size_t pos =
        static_cast<size_t>(std::find(order.begin(), order.end(), d) - order.begin());
    const std::int64_t axis = static_cast<std::int64_t>(pos) < split ? shape[0] : shape[1];
    auto [it, fresh] = r.max_factor.emplace(d, axis);
    if (!fresh) it->second = std::min(it->second, axis);
  }
}

void read_constraint(std::map<std::string, LevelRules>& rules, double& min_util, const Problem& p,
                     const ChipIndex& ix, const std::string& file, const YAML::Node& node) {
  Obj m(file, node, "a constraint");
  const YAML::Node target_node = m.has("target") ? m.need("target") : m.need("name");
  m.ignore("name");
  const std::string target = yaml::as_string(file, target_node, "target");
  auto level = ix.fan.find(target);
  if (level == ix.fan.end())
    yaml::fail(file, target_node, "target", "unknown storage level '" + target + "'");
  const YAML::Node type_node = m.need("type");
  const std::string type = yaml::as_string(file, type_node, "type");
  m.refuse("attributes", kV04);
  for (const char* key : {"no_reuse", "no_temporal_reuse", "no_multicast_no_reduction",
                          "no_link_transfer", "rmw_first_update", "no_coalesce"})
    m.refuse(key, "mapex models every reuse, multicast and link transfer it can");
  m.refuse("remainders", "mapex constraints state tiles that divide or edge tiles, not remainders");
  if (type == "temporal") {
    LevelRules& r = rules[target];
    add_factors(r, p, file, m);
    if (auto perm = m.get("permutation")) {
      const auto [inner, outer] = read_permutation(p, file, *perm);
      if (!outer.empty())
        yaml::fail(file, *perm, "permutation",
                   "cannot be carried over to mapex: loops pinned outermost (after '_') have no "
                   "mapex constraint");
      if (r.has_perm)
        yaml::fail(file, *perm, "permutation", "given twice for level '" + target + "'");
      r.has_perm = true;
      r.innermost.assign(inner.rbegin(), inner.rend());
    }
  } else if (type == "spatial") {
    const auto& [spatial, shape] = level->second;
    if (spatial.empty())
      yaml::fail(file, target_node, "target",
                 "storage '" + target + "' has no spatial fan-out below it");
    LevelRules& r = rules[spatial];
    add_factors(r, p, file, m);
    std::vector<int> perm;
    if (auto pn = m.get("permutation")) perm = read_permutation(p, file, *pn).first;
    if (auto split = m.get("split"))
      add_split(r, p, file, *split, yaml::as_int(file, *split, "split"), perm, shape);
  } else if (type == "datatype" || type == "bypass" || type == "bypassing" || type == "dataspace") {
    // mapex's DRAM keeps every tensor: a keep there says nothing more, a
    // bypass cannot be carried.
    LevelRules dram_rules;
    LevelRules& r = target == ix.dram ? dram_rules : rules[target];
    auto names = [&](const char* key, std::vector<std::string>& into) {
      if (auto n = m.get(key)) {
        for (const auto& s : yaml::as_string_list(file, *n, key)) {
          bool known = false;
          for (const auto& ds : p.spaces) known = known || ds.name == s;
          if (!known) yaml::fail(file, *n, key, "unknown data space '" + s + "'");
          into.push_back(s);
        }
      }
    };
    names("keep", r.keep);
    names("bypass", r.bypass);
    if (target == ix.dram && !r.bypass.empty())
      yaml::fail(file, node, "bypass",
                 "cannot be carried over to mapex: mapex's DRAM keeps every tensor");
  } else if (type == "utilization" || type == "parallelism") {
    const YAML::Node v = m.need("min");
    min_util = yaml::as_double_in(file, v, "min", 0, 1);
  } else if (type == "max_overbooked_proportion") {
    yaml::fail(file, type_node, "type",
               "cannot be carried over to mapex: tiles always fit their buffers in mapex");
  } else {
    yaml::fail(file, type_node, "type",
               "expected temporal, spatial, bypass (datatype, dataspace) or utilization, got '" +
                   type + "'");
  }
  m.finish();
}

void read_constraint_list(std::map<std::string, LevelRules>& rules, double& min_util,
                          const Problem& p, const ChipIndex& ix, const Section& sec) {
  YAML::Node list = sec.value;
  if (list.IsMap()) {
    Obj m(sec.file, list, sec.key.Scalar());
    m.ignore("version");
    // Node::reset rebinds; assignment would overwrite the section itself.
    list.reset(m.has("targets") ? m.need("targets") : m.need("constraints"));
    m.finish();
  }
  if (list.IsNull()) return;
  if (!list.IsSequence())
    yaml::fail(sec.file, list, sec.key.Scalar(), "expected a list of constraints (targets)");
  for (const auto& c : list) read_constraint(rules, min_util, p, ix, sec.file, c);
}

std::string constraints_yaml(const Problem& p, const Chip& chip, const Document& doc) {
  const ChipIndex ix = index_chip(chip);
  std::map<std::string, LevelRules> rules;
  double min_util = 0;
  for (const char* key : {"architecture_constraints", "mapspace_constraints"})
    if (const Section* s = doc.find(key)) read_constraint_list(rules, min_util, p, ix, *s);
  YAML::Emitter out;
  out << YAML::BeginMap;
  // Timeloop's mapper: factors that divide, tiles that fit, keep/bypass
  // explored where not fixed, any number of dimensions on one fan-out.
  out << YAML::Key << "factors_only" << YAML::Value << true;
  out << YAML::Key << "check_capacity" << YAML::Value << true;
  out << YAML::Key << "explore_bypass" << YAML::Value << true;
  out << YAML::Key << "max_parallel_dims" << YAML::Value << p.dims.size();
  if (min_util > 0) out << YAML::Key << "min_utilization" << YAML::Value << num(min_util);
  if (!rules.empty()) {
    out << YAML::Key << "levels" << YAML::Value << YAML::BeginMap;
    for (const auto& [level, r] : rules) {
      out << YAML::Key << level << YAML::Value << YAML::Flow << YAML::BeginMap;
      auto limits = [&](const char* key, const std::map<int, std::int64_t>& l) {
        if (l.empty()) return;
        out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (const auto& [d, v] : l)
          out << YAML::Key << p.dims[static_cast<size_t>(d)] << YAML::Value << v;
        out << YAML::EndMap;
      };
      limits("max_factor", r.max_factor);
      limits("min_factor", r.min_factor);
      if (!r.innermost.empty()) {
        out << YAML::Key << "innermost" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (int d : r.innermost) out << p.dims[static_cast<size_t>(d)];
        out << YAML::EndSeq;
      }
      for (const auto& [key, list] : {std::pair{"keep", &r.keep}, {"bypass", &r.bypass}})
        if (!list->empty()) {
          out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
          for (const auto& s : *list) out << s;
          out << YAML::EndSeq;
        }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ----------------------------------------------------------------- mapping

struct Directives {
  std::map<int, std::int64_t> factors;
  std::vector<int> perm;  // innermost first, as given
  std::int64_t split = -1;
  bool seen = false;
};

/// A Timeloop mapping (a list of directives) as a mapex mapping of `op` on
/// `arch`, whose data levels carry the Timeloop storage names.
Mapping read_mapping(const std::string& file, const YAML::Node& list, const Operator& op,
                     const Architecture& arch) {
  if (!list.IsSequence()) yaml::fail(file, list, "mapping", "expected a list of directives");
  Problem p;
  for (const auto& d : op.dims()) {
    p.dims.push_back(d.name);
    p.bounds.push_back(d.bound);
  }
  const size_t nd = p.dims.size();
  const size_t nl = static_cast<size_t>(arch.num_levels());
  std::vector<Directives> temporal(nl), spatial(nl);
  std::vector<std::vector<bool>> keep(nl);
  for (const auto& node : list) {
    Obj m(file, node, "a mapping directive");
    const YAML::Node target_node = m.need("target");
    const std::string target = yaml::as_string(file, target_node, "target");
    const int li = arch.find_level(target);
    if (li < 0 || !arch.levels()[static_cast<size_t>(li)].holds_data())
      yaml::fail(file, target_node, "target",
                 "unknown storage level '" + target + "' of architecture '" + arch.name() + "'");
    const YAML::Node type_node = m.need("type");
    const std::string type = yaml::as_string(file, type_node, "type");
    if (type == "temporal" || type == "spatial") {
      Directives& d = (type == "temporal" ? temporal : spatial)[static_cast<size_t>(li)];
      if (d.seen)
        yaml::fail(file, type_node, "type", type + " directive given twice for '" + target + "'");
      d.seen = true;
      if (auto f = m.get("factors"))
        for (const auto& fac : read_factors(p, file, *f)) {
          if (fac.rel != "=")
            yaml::fail(file, *f, "factors", "a mapping gives exact factors (D=n), not bounds");
          d.factors[fac.dim] = fac.value;
        }
      if (auto perm = m.get("permutation")) d.perm = read_permutation(p, file, *perm).first;
      if (type == "spatial")
        if (auto s = m.get("split")) d.split = yaml::as_int(file, *s, "split");
      if (type == "spatial" &&
          (li == 0 || arch.levels()[static_cast<size_t>(li - 1)].kind != LevelKind::kSpatial))
        for (const auto& [dim, v] : d.factors)
          if (v > 1)
            yaml::fail(file, target_node, "target",
                       "storage '" + target + "' has no spatial fan-out below it");
    } else if (type == "datatype" || type == "bypass" || type == "dataspace") {
      auto& k = keep[static_cast<size_t>(li)];
      k.assign(op.tensors().size(), true);
      auto mark = [&](const char* key, bool value) {
        if (auto n = m.get(key))
          for (const auto& s : yaml::as_string_list(file, *n, key)) {
            size_t t = 0;
            while (t < op.tensors().size() && op.tensors()[t].name != s) ++t;
            if (t == op.tensors().size())
              yaml::fail(file, *n, key, "unknown data space '" + s + "'");
            k[t] = value;
          }
      };
      mark("keep", true);
      mark("bypass", false);
      if (arch.levels()[static_cast<size_t>(li)].kind == LevelKind::kDram) {
        if (std::find(k.begin(), k.end(), false) != k.end())
          yaml::fail(file, target_node, "bypass",
                     "cannot be carried over to mapex: mapex's DRAM keeps every tensor");
        k.clear();
      }
    } else {
      yaml::fail(file, type_node, "type",
                 "expected temporal, spatial or datatype (bypass), got '" + type + "'");
    }
    for (const char* key : {"no_reuse", "no_temporal_reuse", "no_multicast_no_reduction",
                            "no_link_transfer", "rmw_first_update", "no_coalesce"})
      m.refuse(key, "mapex models every reuse, multicast and link transfer it can");
    m.finish();
  }
  std::vector<LevelMapping> levels(nl);
  std::vector<std::int64_t> span(nd, 1);
  auto factor = [&](const Directives& d, size_t dim) {
    auto it = d.factors.find(static_cast<int>(dim));
    return it == d.factors.end() ? std::int64_t{1} : it->second;
  };
  for (size_t i = 0; i < nl; ++i) {
    const Level& level = arch.levels()[i];
    LevelMapping& lm = levels[i];
    if (level.kind == LevelKind::kSpatial) {
      const Directives& d = spatial[i + 1 < nl ? i + 1 : i];
      lm.split.assign(nd, 1);
      for (size_t dim = 0; dim < nd; ++dim) lm.split[dim] = factor(d, dim);
      // Placement: the first `split` loops of the permutation on X (axis
      // 0), the others on Y (axis 1).
      std::vector<int> order = d.perm;
      for (int dim = 0; dim < static_cast<int>(nd); ++dim)
        if (std::find(order.begin(), order.end(), dim) == order.end()) order.push_back(dim);
      const std::int64_t split = d.split < 0 ? static_cast<std::int64_t>(nd) : d.split;
      lm.axes.assign(nd, std::vector<std::int64_t>(level.shape.size(), 1));
      for (size_t pos = 0; pos < order.size(); ++pos) {
        const size_t dim = static_cast<size_t>(order[pos]);
        const size_t axis = static_cast<std::int64_t>(pos) < split ? 0 : 1;
        if (axis >= level.shape.size()) {
          if (lm.split[dim] > 1)
            throw InputError(SourceLocation{file, list.Mark().line + 1, list.Mark().column + 1},
                             "split",
                             "level '" + level.name + "' has one axis; dimension " + p.dims[dim] +
                                 " is placed on Y");
          continue;
        }
        lm.axes[dim][axis] = lm.split[dim];
      }
      for (size_t dim = 0; dim < nd; ++dim) span[dim] *= lm.split[dim];
      continue;
    }
    const Directives& d = temporal[i];
    for (size_t dim = 0; dim < nd; ++dim) span[dim] *= factor(d, dim);
    lm.tile = span;
    std::vector<int> order = d.perm;
    for (int dim = 0; dim < static_cast<int>(nd); ++dim)
      if (std::find(order.begin(), order.end(), dim) == order.end()) order.push_back(dim);
    lm.order.assign(order.rbegin(), order.rend());
    lm.keep = keep[i];
  }
  for (size_t dim = 0; dim < nd; ++dim)
    if (span[dim] != p.bounds[dim])
      throw InputError(
          SourceLocation{file, list.Mark().line + 1, list.Mark().column + 1}, "mapping",
          "the factors of " + p.dims[dim] + " multiply to " + std::to_string(span[dim]) +
              "; the problem's bound is " + std::to_string(p.bounds[dim]));
  Mapping mapping(std::move(levels));
  if (auto error = mapping.structural_error(op, arch))
    throw InputError(SourceLocation{file, list.Mark().line + 1, list.Mark().column + 1}, "mapping",
                     *error);
  return mapping;
}

const Section& need_section(const Document& doc, const char* key, const std::string& origin,
                            const std::string& why) {
  if (const Section* s = doc.find(key)) return *s;
  throw InputError(SourceLocation{origin, 0, 0}, key, "missing: " + why);
}

void refuse_top_level(const Document& doc) {
  for (const auto& [key, reason] : std::vector<std::pair<const char*, std::string>>{
           {"sparse_optimizations", kSparse},
           {"variables", kV04},
           {"globals", kV04},
           {"components", kV04},
           {"renames", kV04},
           {"arch",
            "the v0.2 `arch: storage` list is not read; give the v0.3 "
            "`architecture: subtree/local` tree"},
           {"mapspace", "the old `mapspace:` block is not read; give `mapspace_constraints`"}})
    if (const Section* s = doc.find(key))
      yaml::fail(s->file, s->key, key, "cannot be carried over to mapex: " + reason);
  // Sections without a mapex meaning: the mapper's and model's settings
  // (mapex has its own searchers), area tables, Accelergy's summaries.
  static const std::set<std::string> read = {
      "problem", "architecture", "architecture_constraints", "mapspace_constraints",
      "mapping", "ERT"};
  static const std::set<std::string> ignored = {"mapper",
                                                "model",
                                                "ART",
                                                "ART_summary",
                                                "ERT_summary",
                                                "compound_components",
                                                "dumped_by_timeloop_front_end",
                                                "flattened_architecture"};
  for (const auto& [key, s] : doc.sections())
    if (!read.count(key) && !ignored.count(key))
      yaml::fail(s.file, s.key, key,
                 "unknown Timeloop section; expected problem, architecture, "
                 "architecture_constraints, mapspace_constraints, mapping or ERT");
}

}  // namespace

bool is_timeloop_file(const std::string& path) {
  try {
    // Read through read_text, which refuses a directory: yaml-cpp leaks its
    // read buffer when the stream it reads fails (a directory does).
    const YAML::Node root = YAML::Load(yaml::read_text(path));
    if (!root.IsMap()) return false;
    for (const auto& e : root) {
      if (!e.first.IsScalar()) continue;
      const std::string k = normal_key(e.first.Scalar());
      if (k == "problem" || k == "architecture" || k == "arch" || k == "architecture_constraints" ||
          k == "mapspace_constraints" || k == "ERT" || k == "sparse_optimizations")
        return true;
      if (k == "mapping" && e.second.IsSequence()) return true;
    }
  } catch (const std::exception&) {
  }
  return false;
}

Imported import_files(const std::vector<std::string>& paths) {
  const Document doc = Document::read(paths);
  refuse_top_level(doc);
  const std::string origin = paths.empty() ? "" : paths.front();
  Imported out;
  std::optional<Problem> problem;
  if (const Section* s = doc.find("problem")) {
    problem = read_problem(*s);
    out.name = problem->name;
    out.workload_yaml = workload_yaml(*problem);
  }
  std::optional<Chip> chip;
  if (const Section* s = doc.find("architecture")) {
    chip = read_chip(*s, doc.find("ERT"));
    out.arch_yaml = arch_yaml(*chip);
  }
  const bool has_constraints =
      doc.find("architecture_constraints") || doc.find("mapspace_constraints");
  if (chip && problem) {
    out.constraints_yaml = constraints_yaml(*problem, *chip, doc);
  } else if (has_constraints) {
    need_section(doc, problem ? "architecture" : "problem", origin,
                 "Timeloop constraints are read with the problem and architecture they constrain");
  }
  if (const Section* s = doc.find("mapping"); s && s->value.IsSequence()) {
    need_section(doc, "problem", origin, "a Timeloop mapping is read with its problem");
    need_section(doc, "architecture", origin, "a Timeloop mapping is read with its architecture");
    const Network net = Network::parse(out.workload_yaml, converted_origin(s->file));
    const Architecture arch = Architecture::parse(out.arch_yaml, converted_origin(s->file));
    const Operator& op = net.layers().front().op;
    out.mapping_yaml = read_mapping(s->file, s->value, op, arch).to_yaml(op, arch);
  }
  return out;
}

ConstraintSpec load_constraints(const std::vector<std::string>& paths) {
  const auto imported = import_files(paths);
  if (imported.constraints_yaml.empty())
    throw InputError(SourceLocation{paths.back(), 0, 0}, "architecture_constraints",
                     "missing: Timeloop constraints are read with the problem and architecture "
                     "(give them in the same file, or as --workload and --arch)");
  const std::string origin = converted_origin(paths.back());
  return parse_constraint_spec(origin, yaml::load_text(imported.constraints_yaml, origin));
}

Mapping load_mapping(const std::string& path, const Operator& op, const Architecture& arch) {
  const Document doc = Document::read({path});
  const Section* s = doc.find("mapping");
  if (!s) throw InputError(SourceLocation{path, 0, 0}, "mapping", "missing: no Timeloop mapping");
  return read_mapping(s->file, s->value, op, arch);
}

}  // namespace mapex::timeloop
