#pragma once
/// \file
/// The hardware: a tree of levels, innermost first (docs/design.md, Architecture).
/// A spatial level replicates everything below it `fanout()` times, so a
/// chain of levels describes a homogeneous tree: L1 per PE / PE array / L2 /
/// DRAM is the MAESTRO/Marvel three-level chip; REGF / PE array / GBUF /
/// node array / DRAM is KAPLA's multi-node chip.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mapex {

enum class LevelKind { kBuffer, kSpatial, kDram };
std::string to_string(LevelKind kind);

/// How a spatial level's splits may lie on the axes of its `shape` (issue
/// 16, item 4: a split that only fits the fan-out may not fit the array).
/// Each split (one per split dimension, and one per cluster-split
/// dimension) is a factor; placements multiply the factors on each axis,
/// and an axis holds at most its size.
enum class SplitPlacement {
  /// Each factor lies along one axis (Timeloop's spatial factors with
  /// their X/Y split; Eyeriss rows and columns). The default.
  kOneAxis,
  /// A factor may be factored over several axes (nn_dataflow's partitions:
  /// one partition type takes a height x width block of nodes).
  kAcrossAxes,
  /// The units are addressed as one list (MAESTRO's NumPEs with clusters
  /// of consecutive PEs; FLASH's and Marvel's P): splits need only fit the
  /// fan-out; the shape is the physical layout only.
  kFlat,
};
std::string to_string(SplitPlacement placement);

/// Network-on-chip properties of a spatial fan-out.
struct Noc {
  /// GB/s from the parent buffer into the array; 0: not limited (the
  /// network never bounds the latency).
  double bandwidth_gbps = 0;
  double latency_cycles = 1;
  double hop_energy_pj = 0;  ///< per word per hop
  bool multicast = true;     ///< one read feeds every child that needs it
  bool reduction = true;     ///< partial sums are reduced in the network
  /// Neighbour-to-neighbour forwarding (KAPLA §III-C "same-level
  /// transfers"): systolic flow in a PE array, buffer sharing across nodes.
  bool forwarding = false;
};

/// One part of a partitioned buffer level: Eyeriss's
/// per-PE ifmap, weight and psum scratchpads are one level of three
/// partitions. A partition holds only the tensors it names, in its own
/// space and at its own energies; the level's tile and loop order are
/// shared (one loop nest per level, as in the mapping).
struct Partition {
  std::string name;
  /// Names of the operator tensors it holds (e.g. `Weight`); a name no
  /// tensor of an operator has is simply unused for that operator.
  std::vector<std::string> tensors;
  std::int64_t size_bytes = 0;
  double read_energy_pj = 0;   ///< per word
  double write_energy_pj = 0;  ///< per word
};

struct Level {
  std::string name;
  LevelKind kind = LevelKind::kBuffer;
  // Buffers and DRAM.
  std::int64_t size_bytes = 0;  ///< 0 for DRAM (unbounded)
  bool double_buffered = true;
  double read_energy_pj = 0;   ///< per word
  double write_energy_pj = 0;  ///< per word
  /// GB/s; empty means unlimited (for DRAM it is required).
  std::optional<double> bandwidth_gbps;
  /// Separate read and write ports (Timeloop's read_bandwidth and
  /// write_bandwidth): GB/s of reads and of writes, each limiting on its
  /// own; empty: only `bandwidth_gbps` limits them (together).
  std::optional<double> read_bandwidth_gbps;
  std::optional<double> write_bandwidth_gbps;
  /// True when the level has separate read or write bandwidths.
  bool split_ports() const { return read_bandwidth_gbps || write_bandwidth_gbps; }
  std::int64_t block_bytes = 64;  ///< DRAM only
  // Spatial levels.
  std::vector<std::int64_t> shape;
  SplitPlacement split_placement = SplitPlacement::kOneAxis;
  Noc noc;
  /// Static energy of the whole level (all its instances) per cycle the
  /// chip runs, charged over the latency (KAPLA §III-C, Fig. 4 idle_cost).
  double idle_energy_pj_per_cycle = 0;
  /// Buffers, optional: the level split into per-tensor partitions. Empty:
  /// one buffer shared by every tensor (the meaning before partitions).
  /// When present, `size_bytes` is the sum of the partitions' sizes.
  std::vector<Partition> partitions;

  /// The partition holding tensor `tensor` (by name), or nullptr; always
  /// nullptr on an unpartitioned level.
  const Partition* partition_of(const std::string& tensor) const;
  /// Per-word energies of a tensor at this level: its partition's, or the
  /// level's when unpartitioned.
  double read_energy_of(const std::string& tensor) const;
  double write_energy_of(const std::string& tensor) const;

  /// Number of children of a spatial level (product of the shape); 1 else.
  std::int64_t fanout() const;
  bool holds_data() const { return kind != LevelKind::kSpatial; }
};

struct Tensor;
class Operator;

/// The accepted range of a real-valued chip parameter, both ends included.
struct ParameterRange {
  double low;
  double high;
  bool contains(double v) const { return v >= low && v <= high; }
};

