// Reading an Architecture from YAML (moved out of the core file so that the library
// that mdc and the light commands load needs no yaml-cpp).

#include <cmath>
#include <cstring>
#include <limits>
#include <mapex/architecture.hpp>
#include <mapex/checked.hpp>
#include <mapex/operator.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "yaml_reader.hpp"

namespace mapex {

namespace {

// The real-valued keys, within their ranges (kEnergyPjRange, ...).
double energy(yaml::Map& m, const std::string& key, double fallback) {
  return m.double_in(key, kEnergyPjRange.low, kEnergyPjRange.high, fallback);
}
double bandwidth(yaml::Map& m, const std::string& key) {
  return m.double_in(key, kBandwidthGbpsRange.low, kBandwidthGbpsRange.high);
}

// A zero or negative size is a common slip when deriving a chip from a
// preset: name the level, not only the key (KAPLA §III-C template levels).
std::int64_t level_size(const std::string& origin, const YAML::Node& node,
                        const std::string& level) {
  const std::int64_t bytes = yaml::as_int(origin, node, "size_bytes");
  if (bytes <= 0)
    yaml::fail(origin, node, "size_bytes",
               "level '" + level + "' has size " + std::to_string(bytes) +
                   " bytes; a buffer needs a positive size");
  return bytes;
}

std::int64_t level_shape(const std::string& origin, const YAML::Node& node,
                         const std::string& level) {
  const std::int64_t n = yaml::as_int(origin, node, "shape");
  if (n <= 0)
    yaml::fail(origin, node, "shape",
               "level '" + level + "' has an array dimension of " + std::to_string(n) +
                   "; every dimension needs at least one unit");
  return n;
}

// Optional separate read and write bandwidths of a buffer or DRAM.
void read_ports(yaml::Map& m, Level& l) {
  for (const char* key : {"read_bandwidth_gbps", "write_bandwidth_gbps"}) {
    auto& port = key[0] == 'r' ? l.read_bandwidth_gbps : l.write_bandwidth_gbps;
    if (m.has(key))
      port = bandwidth(m, key);
    else
      m.allow(key);
  }
}

}  // namespace

namespace {

// `partitions:` of a buffer level: a list of {name, tensors, size_bytes,
// read_energy_pj, write_energy_pj}; energies default to the level's.
// Returns the partitions; the level's size is checked against their sum by
// the caller, at the key that states it.
std::vector<Partition> parse_partitions(const std::string& origin, const YAML::Node& node,
                                        const Level& level) {
  if (!node.IsSequence() || node.size() == 0)
    yaml::fail(origin, node, "partitions", "expected a non-empty list of partitions");
  std::vector<Partition> out;
  std::set<std::string> names, tensors;
  for (const auto& item : node) {
    yaml::Map m(origin, item, "a partition of level '" + level.name + "'");
    Partition p;
    const YAML::Node name_node = m.required("name");
    p.name = yaml::as_string(origin, name_node, "name");
    if (!names.insert(p.name).second)
      yaml::fail(origin, name_node, "name",
                 "partition '" + p.name + "' of level '" + level.name + "' is defined twice");
    const YAML::Node tensors_node = m.required("tensors");
    p.tensors = yaml::as_string_list(origin, tensors_node, "tensors");
    if (p.tensors.empty())
      yaml::fail(origin, tensors_node, "tensors", "a partition needs at least one tensor");
    for (const auto& t : p.tensors)
      if (!tensors.insert(t).second)
        yaml::fail(
            origin, tensors_node, "tensors",
            "tensor '" + t + "' is already in another partition of level '" + level.name + "'");
    p.size_bytes = level_size(origin, m.required("size_bytes"), level.name + "/" + p.name);
    p.read_energy_pj = energy(m, "read_energy_pj", level.read_energy_pj);
    p.write_energy_pj = energy(m, "write_energy_pj", level.write_energy_pj);
    m.finish();
    out.push_back(std::move(p));
  }
  return out;
}

// A buffer's size: `size_bytes`, or with `partitions` the sum of theirs
// (`size_bytes`, when also given, must equal it).
void parse_buffer_size(const std::string& origin, yaml::Map& m, Level& l) {
  auto parts = m.optional("partitions");
  if (!parts) {
    l.size_bytes = level_size(origin, m.required("size_bytes"), l.name);
    return;
  }
  l.partitions = parse_partitions(origin, *parts, l);
  std::int64_t total = 0;
  for (const auto& p : l.partitions)
    if (auto sum = checked_add(total, p.size_bytes))
      total = *sum;
    else
      yaml::fail(origin, *parts, "partitions",
                 "level '" + l.name + "': the partitions' sizes add up to more than " +
                     std::to_string(std::numeric_limits<std::int64_t>::max()) + " bytes");
  if (auto size = m.optional("size_bytes")) {
    l.size_bytes = level_size(origin, *size, l.name);
    if (l.size_bytes != total)
      yaml::fail(origin, *size, "size_bytes",
                 "level '" + l.name + "' has partitions adding up to " + std::to_string(total) +
                     " B; size_bytes says " + std::to_string(l.size_bytes) +
                     " B (leave it out or make it the sum)");
  }
  l.size_bytes = total;
}

/// One width in bits: a positive multiple of 8 (a word is a whole number of
/// bytes everywhere sizes and bandwidths are counted).
int word_width(const std::string& origin, const YAML::Node& node, const std::string& key) {
  const std::int64_t bits = yaml::as_positive_int(origin, node, key);
  if (bits % 8 != 0 || bits > 1024)
    yaml::fail(origin, node, key, "expected a multiple of 8 (8, 16, 32, ...)");
  return static_cast<int>(bits);
}

/// `output_word_bits` and `tensor_word_bits: {Name: bits}` (WordWidths).
WordWidths parse_word_widths(const std::string& origin, yaml::Map& top) {
  WordWidths widths;
  if (auto node = top.optional("output_word_bits"))
    widths.output_bits = word_width(origin, *node, "output_word_bits");
  if (auto node = top.optional("tensor_word_bits")) {
    if (!node->IsMap())
      yaml::fail(origin, *node, "tensor_word_bits",
                 "expected a map from tensor name to bits, e.g. {Output: 32}");
    for (const auto& entry : *node) {
      const std::string tensor = yaml::as_string(origin, entry.first, "tensor_word_bits");
      widths.by_tensor[tensor] = word_width(origin, entry.second, "tensor_word_bits");
    }
  }
  return widths;
}

}  // namespace

Architecture Architecture::load(const std::string& path) {
  // A Timeloop architecture (with its ERT when in the same file) is read
  // as the chip it describes (README, "Timeloop files").
  if (timeloop::is_timeloop_file(path)) {
    const auto imported = timeloop::import_files({path});
    if (imported.arch_yaml.empty())
      throw InputError(SourceLocation{path, 0, 0}, "architecture",
                       "missing: this Timeloop file has no architecture");
    return parse(imported.arch_yaml, timeloop::converted_origin(path));
  }
  return parse(yaml::read_text(path), path);
}

Architecture Architecture::parse(const std::string& yaml_text, const std::string& origin) {
  const YAML::Node root = yaml::load_text(yaml_text, origin);
  yaml::Map top(origin, root, "an architecture file");
  const std::string name = top.string("name");
  const double clock = top.double_in("clock_mhz", kClockMhzRange.low, kClockMhzRange.high);
  const YAML::Node bits_node = top.required("word_bits");
  const std::int64_t bits = yaml::as_positive_int(origin, bits_node, "word_bits");
  if (bits % 8 != 0 || bits > 1024)
    yaml::fail(origin, bits_node, "word_bits", "expected a multiple of 8 (8, 16, 32, ...)");
  const WordWidths widths = parse_word_widths(origin, top);
  const bool no_time_mux = top.boolean("no_time_mux", false);
  double mac_energy = 1;
  std::int64_t per_pe = 1;
  if (auto mac = top.optional("mac")) {
    yaml::Map m(origin, *mac, "mac");
    mac_energy = energy(m, "energy_pj", 1);
    if (auto node = m.optional("per_pe")) {
      per_pe = yaml::as_positive_int(origin, *node, "per_pe");
      if (per_pe > std::numeric_limits<int>::max())
        yaml::fail(origin, *node, "per_pe",
                   "expected at most " + std::to_string(std::numeric_limits<int>::max()) +
                       " MACs per PE, got " + std::to_string(per_pe));
    }
    m.finish();
  }
  const YAML::Node levels_node = top.required("levels");
  if (!levels_node.IsSequence() || levels_node.size() == 0)
    yaml::fail(origin, levels_node, "levels",
               "expected a non-empty list of levels, innermost first");
  top.finish();

  std::vector<Level> levels;
  std::set<std::string> names;
  std::int64_t pes = 1;  // product of the spatial shapes so far
  for (size_t i = 0; i < levels_node.size(); ++i) {
    const YAML::Node node = levels_node[i];
    yaml::Map m(origin, node, "a level");
    Level l;
    const YAML::Node name_node = m.required("name");
    l.name = yaml::as_string(origin, name_node, "name");
    if (!names.insert(l.name).second)
      yaml::fail(origin, name_node, "name", "level '" + l.name + "' is defined twice");
    const YAML::Node kind_node = m.required("kind");
    const std::string kind = yaml::as_string(origin, kind_node, "kind");
    if (kind == "buffer") {
      l.kind = LevelKind::kBuffer;
      l.double_buffered = m.boolean("double_buffered", true);
      l.read_energy_pj = energy(m, "read_energy_pj", 0);
      l.write_energy_pj = energy(m, "write_energy_pj", 0);
      parse_buffer_size(origin, m, l);  // after the energies: partitions default to them
      l.idle_energy_pj_per_cycle = energy(m, "idle_energy_pj_per_cycle", 0);
      if (m.has("bandwidth_gbps"))
        l.bandwidth_gbps = bandwidth(m, "bandwidth_gbps");
      else
        m.allow("bandwidth_gbps");
      read_ports(m, l);
    } else if (kind == "dram") {
      l.kind = LevelKind::kDram;
      if (i + 1 != levels_node.size())
        yaml::fail(origin, kind_node, "kind", "a dram level must be the last (outermost) level");
      l.bandwidth_gbps = bandwidth(m, "bandwidth_gbps");
      l.block_bytes = m.positive_int("block_bytes", 64);
      read_ports(m, l);
      l.read_energy_pj = energy(m, "read_energy_pj", 0);
      l.write_energy_pj = energy(m, "write_energy_pj", 0);
    } else if (kind == "spatial") {
      l.kind = LevelKind::kSpatial;
      const YAML::Node shape = m.required("shape");
      // Every spatial level multiplies the PEs below it: their product
      // (Architecture::num_pes) must fit an int64, checked where it breaks.
      auto add_axis = [&](const YAML::Node& s) {
        l.shape.push_back(level_shape(origin, s, l.name));
        if (auto product = checked_mul(pes, l.shape.back()))
          pes = *product;
        else
          yaml::fail(origin, s, "shape",
                     "level '" + l.name + "' brings the number of PEs over " +
                         std::to_string(std::numeric_limits<std::int64_t>::max()));
      };
      if (shape.IsScalar()) {
        add_axis(shape);
      } else if (shape.IsSequence() && shape.size() > 0) {
        for (const auto& s : shape) add_axis(s);
      } else {
        yaml::fail(origin, shape, "shape", "expected a positive integer or a list of them");
      }
      if (auto placement = m.optional("split_placement")) {
        const std::string value = yaml::as_string(origin, *placement, "split_placement");
        if (value == "one_axis")
          l.split_placement = SplitPlacement::kOneAxis;
        else if (value == "across_axes")
          l.split_placement = SplitPlacement::kAcrossAxes;
        else if (value == "flat")
          l.split_placement = SplitPlacement::kFlat;
        else
          yaml::fail(origin, *placement, "split_placement",
                     "expected one_axis, across_axes or flat, got '" + value + "'");
      }
      yaml::Map noc(origin, m.required("noc"), "noc");
      // Left out: the network does not limit (a level without a bandwidth
      // limit, as Timeloop's arithmetic-only fabrics).
      l.noc.bandwidth_gbps = noc.has("bandwidth_gbps") ? bandwidth(noc, "bandwidth_gbps") : 0;
      if (!noc.has("bandwidth_gbps")) noc.allow("bandwidth_gbps");
      l.noc.latency_cycles = noc.double_in("latency_cycles", kNocLatencyCyclesRange.low,
                                           kNocLatencyCyclesRange.high, 1);
      l.noc.hop_energy_pj = energy(noc, "hop_energy_pj", 0);
      l.noc.multicast = noc.boolean("multicast", true);
      l.noc.reduction = noc.boolean("reduction", true);
      l.noc.forwarding = noc.boolean("forwarding", false);
      noc.finish();
      l.idle_energy_pj_per_cycle = energy(m, "idle_energy_pj_per_cycle", 0);
    } else {
      yaml::fail(origin, kind_node, "kind", "expected buffer, spatial or dram, got '" + kind + "'");
    }
    m.finish();
    levels.push_back(std::move(l));
  }
  try {
    return make(name, clock, static_cast<int>(bits), mac_energy, static_cast<int>(per_pe),
                std::move(levels), widths)
        .with_no_time_mux(no_time_mux);
  } catch (const InputError& e) {
    yaml::fail(origin, levels_node, "levels", e.what());
  }
}

}  // namespace mapex
