#pragma once
/// \file
/// Timeloop's classic input format in and out (issue 19, part 1; README,
/// "Timeloop files"). Timeloop reads several YAML files as one document
/// (`timeloop-mapper arch.yaml prob.yaml constraints.yaml ERT.yaml`), with
/// hyphens in keys read as underscores. This module reads such a document
/// and writes the mapex files that say the same thing:
/// - `problem` (shape: dimensions, coefficients, data spaces and their
///   projections; instance) -> a `loopnest` workload;
/// - `architecture` (the v0.3 `subtree`/`local` tree: storage depth, width,
///   word bits or size, instances and meshX/meshY, bandwidths, the
///   arithmetic) and an `ERT` -> a mapex architecture, a spatial level
///   wherever the instance count grows between two storage levels;
/// - `architecture_constraints` / `mapspace_constraints` -> a constraints
///   file (factor bounds, pinned loops, keep/bypass, utilisation);
/// - `mapping` -> a mapex mapping.
/// What has no mapex counterpart (sparse densities, the v0.4 front end's
/// node lists, user-specified networks, ...) is refused with the key and
/// the reason (InputError), never dropped.

#include <mapex/architecture.hpp>
#include <mapex/constraints.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <string>
#include <vector>

namespace mapex::timeloop {

/// The mapex files of a Timeloop document, as YAML text; a part is empty
/// when the document has no such section (constraints are written whenever
/// there is an architecture: Timeloop's mapspace explores bypass and any
/// number of spatial dimensions, which mapex's defaults do not).
struct Imported {
  std::string name;  ///< the problem shape's name (or "timeloop")
  std::string workload_yaml;
  std::string arch_yaml;
  std::string constraints_yaml;
  std::string mapping_yaml;
};

/// Whether `path` is a Timeloop file: a YAML map with a Timeloop top-level
/// key (`problem`, `architecture`, `arch`, `architecture_constraints`,
/// `mapspace_constraints`, `ERT`, or `mapping` holding a list). Never
/// throws: an unreadable file is not one (its loader reports it).
bool is_timeloop_file(const std::string& path);

/// The name under which mapex files converted from the Timeloop file
/// `path` are parsed, so an error in them does not point at the Timeloop
/// file's own lines.
inline std::string converted_origin(const std::string& path) {
  return path + " (as converted from Timeloop)";
}

/// Reads the files as one document and converts every section present.
/// Throws InputError naming the file, line, column and key: a top-level key
/// given twice, a projection naming an unknown dimension, more data spaces
/// than Timeloop allows (5), a refused feature (with the reason), a
/// constraint or mapping naming an unknown level, dimension or data space,
/// mapping factors that do not multiply to the bounds.
Imported import_files(const std::vector<std::string>& paths);

/// The constraints of the Timeloop files `paths` (read as one document,
/// which must hold the problem and architecture they constrain) as a
/// ConstraintSpec. Throws InputError as import_files does.
ConstraintSpec load_constraints(const std::vector<std::string>& paths);

/// The Timeloop mapping in `path` (a `mapping:` list of directives naming
/// storage levels) as a mapex mapping of `op` on `arch` (an architecture
/// imported from Timeloop, whose data levels carry the storage names).
/// Throws InputError as import_files does.
Mapping load_mapping(const std::string& path, const Operator& op, const Architecture& arch);

/// The Timeloop `mapping:` section of `mapping` (of `op` on `arch`) that
/// timeloop-model accepts for the problem and architecture the mapex files
/// came from: per data level a temporal directive (factors = trip counts,
/// permutation innermost first), per spatial level a spatial directive at
/// the data level above it (axis 0 of the shape is Timeloop's X, axis 1 its
/// Y), and per stated `keep` a dataspace directive. Throws InputError
/// (key "mapping") for what Timeloop cannot state: edge tiles (a trip count
/// that does not divide), a spatial level not directly below a data level,
/// a cluster level, a split spread over two axes.
std::string export_mapping(const Operator& op, const Architecture& arch, const Mapping& mapping);

}  // namespace mapex::timeloop