/// Ranges of the real-valued chip parameters. Far wider than any chip (DRAM
/// costs some hundred pJ per word; 1e12 GB/s stands for "unlimited" in the
/// shipped files), yet narrow enough that no metric computed from them (up
/// to 2^63 accesses times an energy, bytes over a bandwidth, cycles over a
/// clock) leaves the finite doubles: a file giving 1e308 pJ would otherwise
/// print `energy_pj inf`. The loader and sweeps refuse values outside them
/// at their key; Architecture::make checks them again.
inline constexpr ParameterRange kEnergyPjRange{0, 1e9};  ///< per access, MAC, hop or idle cycle
inline constexpr ParameterRange kBandwidthGbpsRange{1e-6, 1e15};
inline constexpr ParameterRange kClockMhzRange{1e-3, 1e6};
inline constexpr ParameterRange kNocLatencyCyclesRange{0, 1e9};

/// Word widths that differ per tensor (Timeloop users' 16- or 32-bit
/// partial sums beside 8-bit operands; NVDLA's and the TPU's wide
/// accumulators). A tensor is stored and moved in words of
/// `by_tensor[name]` bits when named there, else of `output_bits` when it is
/// the output and that is set, else of the architecture's `word_bits`.
/// Energies stay per word access of the tensor: give a wider tensor its own
/// partition (or level) for its own per-word energy. Empty: one width for
/// every tensor (the meaning before per-tensor widths).
struct WordWidths {
  int output_bits = 0;  ///< 0: the output uses word_bits too
  std::map<std::string, int> by_tensor;
  bool empty() const { return output_bits == 0 && by_tensor.empty(); }
};

class Architecture {
 public:
  const std::string& name() const { return name_; }
  double clock_mhz() const { return clock_mhz_; }
  int word_bits() const { return word_bits_; }
  double word_bytes() const { return word_bits_ / 8.0; }
  const WordWidths& word_widths() const { return widths_; }
  /// Bits of one word of tensor `t` (WordWidths).
  int word_bits_of(const Tensor& t) const;
  double word_bytes_of(const Tensor& t) const { return word_bits_of(t) / 8.0; }
  /// True when every tensor of `op` has `word_bits()`: what models with one
  /// word size (MAESTRO's, nn_dataflow's) need to refuse the rest.
  bool uniform_word_bits(const Operator& op) const;
  /// The first tensor of `op` whose width differs from word_bits, or "".
  std::string first_wide_tensor(const Operator& op) const;
  double mac_energy_pj() const { return mac_energy_pj_; }
  int macs_per_pe() const { return macs_per_pe_; }
  const std::vector<Level>& levels() const { return levels_; }
  /// The chip runs one operator for the whole run, no other sharing it over
  /// time (nn_dataflow's `no_time_mux`, set on a pipeline segment that holds
  /// the whole network): read-only operands a mapping keeps whole on chip
  /// (every loop over them above the top buffer trivial) are loaded once
  /// ahead of the run and cost no DRAM reads. Only the nn_dataflow model
  /// reads it; file key `no_time_mux`, default false.
  bool no_time_mux() const { return no_time_mux_; }
  /// This chip with `no_time_mux` set to `on`.
  Architecture with_no_time_mux(bool on) const;
  int num_levels() const { return static_cast<int>(levels_.size()); }
  int find_level(const std::string& name) const;
  /// Number of PEs: product of every spatial fan-out.
  std::int64_t num_pes() const;
  /// Instances of level `i`: product of the fan-outs above it.
  std::int64_t instances(int level) const;
  /// GB/s to bytes per cycle at this clock.
  double bytes_per_cycle(double gbps) const;
  /// The first level with separate read and write bandwidths, or -1: for
  /// models that have one bandwidth per level and must refuse them.
  int first_split_ports() const;
  /// A stable hash of the content, for job ids.
  std::uint64_t content_hash() const;

  /// Builds and validates: exactly one DRAM level and it is last; at least
  /// one buffer; unique names; positive sizes, shapes and bandwidths;
  /// partitions only on buffers, with unique names, positive sizes adding
  /// up to the level's size and no tensor in two partitions; widths that
  /// are positive multiples of 8.
  static Architecture make(std::string name, double clock_mhz, int word_bits, double mac_energy_pj,
                           int macs_per_pe, std::vector<Level> levels, WordWidths widths = {});
  /// Loads an architecture file (README, "Architecture files").
  static Architecture load(const std::string& path);
  static Architecture parse(const std::string& yaml_text, const std::string& origin);

 private:
  std::string name_;
  double clock_mhz_ = 1000;
  int word_bits_ = 8;
  WordWidths widths_;
  double mac_energy_pj_ = 1;
  int macs_per_pe_ = 1;
  std::vector<Level> levels_;
  bool no_time_mux_ = false;
};

/// For models and searchers with one word size for every tensor (MAESTRO's
/// analysis, nn_dataflow's and KAPLA's models, FLASH's and Marvel's
/// algebra): throws InputError at the width key when a tensor of `op` has
/// its own width, naming `who` and the tensor, so the width is refused, not
/// ignored.
void require_uniform_word_bits(const Operator& op, const Architecture& arch,
                               const std::string& who);

}  // namespace mapex
