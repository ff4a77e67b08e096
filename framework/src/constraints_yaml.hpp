#pragma once
/// \file
/// Reading a ConstraintSpec from YAML (an experiment's `mapspace:` block or
/// a constraints file); see README, "Mapspace constraints".

#include <yaml-cpp/yaml.h>

#include <mapex/constraints.hpp>
#include <string>

namespace mapex {

/// Parses a `mapspace:` block; throws InputError with file, line, column and
/// key for unknown keys and values of the wrong type or range.
ConstraintSpec parse_constraint_spec(const std::string& file, const YAML::Node& node);

}  // namespace mapex
