#pragma once
/// \file
/// The cost-model plugin interface (docs/design.md, Cost model; docs/style.md,
/// Interfaces): bind once to an operator and an architecture, then a cheap
/// precheck and a full evaluate per mapping.

#include <boost/config.hpp>
#include <mapex/architecture.hpp>
#include <mapex/bounds.hpp>
#include <mapex/mapping.hpp>
#include <mapex/metrics.hpp>
#include <mapex/operator.hpp>
#include <memory>
#include <optional>
#include <string>

namespace mapex {

/// The two figures a search ranks mappings by, without the accounts that
/// Metrics carries (per-level traffic, breakdowns, names).
struct Score {
  bool valid = false;
  double latency_cycles = 0;
  double energy_pj = 0;
};

/// A feature of a mapping that a model cannot model, as opposed to a
/// mapping it models and finds invalid: the level, the mapping key (e.g.
/// `cluster`) and why. `mapex evaluate` reports it as bad input at the
/// key's place in the mapping file; a search sees the mapping as invalid.
struct Unsupported {
  std::string level;
  std::string key;
  std::string reason;
};

/// What a bound model keeps between neighbouring mappings of one stream
/// (BoundCostModel::precheck_and_score): the model makes it, the caller
/// holds one per stream and model and never looks inside.
class BOOST_SYMBOL_VISIBLE StreamState {
 public:
  virtual ~StreamState();
};

/// A cost model bound to one operator and architecture. `evaluate` and
/// `precheck` are called concurrently from the framework's worker threads:
/// they must be const-correct and free of shared mutable state. No I/O.
class BOOST_SYMBOL_VISIBLE BoundCostModel {
 public:
  virtual ~BoundCostModel();
  /// Cheap test run before `evaluate`: a reason when the mapping is invalid
  /// (e.g. a tile overflows a buffer), nothing otherwise.
  virtual std::optional<std::string> precheck(const Mapping& mapping) const;
  /// Full evaluation of a structurally valid mapping. An invalid mapping
  /// yields Metrics with `valid == false` and a reason; it never throws for
  /// that. Throws only on internal failure.
  virtual Metrics evaluate(const Mapping& mapping) const = 0;
  /// Latency and energy of a mapping that passed `precheck`, equal to
  /// `evaluate`'s. Sweeps call this for every mapping and `evaluate` only for
  /// the ones that improve on the best so far, so a model whose full
  /// accounts are costly to assemble should override it with a lean path.
  /// The default calls `evaluate`.
  virtual Score score(const Mapping& mapping) const;
  /// The first feature of the mapping this model cannot model, if any
  /// (default: none). A model that returns one also reports the mapping
  /// invalid from `precheck` and `evaluate`, never a silent result.
  virtual std::optional<Unsupported> unsupported(const Mapping& mapping) const;
  /// Optional, for branch-and-bound searchers (issue 22): a latency and an
  /// energy that no valid completion of `partial` (bounds.hpp) beats, each on
  /// its own (so their product bounds the EDP too). Nothing (the default)
  /// when the model offers no bound. Called concurrently, like `evaluate`.
  virtual std::optional<Score> lower_bound(const PartialMapping& partial) const;
  /// Optional, for branch-and-bound searchers (issue 22): whether the loop
  /// order of data level `level` reaches this model's value only through
  /// that level's own cost in the loop-nest analysis (analysis.hpp,
  /// level_costs: its energy and transfer cycles), the energy adding that
  /// level's energy and the latency taking it by a sum or a maximum, with
  /// nothing else reading that order. Then, once the tiles that fix the
  /// level's traffic are fixed, an order that no other order beats in those
  /// two figures is at least as good as every other with any completion.
  /// False (the default) claims nothing.
  virtual bool order_read_only_by_own_traffic(int level) const;
  /// Optional, for branch-and-bound searchers (issue 22): whether the tile
  /// of data level `level` (the one directly below DRAM) reaches this
  /// model's value only through DRAM's traffic in the loop-nest analysis,
  /// whose energy and transfer cycles a larger tile (a multiple of it in
  /// every dimension) never raises, the rest of the value and the validity
  /// reading nothing of that tile. Then, in a space of divisors, an L2 tile
  /// is no better than any multiple of it in the space: every completion of
  /// the smaller one is a completion of the larger with a value no worse.
  /// False (the default) claims nothing.
  virtual bool tile_read_only_by_traffic_above(int level) const;
  /// Optional, for searchers that enumerate loop orders (issue 22): of data
  /// level `level`'s loops, those whose place in its order this model can
  /// tell apart, once `partial` fixes the spans below that level (bit d:
  /// dimension d). `running` holds the loops of more than one trip there,
  /// the only ones the mapspace permutes (a loop of one trip does nothing in
  /// the loop-nest analysis, so the space counts its places as one mapping,
  /// one-trip loops outermost). The default returns `running`: the model
  /// declares one-trip loops order-neutral. A model that reads an order
  /// elsewhere (mdc: MAESTRO walks the whole layer in the order of the
  /// level above the PEs) returns more, and a search that proves an optimum
  /// must then try those loops' places too.
  virtual std::uint32_t ordered_loops(const Mapping& partial, int level,
                                      std::uint32_t running) const;
  /// For sweeps along the enumeration stream (Mapspace::Cursor::next with a
  /// change report): precheck then score in one call, an invalid Score when
  /// precheck finds the mapping invalid. `change` says what may differ from
  /// the mapping passed before with the same `state` (everything for the
  /// first, when `state` is empty); `state` is the model's own, made on
  /// the first call of a stream. The same figures as precheck then score;
  /// a model that keeps analysis state between neighbours overrides it to
  /// redo only what the change touches. The default calls the two and
  /// keeps no state.
  virtual Score precheck_and_score(const Mapping& mapping, const MappingChange& change,
                                   std::unique_ptr<StreamState>& state) const;
};

class BOOST_SYMBOL_VISIBLE CostModel {
 public:
  virtual ~CostModel();
  /// Called once per (operator, architecture) from any thread. The
  /// referenced objects outlive the bound model. Throws InputError when the
  /// model cannot handle the combination (e.g. an unsupported level kind).
  virtual std::unique_ptr<BoundCostModel> bind(const Operator& op,
                                               const Architecture& arch) const = 0;
  /// Whether the model reads Architecture::no_time_mux (pins operands a
  /// mapping keeps whole on chip); a whole-network scheduler's bounds may
  /// then leave those operands' DRAM reads out. Default: no.
  virtual bool pins_on_no_time_mux() const;
};

}  // namespace mapex
