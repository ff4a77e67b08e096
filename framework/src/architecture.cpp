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
  // Only when set, so the ids of existing chips do not change.
  if (no_time_mux_) mix(h, "no_time_mux");
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

Architecture Architecture::with_no_time_mux(bool on) const {
  Architecture out = *this;
  out.no_time_mux_ = on;
  return out;
}

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

}  // namespace mapex
