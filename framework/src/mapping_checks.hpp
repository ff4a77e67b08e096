#pragma once
/// \file
/// Checks of a Mapping shared by its structural check (mapping.cpp) and its
/// YAML reader (mapping_yaml.cpp), which report the same problems with the
/// file's line and column.

#include <mapex/mapping.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex::detail {

/// 0, 1, ..., n-1: the order of a level that gives none.
std::vector<DimId> identity_order(int n);

/// Why a cluster level's split, tile or order does not fit (nullopt: fits).
std::optional<std::string> cluster_error(const Operator& op, const LevelMapping& lm,
                                         const std::vector<std::int64_t>& child);

/// Why a level's `keep` does not fit the architecture and operator.
std::optional<std::string> keep_error(const Operator& op, const Level& level,
                                      const LevelMapping& lm);

}  // namespace mapex::detail
