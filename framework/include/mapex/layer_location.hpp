#pragma once
/// \file
/// Where a layer is defined in its workload file. Errors found after a
/// workload is loaded know only the operator (its mapspace is too large to
/// build, a cost model refuses it, a metric overflows); the host places
/// them here so that every message of a text input has file:line:column
/// (issue 18).

#include <mapex/error.hpp>
#include <string>

namespace mapex {

/// The entry of layer `name` under `layers` in the workload YAML
/// `yaml_text` (read from `origin`); a training graph's backward layer
/// (`<layer>.bwd_data`, `<layer>.bwd_weight`) is placed at its forward
/// layer. Line 1, column 1 of `origin` when the text has no such entry.
SourceLocation layer_location(const std::string& yaml_text, const std::string& origin,
                              const std::string& name);

/// The same for the workload file at `path` (nothing when `path` is empty).
SourceLocation layer_file_location(const std::string& path, const std::string& name);

/// `error` placed at `at` when it names no file (keeping its key and
/// problem), else `error` itself.
InputError placed_at(const InputError& error, const SourceLocation& at);

}  // namespace mapex
