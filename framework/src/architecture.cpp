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

std::string to_string(LevelKind kind) {
  switch (kind) {
    case LevelKind::kBuffer:
      return "buffer";
    case LevelKind::kSpatial:
      return "spatial";
    case LevelKind::kDram:
      return "dram";
  }
  return "buffer";
}

std::string to_string(SplitPlacement placement) {
  switch (placement) {
    case SplitPlacement::kOneAxis:
      return "one_axis";
    case SplitPlacement::kAcrossAxes:
      return "across_axes";
    case SplitPlacement::kFlat:
      return "flat";
  }
  return "one_axis";
}

std::int64_t Level::fanout() const {
  // Cannot overflow: Architecture::make checked the product of all shapes.
  if (kind != LevelKind::kSpatial) return 1;
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

// ---- Partitioned buffers ----

const Partition* Level::partition_of(const std::string& tensor) const {
  for (const auto& p : partitions)
    for (const auto& t : p.tensors)
      if (t == tensor) return &p;
  return nullptr;
}

double Level::read_energy_of(const std::string& tensor) const {
  const Partition* p = partition_of(tensor);
  return p ? p->read_energy_pj : read_energy_pj;
}

double Level::write_energy_of(const std::string& tensor) const {
  const Partition* p = partition_of(tensor);
  return p ? p->write_energy_pj : write_energy_pj;
}

// ---- end of partitioned buffers ----

int Architecture::find_level(const std::string& name) const {
  for (size_t i = 0; i < levels_.size(); ++i)
    if (levels_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::int64_t Architecture::num_pes() const { return instances(0) * levels_[0].fanout(); }

std::int64_t Architecture::instances(int level) const {
  std::int64_t n = 1;
  for (size_t i = static_cast<size_t>(level) + 1; i < levels_.size(); ++i) n *= levels_[i].fanout();
  return n;
}

double Architecture::bytes_per_cycle(double gbps) const { return gbps * 1e3 / clock_mhz_; }

namespace {

void mix(std::uint64_t& h, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 1099511628211ULL;  // FNV-1a 64
  }
}
void mix(std::uint64_t& h, const std::string& s) {
  mix(h, s.data(), s.size());
  mix(h, "\0", 1);
}
template <typename T>
void mix_value(std::uint64_t& h, T value) {
  mix(h, &value, sizeof value);
}

// An unpartitioned level adds nothing, so the hashes (and job ids) of
// every architecture written before partitions stay as they were.
void mix_partitions(std::uint64_t& h, const std::vector<Partition>& partitions) {
  for (const auto& p : partitions) {
    mix(h, p.name);
    for (const auto& t : p.tensors) mix(h, t);
    mix_value(h, p.size_bytes);
    mix_value(h, p.read_energy_pj);
    mix_value(h, p.write_energy_pj);
  }
}

}  // namespace

int Architecture::word_bits_of(const Tensor& t) const {
  if (auto it = widths_.by_tensor.find(t.name); it != widths_.by_tensor.end()) return it->second;
  if (t.role == TensorRole::kOutput && widths_.output_bits > 0) return widths_.output_bits;
  return word_bits_;
}

std::string Architecture::first_wide_tensor(const Operator& op) const {
  for (const auto& t : op.tensors())
    if (word_bits_of(t) != word_bits_) return t.name;
  return "";
}

bool Architecture::uniform_word_bits(const Operator& op) const {
  return first_wide_tensor(op).empty();
}

void require_uniform_word_bits(const Operator& op, const Architecture& arch,
                               const std::string& who) {
  const std::string tensor = arch.first_wide_tensor(op);
  if (tensor.empty()) return;
  const bool named = arch.word_widths().by_tensor.count(tensor) > 0;
  int bits = arch.word_bits();
  for (const auto& t : op.tensors())
    if (t.name == tensor) bits = arch.word_bits_of(t);
  throw InputError(SourceLocation{}, named ? "tensor_word_bits" : "output_word_bits",
                   who + " has one word size for every tensor; architecture '" + arch.name() +
                       "' gives tensor '" + tensor + "' of '" + op.name() + "' " +
                       std::to_string(bits) + "-bit words beside " +
                       std::to_string(arch.word_bits()) +
                       "-bit ones (use roofline, or one word_bits)");
}

int Architecture::first_split_ports() const {
  for (int i = 0; i < num_levels(); ++i)
    if (levels_[static_cast<size_t>(i)].split_ports()) return i;
  return -1;
}

std::uint64_t Architecture::content_hash() const {
  std::uint64_t h = 1469598103934665603ULL;
  mix(h, name_);
  mix_value(h, clock_mhz_);
  mix_value(h, word_bits_);
  // Mixed only when set, so chips without per-tensor widths keep their ids.
  if (!widths_.empty()) {
    mix(h, "word_widths");
    mix_value(h, widths_.output_bits);
    for (const auto& [tensor, bits] : widths_.by_tensor) {
      mix(h, tensor);
      mix_value(h, bits);
    }
  }
  mix_value(h, mac_energy_pj_);
  mix_value(h, macs_per_pe_);
  for (const auto& l : levels_) {
    mix(h, l.name);
    mix_value(h, static_cast<int>(l.kind));
    mix_value(h, l.size_bytes);
    mix_value(h, l.double_buffered);
    mix_value(h, l.read_energy_pj);
    mix_value(h, l.write_energy_pj);
    mix_value(h, l.bandwidth_gbps.value_or(-1.0));
    // Only when set, so the ids of existing chips do not change.
    if (l.split_ports()) {
      mix_value(h, l.read_bandwidth_gbps.value_or(-1.0));
      mix_value(h, l.write_bandwidth_gbps.value_or(-1.0));
    }
    mix_value(h, l.block_bytes);
    for (auto s : l.shape) mix_value(h, s);
    // Only when set, so that hashes (job ids) of files without it stay.
    if (l.split_placement != SplitPlacement::kOneAxis)
      mix_value(h, static_cast<int>(l.split_placement));
    mix_value(h, l.noc.bandwidth_gbps);
    mix_value(h, l.noc.latency_cycles);
    mix_value(h, l.noc.hop_energy_pj);
    mix_value(h, l.noc.multicast);
    mix_value(h, l.noc.reduction);
    mix_value(h, l.noc.forwarding);
    mix_value(h, l.idle_energy_pj_per_cycle);
    mix_partitions(h, l.partitions);
  }
  return h;
}

namespace {

// The rule for partitions: only buffers have them; each has a unique name,
// at least one tensor and a positive size; no tensor is in two partitions;
// and the sizes add up to the level's size (a partitioned level has no
// space besides its partitions).
std::optional<std::string> partitions_error(const Level& l) {
  if (l.partitions.empty()) return std::nullopt;
  const std::string where = "level '" + l.name + "'";
  if (l.kind != LevelKind::kBuffer) return where + ": only buffer levels can be partitioned";
  std::set<std::string> names, tensors;
  std::int64_t total = 0;
  for (const auto& p : l.partitions) {
    if (!names.insert(p.name).second) return where + ": partition '" + p.name + "' appears twice";
    if (p.tensors.empty()) return where + ": partition '" + p.name + "' names no tensor";
    for (const auto& t : p.tensors)
      if (!tensors.insert(t).second) return where + ": tensor '" + t + "' is in two partitions";
    if (p.size_bytes <= 0)
      return where + ": partition '" + p.name + "' has size_bytes " + std::to_string(p.size_bytes) +
             "; it needs a positive size";
    total += p.size_bytes;
  }
  if (total != l.size_bytes)
    return where + ": partitions add up to " + std::to_string(total) + " B but size_bytes is " +
           std::to_string(l.size_bytes) + " B";
  return std::nullopt;
}

}  // namespace

namespace {

/// The first real-valued parameter outside its range (ParameterRange), for
/// architectures built in code or by a sweep; files are checked at the key.
std::optional<std::string> range_error(double clock_mhz, double mac_energy_pj,
                                       const std::vector<Level>& levels) {
  std::optional<std::string> error;
  auto check = [&](const std::string& what, double v, const ParameterRange& r) {
    if (error || r.contains(v)) return;
    std::ostringstream text;
    text << what << " is " << v << "; expected a number from " << r.low << " to " << r.high;
    error = text.str();
  };
  check("clock_mhz", clock_mhz, kClockMhzRange);
  check("mac energy_pj", mac_energy_pj, kEnergyPjRange);
  for (const auto& l : levels) {
    const std::string at = "level '" + l.name + "' ";
    check(at + "read_energy_pj", l.read_energy_pj, kEnergyPjRange);
    check(at + "write_energy_pj", l.write_energy_pj, kEnergyPjRange);
    check(at + "idle_energy_pj_per_cycle", l.idle_energy_pj_per_cycle, kEnergyPjRange);
    for (const auto& p : l.partitions) {
      check(at + "partition '" + p.name + "' read_energy_pj", p.read_energy_pj, kEnergyPjRange);
      check(at + "partition '" + p.name + "' write_energy_pj", p.write_energy_pj, kEnergyPjRange);
    }
    for (const auto& [key, bw] : {std::pair{"bandwidth_gbps", l.bandwidth_gbps},
                                  {"read_bandwidth_gbps", l.read_bandwidth_gbps},
                                  {"write_bandwidth_gbps", l.write_bandwidth_gbps}})
      if (bw) check(at + key, *bw, kBandwidthGbpsRange);
    if (l.kind != LevelKind::kSpatial) continue;
    // 0 is "no limit" for a NoC (README, "Architecture files").
    if (l.noc.bandwidth_gbps != 0)
      check(at + "noc.bandwidth_gbps", l.noc.bandwidth_gbps, kBandwidthGbpsRange);
    check(at + "noc.latency_cycles", l.noc.latency_cycles, kNocLatencyCyclesRange);
    check(at + "noc.hop_energy_pj", l.noc.hop_energy_pj, kEnergyPjRange);
  }
  return error;
}

}  // namespace

Architecture Architecture::make(std::string name, double clock_mhz, int word_bits,
                                double mac_energy_pj, int macs_per_pe, std::vector<Level> levels,
                                WordWidths widths) {
  const std::string where = "architecture '" + name + "'";
  if (!(clock_mhz > 0)) throw InputError(where + ": clock_mhz must be positive");
  if (word_bits <= 0 || word_bits % 8 != 0)
    throw InputError(where + ": word_bits must be a positive multiple of 8");
  if (widths.output_bits < 0 || widths.output_bits % 8 != 0)
    throw InputError(where + ": output_word_bits must be a positive multiple of 8");
  for (const auto& [tensor, bits] : widths.by_tensor)
    if (bits <= 0 || bits % 8 != 0)
      throw InputError(where + ": tensor_word_bits of '" + tensor +
                       "' must be a positive multiple of 8");
  if (macs_per_pe <= 0) throw InputError(where + ": mac.per_pe must be positive");
  if (levels.empty()) throw InputError(where + ": needs levels");
  std::set<std::string> names;
  int buffers = 0;
  for (size_t i = 0; i < levels.size(); ++i) {
    const auto& l = levels[i];
    if (!names.insert(l.name).second)
      throw InputError(where + ": level '" + l.name + "' appears twice");
    if (l.kind == LevelKind::kDram && i + 1 != levels.size())
      throw InputError(where + ": level '" + l.name +
                       "' is DRAM but is not the last (outermost) level");
    if (auto error = partitions_error(l)) throw InputError(where + ": " + *error);
    if (l.kind == LevelKind::kBuffer) {
      ++buffers;
      if (l.size_bytes <= 0)
        throw InputError(where + ": buffer level '" + l.name + "' has size_bytes " +
                         std::to_string(l.size_bytes) + "; it needs a positive size");
    }
    if (l.kind == LevelKind::kSpatial) {
      if (l.shape.empty())
        throw InputError(where + ": spatial level '" + l.name + "' needs a shape");
      for (auto s : l.shape)
        if (s <= 0)
          throw InputError(where + ": spatial level '" + l.name + "' has a non-positive shape");
      if (l.noc.bandwidth_gbps < 0)
        throw InputError(where + ": spatial level '" + l.name +
                         "' has a negative noc.bandwidth_gbps (leave it out for no limit)");
    }
  }
  if (auto error = range_error(clock_mhz, mac_energy_pj, levels))
    throw InputError(where + ": " + *error);
  // Fan-outs and instance counts multiply the shapes unchecked (they are
  // asked per evaluation): their overall product must fit an int64.
  std::int64_t pes = 1;
  for (const auto& l : levels) {
    if (l.kind != LevelKind::kSpatial) continue;
    for (auto s : l.shape) {
      const auto product = checked_mul(pes, s);
      if (!product)
        throw InputError(where + ": spatial level '" + l.name + "' brings the number of PEs over " +
                         std::to_string(std::numeric_limits<std::int64_t>::max()));
      pes = *product;
    }
  }
  if (levels.back().kind != LevelKind::kDram)
    throw InputError(where + ": the last (outermost) level must be of kind dram");
  if (!levels.back().bandwidth_gbps) throw InputError(where + ": DRAM level needs bandwidth_gbps");
  if (buffers == 0) throw InputError(where + ": needs at least one buffer level");
  Architecture a;
  a.name_ = std::move(name);
  a.clock_mhz_ = clock_mhz;
  a.word_bits_ = word_bits;
  a.widths_ = std::move(widths);
  a.mac_energy_pj_ = mac_energy_pj;
  a.macs_per_pe_ = macs_per_pe;
  a.levels_ = std::move(levels);
  return a;
}

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
                std::move(levels), widths);
  } catch (const InputError& e) {
    yaml::fail(origin, levels_node, "levels", e.what());
  }
}

}  // namespace mapex
