#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <set>

namespace mapex {

bool AffineExpr::uses(DimId dim) const {
  for (const auto& term : terms)
    if (term.dim == dim && term.coeff != 0) return true;
  return false;
}

double AffineExpr::extent(std::span<const double> dim_extent) const {
  double span = 1;
  for (const auto& term : terms)
    span += static_cast<double>(std::llabs(term.coeff)) *
            (dim_extent[static_cast<size_t>(term.dim)] - 1);
  return span;
}

std::string to_string(TensorRole role) { return role == TensorRole::kInput ? "input" : "output"; }

std::string to_string(Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone:
      return "none";
    case Reduction::kSum:
      return "sum";
    case Reduction::kMax:
      return "max";
  }
  return "none";
}

bool Tensor::relevant(DimId dim) const {
  for (const auto& s : subscripts)
    if (s.uses(dim)) return true;
  return false;
}

double Tensor::footprint(std::span<const double> dim_extent) const {
  double size = 1;
  for (const auto& s : subscripts) size *= s.extent(dim_extent);
  return size;
}

namespace {

/// The operator's sizes fit an int64, so that code counting MACs, spans and
/// subscript extents in integers never overflows: the product of the bounds
/// (the MAC count), and each subscript's extent at full bounds,
/// sum |coeff| * (bound - 1) + 1, which bounds its extent at every smaller
/// tile, and its constant. Checked once here instead of on every evaluation.
void check_sizes_fit(const std::string& where, const std::vector<Dim>& dims,
                     const std::vector<Tensor>& tensors) {
  std::int64_t macs = 1;
  for (const auto& d : dims)
    if (auto next = checked_mul(macs, d.bound))
      macs = *next;
    else
      throw InputError(where + ": the product of the loop bounds (the number of MACs) exceeds " +
                       std::to_string(std::numeric_limits<std::int64_t>::max()) +
                       " at dimension '" + d.name + "' (" + std::to_string(d.bound) + ")");
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  for (const auto& tensor : tensors)
    for (const auto& s : tensor.subscripts) {
      std::optional<std::int64_t> extent = 1;
      for (const auto& term : s.terms) {
        if (!extent || term.coeff == kMin) {
          extent.reset();
          break;
        }
        const auto part = checked_mul(term.coeff < 0 ? -term.coeff : term.coeff,
                                      dims[static_cast<size_t>(term.dim)].bound - 1);
        extent = part ? checked_add(*extent, *part) : std::nullopt;
      }
      if (!extent || s.constant == kMin)
        throw InputError(where + ": a subscript of tensor '" + tensor.name + "' spans more than " +
                         std::to_string(std::numeric_limits<std::int64_t>::max()) +
                         " elements (its coefficients times the bounds overflow)");
    }
}

}  // namespace

Operator Operator::make(std::string name, std::string kind, std::vector<Dim> dims,
                        std::vector<Tensor> tensors,
                        std::map<std::string, std::int64_t> attributes) {
  const std::string where = "operator '" + name + "'";
  if (dims.empty()) throw InputError(where + ": needs at least one loop dimension");
  std::set<std::string> names;
  for (const auto& d : dims) {
    if (d.name.empty()) throw InputError(where + ": a dimension has an empty name");
    if (!names.insert(d.name).second)
      throw InputError(where + ": dimension '" + d.name + "' appears twice");
    if (d.bound < 1)
      throw InputError(where + ": dimension '" + d.name + "' has bound " + std::to_string(d.bound) +
                       "; expected a positive integer");
  }
  int outputs = 0;
  int output_index = 0;
  std::set<std::string> tensor_names;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto& tensor = tensors[t];
    if (!tensor_names.insert(tensor.name).second)
      throw InputError(where + ": tensor '" + tensor.name + "' appears twice");
    if (tensor.subscripts.empty())
      throw InputError(where + ": tensor '" + tensor.name + "' has no subscripts");
    for (const auto& s : tensor.subscripts)
      for (const auto& term : s.terms)
        if (term.dim < 0 || term.dim >= static_cast<int>(dims.size()))
          throw InputError(where + ": tensor '" + tensor.name + "' uses an unknown dimension");
    if (tensor.role == TensorRole::kOutput) {
      ++outputs;
      output_index = static_cast<int>(t);
    }
  }
  if (outputs != 1)
    throw InputError(where + ": expected exactly one output tensor, found " +
                     std::to_string(outputs));
  check_sizes_fit(where, dims, tensors);
  Operator op;
  op.name_ = std::move(name);
  op.kind_ = std::move(kind);
  op.dims_ = std::move(dims);
  op.tensors_ = std::move(tensors);
  op.attributes_ = std::move(attributes);
  op.output_ = output_index;
  for (const auto& t : op.tensors_) {
    std::uint64_t mask = 0;
    for (DimId d = 0; d < op.num_dims() && d < 64; ++d)
      if (t.relevant(d)) mask |= std::uint64_t{1} << d;
    op.relevance_.push_back(mask);
  }
  return op;
}

