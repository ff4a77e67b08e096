#pragma once
/// \file
/// A searcher that would not stop without a budget (random sampling of a
/// space it cannot exhaust) also derives from `BudgetRequirement`, so that
/// the host refuses such a job when it loads the experiment or the command
/// line, at the searcher's entry or the budget's option, instead of
/// recording a failed job at run time (issue 18). The host finds the
/// capability with `dynamic_cast` on the Searcher the plugin made; the class
/// is new (no existing type changed) and its key function lives in the core
/// library, so its type_info is shared across the plugin boundary (as with
/// `NetworkScheduler`).

#include <boost/config.hpp>
#include <mapex/search.hpp>
#include <optional>
#include <string>

namespace mapex {

class BOOST_SYMBOL_VISIBLE BudgetRequirement {
 public:
  virtual ~BudgetRequirement();
  /// Why a search under `budget` would never end (what the user must give:
  /// a budget or a parameter), or nullopt when it ends.
  virtual std::optional<std::string> unbounded(const Budget& budget) const = 0;
};

}  // namespace mapex
