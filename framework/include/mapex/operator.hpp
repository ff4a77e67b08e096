#pragma once
/// \file
/// The workload IR: an operator is a perfectly nested affine loop nest
/// (Marvel §3). Loop dimensions have bounds; every tensor is indexed by one
/// affine expression of the loop dimensions per tensor dimension, e.g. the
/// input of a strided, dilated CONV2D is `[N][C][P*sy + R*dy][Q*sx + S*dx]`.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace mapex {

/// Index of a loop dimension within its operator.
using DimId = int;

/// One loop dimension: a name (unique in the operator) and a positive bound.
struct Dim {
  std::string name;
  std::int64_t bound = 1;
};

/// One term `coeff * dim` of an affine subscript.
struct AffineTerm {
  DimId dim = 0;
  std::int64_t coeff = 1;
};

/// An affine subscript: sum of terms plus a constant.
struct AffineExpr {
  std::vector<AffineTerm> terms;
  std::int64_t constant = 0;

  /// True when `dim` appears with a non-zero coefficient.
  bool uses(DimId dim) const;
  /// Number of distinct indices the subscript takes when every dimension d
  /// spans `extent[d]` consecutive values: sum |coeff| * (extent - 1) + 1
  /// (the bounding box; exact for unit coefficients and sliding windows).
  double extent(std::span<const double> dim_extent) const;
};

enum class TensorRole { kInput, kOutput };
enum class Reduction { kNone, kSum, kMax };

std::string to_string(TensorRole role);
std::string to_string(Reduction reduction);

/// A tensor accessed by the loop nest.
struct Tensor {
  std::string name;
  TensorRole role = TensorRole::kInput;
  /// How an output accumulates over the dimensions it does not use.
  Reduction reduction = Reduction::kNone;
  std::vector<AffineExpr> subscripts;

  /// True when some subscript uses `dim`, i.e. moving along `dim` touches
  /// other elements of this tensor (Marvel's "relevant" dimension).
  bool relevant(DimId dim) const;
  /// Elements touched by a tile whose dimension d spans `dim_extent[d]`.
  double footprint(std::span<const double> dim_extent) const;
};

/// A perfectly nested affine loop nest with one multiply-accumulate in its
/// body. Immutable after construction by `Operator::make`, which validates.
class Operator {
 public:
  /// Builds and validates: at least one dimension; unique, non-empty names;
  /// bounds >= 1; every subscript names known dimensions; exactly one output.
  /// Throws InputError naming the offending piece.
  static Operator make(std::string name, std::string kind, std::vector<Dim> dims,
                       std::vector<Tensor> tensors,
                       std::map<std::string, std::int64_t> attributes = {});

  const std::string& name() const { return name_; }
  /// The generator that made it: conv2d, gemm, fc, loopnest, ...
  const std::string& kind() const { return kind_; }
  const std::vector<Dim>& dims() const { return dims_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  /// Generator parameters kept for reports (stride, padding, groups, ...).
  const std::map<std::string, std::int64_t>& attributes() const { return attributes_; }

  int num_dims() const { return static_cast<int>(dims_.size()); }
  /// Index of the dimension called `name`, or -1.
  DimId find_dim(const std::string& name) const;
  const Tensor& output() const { return tensors_[output_]; }
  /// Product of all bounds: the number of MACs.
  std::int64_t macs() const;
  /// Full size in elements of tensor `t` (its footprint at full bounds).
  double tensor_size(int t) const;
  std::vector<double> bounds_as_extents() const;
  /// Tensor::relevant, precomputed: the hot loops of the analyses ask it
  /// for every loop of every level.
  bool relevant(int tensor, DimId dim) const {
    return relevance_[static_cast<size_t>(tensor)] >> dim & 1u;
  }

 private:
  std::string name_;
  std::string kind_;
  std::vector<Dim> dims_;
  std::vector<Tensor> tensors_;
  std::map<std::string, std::int64_t> attributes_;
  int output_ = 0;
  std::vector<std::uint64_t> relevance_;  ///< per tensor, bit d: dimension d indexes it
};

/// Parses an affine subscript such as `P*2 + R`, `2*Y + 3`, `G*4 + C` against
/// the operator's dimension names. Throws InputError (with `what` as the key)
/// on an unknown dimension or malformed text.
AffineExpr parse_affine(const std::string& text, const std::vector<Dim>& dims);
/// Prints an affine expression back in the syntax `parse_affine` reads.
std::string format_affine(const AffineExpr& expr, const std::vector<Dim>& dims);

}  // namespace mapex
