#pragma once
/// \file
/// KAPLA's tensor-centric dataflow directives (KAPLA §III-B, Listing 1) and
/// their conversion from and to the canonical mapping (mapping.hpp).
///
/// Text form, one directive per line, `%` or `#` starting a comment:
///
///     conv1:                               <- a layer (operator) name
///       REGF:                              <- a buffer level of the chip
///         tensor{I}(N=1, C=2, P=1, Q=1, R=5, S=1)
///         tensor{W}(K=3, C=2, R=5, S=1)
///         tensor{O}(N=1, K=3, P=1, Q=1)
///         stack(Q+=1, 8)                   % PE columns
///         stack(S+=1, 5)                   % PE rows
///         update(P+=1)                     % innermost first
///         update(C+=2)
///       GBUF:
///         tensor{I}(..., shr=4)
///
/// The two-level name scope of §III-B: a section per layer, inside it a
/// section per buffer level; a tensor name ties the same tensor across the
/// levels of a layer. DRAM holds whole tensors and takes no section.
///
/// mapex operators are affine loop nests, so tensor sizes are given along
/// the loop dimensions that index the tensor (KAPLA's Xi of an input is
/// the footprint of P and R through the subscript `P*stride + R`).
/// - `tensor{T}(D=size, ..., shr=k)`: the tile at this level along every
///   dimension that indexes T; `shr` is the buffer-sharing factor, which
///   mapex derives from the hardware (see `sharing_factor`) and checks.
/// - `tensor{T}(..., bypass)`: the level does not hold T.
///   The sizes are still written: they state the level's tile along the
///   dimensions that index T, which may index no kept tensor.
/// - `stack(D+=shift, repl)`: the spatial level above this buffer splits D
///   over `repl` units; stacks apply in order, so the shift of each is the
///   span stacked so far along D (a partition; mapex has no overlapping or
///   strided stacks).
/// - `update(D+=step)`: one loop of the next data level over the stacked
///   tiles, innermost first; the step is the stacked span along D. Loops of
///   one trip are not printed.

#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mapex {

/// `tensor{name}(dim=size, ..., shr=k)`.
struct TensorDirective {
  std::string tensor;
  std::vector<std::pair<DimId, std::int64_t>> sizes;
  std::int64_t shr = 1;
  bool bypass = false;  ///< the level does not hold the tensor
  int line = 0;         ///< 1-based line in the parsed text; 0 when generated
  int column = 0;       ///< 1-based column of the directive; 0 when generated
};

/// `stack(dim+=shift, repl)`.
struct StackDirective {
  DimId dim = 0;
  std::int64_t shift = 1;
  std::int64_t repl = 1;
  int line = 0;
  int column = 0;
};

/// `update(dim+=step)`.
struct UpdateDirective {
  DimId dim = 0;
  std::int64_t step = 1;
  int line = 0;
  int column = 0;
};

/// The directives of one buffer level of one layer.
struct LevelDirectives {
  std::string level;
  int line = 0;
  int column = 0;
  std::vector<TensorDirective> tensors;
  std::vector<StackDirective> stacks;
  std::vector<UpdateDirective> updates;  ///< innermost first
};

/// The directives of one layer: one section per buffer level, innermost
/// first.
struct LayerDirectives {
  std::string layer;
  int line = 0;
  int column = 0;
  std::vector<LevelDirectives> levels;
};

/// The buffer-sharing factor `shr` of tensor `t` at data level `level`
/// (KAPLA §III-B `shr`, §III-C same-level transfers): when the spatial level
/// right above a buffer that is not the innermost one forwards between
/// neighbours, a tensor replicated over its units (split along dimensions
/// that do not index it) is stored once across them; each unit keeps 1/shr
/// of it. Innermost buffers forward as a systolic flow instead and keep
/// their own copy (shr 1). Capped so that each unit keeps one element.
std::int64_t sharing_factor(const Operator& op, const Architecture& arch, const Mapping& mapping,
                            int level, int tensor);

/// The directives of a structurally valid mapping.
LayerDirectives to_directives(const Operator& op, const Architecture& arch, const Mapping& mapping);

/// The canonical mapping the directives describe. Throws InputError naming
/// `origin`, the directive's line and the reason: a missing level section,
/// a missing or inconsistent dimension size, a stack or update whose shift
/// or step is not the stacked span, a dimension iterated without an update,
/// a wrong `shr`, or a mapping that is not well formed.
Mapping to_mapping(const LayerDirectives& directives, const Operator& op, const Architecture& arch,
                   const std::string& origin);

/// Parses the text form (above) for the named operators. Throws InputError
/// with origin, line and reason (unknown layer, level, tensor or dimension,
/// malformed directive, a directive outside a level section, a level
/// section outside a layer).
std::vector<LayerDirectives> parse_directives(const std::string& text, const std::string& origin,
                                              const std::vector<const Operator*>& ops,
                                              const Architecture& arch);

/// Prints the text form that `parse_directives` reads.
std::string format_directives(const LayerDirectives& directives, const Operator& op);

/// The same mapping with loops of one trip moved outermost, in dimension
/// order, and the innermost buffer's order (which only sequences MACs on
/// resident data) in dimension order: what a mapping becomes after a round
/// trip through directives, which print neither. Costs are unchanged.
Mapping normalise_orders(const Mapping& mapping, const Operator& op, const Architecture& arch);

}  // namespace mapex
