#pragma once
/// \file
/// Generators of common operators as loop nests (docs/design.md, Operator).

#include <cstdint>
#include <mapex/operator.hpp>
#include <string>

namespace mapex {

/// A 2-D convolution. H and W are the input size before padding; the output
/// size is P = (H + 2*padding - dilation*(R-1) - 1) / stride + 1.
struct Conv2dShape {
  std::int64_t N = 1;
  std::int64_t C = 1;  ///< input channels, all groups
  std::int64_t K = 1;  ///< output channels, all groups
  std::int64_t H = 1;
  std::int64_t W = 1;
  std::int64_t R = 1;
  std::int64_t S = 1;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  std::int64_t padding_h = 0;
  std::int64_t padding_w = 0;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t groups = 1;
};

/// Builds the loop nest of a CONV2D. Regular convolutions have dims
/// N,K,C,P,Q,R,S; depthwise ones (groups == C == K) have N,C,P,Q,R,S with a
/// weight indexed [C][R][S] (Marvel §3's depthwise form); other grouped ones
/// add a G dimension with per-group K and C. Input rows are indexed in padded
/// coordinates, `P*stride + R*dilation`. Throws InputError on an inconsistent
/// shape (e.g. C not divisible by groups, empty output).
Operator make_conv2d(const std::string& name, const Conv2dShape& shape);

/// C[M][N] += A[M][K] * B[K][N].
Operator make_gemm(const std::string& name, std::int64_t M, std::int64_t N, std::int64_t K);

/// A fully-connected layer: Output[N][K] += Input[N][C] * Weight[K][C].
Operator make_fc(const std::string& name, std::int64_t N, std::int64_t C, std::int64_t K);

}  // namespace mapex
