#pragma once
/// \file
/// The first mapspace: every mapping of an operator on a chain of levels,
/// made of (Marvel §5's dimensions, generalised to any chain)
/// - a tile size per dimension at every buffer level and a split per
///   dimension at every spatial level ("chains" of spans per dimension);
/// - a loop order at every data-holding level, over the dimensions whose
///   trip count there is above 1 (orders of trip-1 loops are equivalent,
///   so only distinct orders are generated; trip-1 loops go outermost).
/// It is enumerated as a stream (no list is materialised) and sampled.
/// Mappings that break a constraint (fan-out exceeded, too many parallel
/// dimensions, a buffer overflow) are rejected with a named rule.

#include <boost/multiprecision/cpp_int.hpp>
#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mapex {

using BigInt = boost::multiprecision::cpp_int;

/// A uniform draw from [0, n), n > 0, by rejection: unlike the standard
/// distributions its result is the same with every standard library, so
/// seeded searches reproduce everywhere.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

struct MapspaceOptions {
  /// Only spans that divide the bound (no edge tiles).
  bool factors_only = true;
  /// At most this many split dimensions per spatial level; 0 means the rank
  /// of the level's shape (a 12x14 array takes two).
  int max_parallel_dims = 0;
  /// Reject mappings that would not fit a buffer.
  bool check_capacity = true;
};

class Mapspace {
 public:
  Mapspace(const Operator& op, const Architecture& arch, MapspaceOptions options = {});

  const Operator& op() const { return *op_; }
  const Architecture& arch() const { return *arch_; }
  const MapspaceOptions& options() const { return options_; }

  /// Exact number of mappings before the constraints (tile chains x distinct
  /// loop orders), computed without enumerating.
  BigInt size() const;
  /// Number of span chains of dimension `d` (for tests and reports).
  std::size_t num_chains(DimId d) const { return chains_[static_cast<size_t>(d)].size(); }

  /// The rule a mapping breaks, or nothing: "fanout", "parallel_dims",
  /// "capacity" (with detail after a colon).
  std::optional<std::string> reject_reason(const Mapping& mapping) const;

  /// Streams the space in a fixed order. Not thread-safe; one per thread.
  class Cursor {
   public:
    explicit Cursor(const Mapspace& space);
    /// Writes the next mapping that passes the constraints into `out`;
    /// false when the space is exhausted. Rejected ones are counted.
    bool next(Mapping& out);
    /// Mappings visited so far, accepted and rejected.
    std::uint64_t visited() const { return visited_; }
    std::uint64_t rejected() const { return rejected_; }

   private:
    void load_chains();
    bool advance_orders();
    bool advance_chains();
    const Mapspace* space_;
    std::vector<std::size_t> chain_index_;
    std::vector<std::vector<DimId>> free_dims_;  // per data level
    std::vector<std::vector<DimId>> order_;      // current permutation per data level
    bool chains_ok_ = false;
    bool started_ = false;
    bool done_ = false;
    std::uint64_t visited_ = 0;
    std::uint64_t rejected_ = 0;
  };

  /// Draws a mapping: a chain per dimension and an order per level, each
  /// uniformly, retried until it passes the constraints (at most
  /// `max_attempts`); nothing if none did.
  std::optional<Mapping> sample(std::mt19937_64& rng, int max_attempts = 1000) const;

 private:
  Mapping build(const std::vector<std::size_t>& chain_index,
                const std::vector<std::vector<DimId>>& orders) const;
  std::vector<std::vector<DimId>> free_dims(const std::vector<std::size_t>& chain_index) const;
  std::optional<std::string> chain_reject_reason(const std::vector<std::size_t>& chain_index) const;

  const Operator* op_;
  const Architecture* arch_;
  MapspaceOptions options_;
  /// chains_[d][k][level]: span of dimension d at every non-DRAM level.
  std::vector<std::vector<std::vector<std::int64_t>>> chains_;
  std::vector<int> data_levels_;
};

}  // namespace mapex