DimId Operator::find_dim(const std::string& name) const {
  for (size_t d = 0; d < dims_.size(); ++d)
    if (dims_[d].name == name) return static_cast<DimId>(d);
  return -1;
}

std::int64_t Operator::macs() const {
  // Cannot overflow: Operator::make checked the product (check_sizes_fit).
  std::int64_t product = 1;
  for (const auto& d : dims_) product *= d.bound;
  return product;
}

std::vector<double> Operator::bounds_as_extents() const {
  std::vector<double> out;
  for (const auto& d : dims_) out.push_back(static_cast<double>(d.bound));
  return out;
}

double Operator::tensor_size(int t) const {
  return tensors_[static_cast<size_t>(t)].footprint(bounds_as_extents());
}

namespace {

// A tiny recursive-descent reader for `term (+|- term)*`, where a term is
// INT, NAME, INT*NAME or NAME*INT.
class AffineParser {
 public:
  AffineParser(const std::string& text, const std::vector<Dim>& dims) : text_(text), dims_(dims) {}

  AffineExpr parse() {
    AffineExpr expr;
    int sign = 1;
    skip_space();
    if (peek() == '-') {
      sign = -1;
      ++pos_;
    } else if (peek() == '+') {
      ++pos_;
    }
    for (;;) {
      term(expr, sign);
      skip_space();
      if (pos_ == text_.size()) break;
      const char c = text_[pos_];
      if (c != '+' && c != '-') error("expected '+' or '-'");
      sign = (c == '-') ? -1 : 1;
      ++pos_;
    }
    return expr;
  }

 private:
  void term(AffineExpr& expr, int sign) {
    skip_space();
    std::int64_t coeff = 1;
    DimId dim = -1;
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      coeff = number();
      skip_space();
      if (peek() == '*') {
        ++pos_;
        skip_space();
        dim = name();
      }
    } else {
      dim = name();
      skip_space();
      if (peek() == '*') {
        ++pos_;
        skip_space();
        coeff = number();
      }
    }
    // coeff >= 0 (number() reads digits only), so sign * coeff fits.
    if (dim < 0) {
      add(expr.constant, sign * coeff);
      return;
    }
    for (auto& t : expr.terms)
      if (t.dim == dim) {
        add(t.coeff, sign * coeff);
        return;
      }
    expr.terms.push_back(AffineTerm{dim, sign * coeff});
  }

  /// `total += v`, an error when the sum of repeated terms overflows.
  void add(std::int64_t& total, std::int64_t v) const {
    if (auto sum = checked_add(total, v))
      total = *sum;
    else
      error("the terms add up to more than " +
            std::to_string(std::numeric_limits<std::int64_t>::max()));
  }

  std::int64_t number() {
    const size_t start = pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    if (start == pos_) error("expected a number");
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec != std::errc() || ptr != text_.data() + pos_) {
      const std::string digits = text_.substr(start, pos_ - start);
      pos_ = start;
      error("expected a number of at most " +
            std::to_string(std::numeric_limits<std::int64_t>::max()) + ", got '" + digits + "'");
    }
    return value;
  }

  DimId name() {
    const size_t start = pos_;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') ++pos_;
    if (start == pos_) error("expected a dimension name or a number");
    const std::string id = text_.substr(start, pos_ - start);
    for (size_t d = 0; d < dims_.size(); ++d)
      if (dims_[d].name == id) return static_cast<DimId>(d);
    std::string known;
    for (const auto& d : dims_) known += (known.empty() ? "" : ", ") + d.name;
    throw InputError("subscript '" + text_ + "' names unknown dimension '" + id +
                     "'; expected one of: " + known);
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[noreturn]] void error(const std::string& what) const {
    throw InputError("subscript '" + text_ + "': " + what + " at character " +
                     std::to_string(pos_ + 1));
  }

  const std::string& text_;
  const std::vector<Dim>& dims_;
  size_t pos_ = 0;
};

}  // namespace

AffineExpr parse_affine(const std::string& text, const std::vector<Dim>& dims) {
  return AffineParser(text, dims).parse();
}

std::string format_affine(const AffineExpr& expr, const std::vector<Dim>& dims) {
  std::string out;
  for (const auto& t : expr.terms) {
    if (t.coeff == 0) continue;
    std::int64_t c = t.coeff;
    if (!out.empty()) {
      out += c < 0 ? " - " : " + ";
      c = std::llabs(c);
    } else if (c < 0) {
      out += "-";
      c = -c;
    }
    out += dims[static_cast<size_t>(t.dim)].name;
    if (c != 1) out += "*" + std::to_string(c);
  }
  if (expr.constant != 0 || out.empty()) {
    if (out.empty())
      out = std::to_string(expr.constant);
    else
      out += (expr.constant < 0 ? " - " : " + ") + std::to_string(std::llabs(expr.constant));
  }
  return out;
}

}  // namespace mapex
