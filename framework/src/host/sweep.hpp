#pragma once
// Parameter sweeps of an experiment (README, "Sweeps"): cartesian products
// and zipped lists of values for named parameters, with filter expressions.
// Used for architecture variants (hardware DSE), searcher variants and
// workload variants (batch size). Every point gets a name that lists its
// assignments, e.g. `marvel_p1[L2.size_bytes=65536,PE_array.shape=16x16]`,
// and that name (with the content) enters the job ids, so ids are stable.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mapex::host {

/// One parameter set to one value in a sweep point.
struct Assignment {
  std::string key;
  YAML::Node value;          ///< as written (scalar or list)
  std::string text;          ///< canonical text for names: lists joined by 'x'
  SourceLocation where;      ///< of the value, for errors found when applying it
  SourceLocation key_where;  ///< of the key
};

/// A filter expression over numeric parameters: + - * / ( ), comparisons
/// (< <= > >= == !=), `and`, `or`, `not`, numbers, true/false and names
/// (e.g. `L2.size_bytes >= 64 * L1.size_bytes and num_pes <= 1024`).
class Filter {
 public:
  /// Parses; InputError at `where` (key `filter`) on a syntax error.
  Filter(std::string text, SourceLocation where);
  /// Non-zero means the point is kept. `lookup` returns nothing for an
  /// unknown name, which is an InputError naming it.
  bool keep(const std::function<std::optional<double>(const std::string&)>& lookup) const;
  const std::string& text() const { return text_; }
  const SourceLocation& where() const { return where_; }

  struct Node;  ///< the parsed expression (defined in sweep.cpp)

 private:
  std::string text_;
  SourceLocation where_;
  std::shared_ptr<const Node> root_;
};

/// A parsed `sweep:` block: axes combined as a cartesian product (the first
/// axis outermost); a zip group is one axis whose keys advance together.
struct Sweep {
  struct Axis {
    std::vector<std::string> keys;
    std::vector<SourceLocation> key_where;
    std::vector<std::vector<YAML::Node>> rows;  ///< rows[i][k]: value of key k at step i
  };
  std::vector<Axis> axes;
  std::vector<Filter> filters;

  bool empty() const { return axes.empty(); }
  /// Every combination, in order; each is one assignment per key.
  std::vector<std::vector<Assignment>> points(const std::string& file) const;
};

/// Reads `sweep: {product: {k: [..]}, zip: {k: [..], ...} | [{...}, ...],
/// filter: expr | [expr, ...]}`. Errors: empty lists, zipped lists of
/// different lengths, a key given twice, an empty sweep.
Sweep read_sweep(const std::string& file, const YAML::Node& node);

/// "base[k1=v1,k2=v2]" (just "base" without assignments).
std::string variant_name(const std::string& base, const std::vector<Assignment>& assignments);

/// Applies assignments to an architecture. Keys: clock_mhz, word_bits, output_word_bits,
/// mac.energy_pj, mac.per_pe, and per level `<level>.size_bytes`,
/// `.double_buffered`, `.read_energy_pj`, `.write_energy_pj`,
/// `.bandwidth_gbps`, `.block_bytes`, `.shape` (16, [16, 16] or "16x16"),
/// `.noc.bandwidth_gbps`, `.noc.latency_cycles`, `.noc.hop_energy_pj`,
/// `.noc.multicast`, `.noc.reduction`, `.noc.forwarding`. The result is
/// named `name`. InputError at the key for a key that names no parameter,
/// at the value for a bad value.
Architecture apply_architecture(const Architecture& base, const std::vector<Assignment>& points,
                                const std::string& name);

/// The numeric value of an architecture parameter for filters: the keys
/// above (shape: the number of children; booleans 1/0) and `num_pes`.
std::optional<double> architecture_value(const Architecture& arch, const std::string& key);

/// Whether `key` names an architecture parameter (for error messages).
std::string architecture_keys_help(const Architecture& arch);

}  // namespace mapex::host
