#include <limits>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>

namespace mapex {
namespace {

AffineExpr var(DimId d, std::int64_t coeff = 1) { return AffineExpr{{AffineTerm{d, coeff}}, 0}; }

AffineExpr sum(DimId a, std::int64_t ca, DimId b, std::int64_t cb) {
  return AffineExpr{{AffineTerm{a, ca}, AffineTerm{b, cb}}, 0};
}

void require_positive(const std::string& layer, const char* key, std::int64_t value) {
  if (value < 1)
    throw InputError("layer '" + layer + "': " + key + " is " + std::to_string(value) +
                     "; expected a positive integer");
}

/// a * b + c for the filter span and padded input size, an error naming the
/// layer when it does not fit an int64.
std::int64_t checked_size(const std::string& layer, const char* what, std::int64_t a,
                          std::int64_t b, std::int64_t c) {
  const auto product = checked_mul(a, b);
  const auto total = product ? checked_add(*product, c) : std::nullopt;
  if (!total)
    throw InputError("layer '" + layer + "': the " + what + " exceeds " +
                     std::to_string(std::numeric_limits<std::int64_t>::max()));
  return *total;
}

}  // namespace

Operator make_conv2d(const std::string& name, const Conv2dShape& s) {
  for (auto [key, value] : {std::pair{"N", s.N},
                            {"C", s.C},
                            {"K", s.K},
                            {"H", s.H},
                            {"W", s.W},
                            {"R", s.R},
                            {"S", s.S},
                            {"stride", s.stride_h},
                            {"stride", s.stride_w},
                            {"dilation", s.dilation_h},
                            {"dilation", s.dilation_w},
                            {"groups", s.groups}})
    require_positive(name, key, value);
  if (s.padding_h < 0 || s.padding_w < 0)
    throw InputError("layer '" + name + "': padding is negative; expected 0 or more");
  if (s.C % s.groups != 0 || s.K % s.groups != 0)
    throw InputError("layer '" + name + "': groups " + std::to_string(s.groups) +
                     " must divide C " + std::to_string(s.C) + " and K " + std::to_string(s.K));
  const std::int64_t span_h = checked_size(name, "dilated filter height", s.dilation_h, s.R - 1, 1);
  const std::int64_t span_w = checked_size(name, "dilated filter width", s.dilation_w, s.S - 1, 1);
  const std::int64_t padded_h = checked_size(name, "padded input height", s.padding_h, 2, s.H);
  const std::int64_t padded_w = checked_size(name, "padded input width", s.padding_w, 2, s.W);
  if (padded_h < span_h || padded_w < span_w)
    throw InputError("layer '" + name + "': the filter (" + std::to_string(span_h) + "x" +
                     std::to_string(span_w) + " after dilation) is larger than the padded input (" +
                     std::to_string(padded_h) + "x" + std::to_string(padded_w) + ")");
  const std::int64_t P = (padded_h - span_h) / s.stride_h + 1;
  const std::int64_t Q = (padded_w - span_w) / s.stride_w + 1;
  const std::int64_t cg = s.C / s.groups;
  const std::int64_t kg = s.K / s.groups;

  std::map<std::string, std::int64_t> attrs{{"C", s.C},
                                            {"K", s.K},
                                            {"H", s.H},
                                            {"W", s.W},
                                            {"R", s.R},
                                            {"S", s.S},
                                            {"P", P},
                                            {"Q", Q},
                                            {"stride_h", s.stride_h},
                                            {"stride_w", s.stride_w},
                                            {"padding_h", s.padding_h},
                                            {"padding_w", s.padding_w},
                                            {"dilation_h", s.dilation_h},
                                            {"dilation_w", s.dilation_w},
                                            {"groups", s.groups}};

  if (s.groups == 1) {
    // Output[n][k][p][q] += Input[n][c][p*sy + r*dy][q*sx + s*dx] * Weight[k][c][r][s]
    std::vector<Dim> dims{{"N", s.N}, {"K", s.K}, {"C", s.C}, {"P", P},
                          {"Q", Q},   {"R", s.R}, {"S", s.S}};
    enum { n, k, c, p, q, r, sd };
    std::vector<Tensor> tensors{
        {"Input",
         TensorRole::kInput,
         Reduction::kNone,
         {var(n), var(c), sum(p, s.stride_h, r, s.dilation_h),
          sum(q, s.stride_w, sd, s.dilation_w)}},
        {"Weight", TensorRole::kInput, Reduction::kNone, {var(k), var(c), var(r), var(sd)}},
        {"Output", TensorRole::kOutput, Reduction::kSum, {var(n), var(k), var(p), var(q)}}};
    return Operator::make(name, "conv2d", std::move(dims), std::move(tensors), std::move(attrs));
  }
  if (cg == 1 && kg == 1) {
    // Depthwise (Marvel §3): Output[n][c][p][q] += Input[n][c][..][..] * Weight[c][r][s]
    std::vector<Dim> dims{{"N", s.N}, {"C", s.C}, {"P", P}, {"Q", Q}, {"R", s.R}, {"S", s.S}};
    enum { n, c, p, q, r, sd };
    std::vector<Tensor> tensors{
        {"Input",
         TensorRole::kInput,
         Reduction::kNone,
         {var(n), var(c), sum(p, s.stride_h, r, s.dilation_h),
          sum(q, s.stride_w, sd, s.dilation_w)}},
        {"Weight", TensorRole::kInput, Reduction::kNone, {var(c), var(r), var(sd)}},
        {"Output", TensorRole::kOutput, Reduction::kSum, {var(n), var(c), var(p), var(q)}}};
    return Operator::make(name, "conv2d", std::move(dims), std::move(tensors), std::move(attrs));
  }
  // Grouped: channel index = g * (channels per group) + local index.
  std::vector<Dim> dims{{"N", s.N}, {"G", s.groups}, {"K", kg},  {"C", cg},
                        {"P", P},   {"Q", Q},        {"R", s.R}, {"S", s.S}};
  enum { n, g, k, c, p, q, r, sd };
  std::vector<Tensor> tensors{
      {"Input",
       TensorRole::kInput,
       Reduction::kNone,
       {var(n), sum(g, cg, c, 1), sum(p, s.stride_h, r, s.dilation_h),
        sum(q, s.stride_w, sd, s.dilation_w)}},
      {"Weight", TensorRole::kInput, Reduction::kNone, {var(g), var(k), var(c), var(r), var(sd)}},
      {"Output", TensorRole::kOutput, Reduction::kSum, {var(n), sum(g, kg, k, 1), var(p), var(q)}}};
  return Operator::make(name, "conv2d", std::move(dims), std::move(tensors), std::move(attrs));
}

Operator make_gemm(const std::string& name, std::int64_t M, std::int64_t N, std::int64_t K) {
  require_positive(name, "M", M);
  require_positive(name, "N", N);
  require_positive(name, "K", K);
  std::vector<Dim> dims{{"M", M}, {"N", N}, {"K", K}};
  enum { m, n, k };
  std::vector<Tensor> tensors{{"A", TensorRole::kInput, Reduction::kNone, {var(m), var(k)}},
                              {"B", TensorRole::kInput, Reduction::kNone, {var(k), var(n)}},
                              {"C", TensorRole::kOutput, Reduction::kSum, {var(m), var(n)}}};
  return Operator::make(name, "gemm", std::move(dims), std::move(tensors),
                        {{"M", M}, {"N", N}, {"K", K}});
}

Operator make_fc(const std::string& name, std::int64_t N, std::int64_t C, std::int64_t K) {
  require_positive(name, "N", N);
  require_positive(name, "C", C);
  require_positive(name, "K", K);
  std::vector<Dim> dims{{"N", N}, {"K", K}, {"C", C}};
  enum { n, k, c };
  std::vector<Tensor> tensors{{"Input", TensorRole::kInput, Reduction::kNone, {var(n), var(c)}},
                              {"Weight", TensorRole::kInput, Reduction::kNone, {var(k), var(c)}},
                              {"Output", TensorRole::kOutput, Reduction::kSum, {var(n), var(k)}}};
  return Operator::make(name, "fc", std::move(dims), std::move(tensors),
                        {{"N", N}, {"C", C}, {"K", K}});
}

}  // namespace mapex
