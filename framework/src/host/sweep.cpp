#include "host/sweep.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "yaml_reader.hpp"

namespace mapex::host {

// ---------------------------------------------------------------- filters

struct Filter::Node {
  enum class Op {
    kNumber,
    kName,
    kNeg,
    kNot,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kLt,
    kLe,
    kGt,
    kGe,
    kEq,
    kNe,
    kAnd,
    kOr
  };
  Op op = Op::kNumber;
  double number = 0;
  std::string name;
  std::shared_ptr<const Node> a, b;
};

namespace {

using FNode = std::shared_ptr<const Filter::Node>;

// Recursive descent over the filter text; errors carry the character offset.
class FilterParser {
 public:
  FilterParser(const std::string& text, SourceLocation where) : text_(text), where_(where) {}

  FNode parse() {
    FNode n = parse_or();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_, 1) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where_, "filter",
                     "expected an expression like 'L2.size_bytes >= 64 * L1.size_bytes', got '" +
                         text_ + "' (" + what + " at character " + std::to_string(pos_ + 1) + ")");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(const std::string& token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    // Word operators must not be the start of a longer name.
    if (std::isalpha(static_cast<unsigned char>(token[0]))) {
      const size_t end = pos_ + token.size();
      if (end < text_.size() &&
          (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
        return false;
    }
    pos_ += token.size();
    return true;
  }
  static FNode make(Filter::Node::Op op, FNode a, FNode b = nullptr) {
    auto n = std::make_shared<Filter::Node>();
    n->op = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  FNode parse_or() {
    FNode n = parse_and();
    while (accept("or")) n = make(Filter::Node::Op::kOr, n, parse_and());
    return n;
  }
  FNode parse_and() {
    FNode n = parse_not();
    while (accept("and")) n = make(Filter::Node::Op::kAnd, n, parse_not());
    return n;
  }
  FNode parse_not() {
    if (accept("not")) return make(Filter::Node::Op::kNot, parse_not());
    return parse_comparison();
  }
  FNode parse_comparison() {
    FNode n = parse_sum();
    using Op = Filter::Node::Op;
    // Two-character operators first.
    static const std::pair<const char*, Op> ops[] = {{"<=", Op::kLe}, {">=", Op::kGe},
                                                     {"==", Op::kEq}, {"!=", Op::kNe},
                                                     {"<", Op::kLt},  {">", Op::kGt}};
    for (const auto& [token, op] : ops)
      if (accept(token)) return make(op, n, parse_sum());
    return n;
  }
  FNode parse_sum() {
    FNode n = parse_product();
    for (;;) {
      if (accept("+"))
        n = make(Filter::Node::Op::kAdd, n, parse_product());
      else if (accept("-"))
        n = make(Filter::Node::Op::kSub, n, parse_product());
      else
        return n;
    }
  }
  FNode parse_product() {
    FNode n = parse_unary();
    for (;;) {
      if (accept("*"))
        n = make(Filter::Node::Op::kMul, n, parse_unary());
      else if (accept("/"))
        n = make(Filter::Node::Op::kDiv, n, parse_unary());
      else
        return n;
    }
  }
  FNode parse_unary() {
    if (accept("-")) return make(Filter::Node::Op::kNeg, parse_unary());
    return parse_primary();
  }
  FNode parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    if (accept("(")) {
      FNode n = parse_or();
      if (!accept(")")) fail("missing ')'");
      return n;
    }
    auto n = std::make_shared<Filter::Node>();
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      char* end = nullptr;
      n->number = std::strtod(text_.c_str() + pos_, &end);
      pos_ = static_cast<size_t>(end - text_.c_str());
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                     text_[pos_] == '_' || text_[pos_] == '.'))
        ++pos_;
      const std::string word = text_.substr(start, pos_ - start);
      if (word == "true" || word == "false") {
        n->number = word == "true" ? 1 : 0;
      } else {
        n->op = Filter::Node::Op::kName;
        n->name = word;
      }
      return n;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string& text_;
  SourceLocation where_;
  size_t pos_ = 0;
};

double evaluate(const Filter::Node& n,
                const std::function<std::optional<double>(const std::string&)>& lookup,
                const std::string& text, const SourceLocation& where) {
  using Op = Filter::Node::Op;
  auto ev = [&](const FNode& c) { return evaluate(*c, lookup, text, where); };
  switch (n.op) {
    case Op::kNumber:
      return n.number;
    case Op::kName: {
      const auto v = lookup(n.name);
      if (!v)
        throw InputError(where, "filter",
                         "'" + n.name + "' in '" + text + "' names no parameter of this sweep");
      return *v;
    }
    case Op::kNeg:
      return -ev(n.a);
    case Op::kNot:
      return ev(n.a) == 0 ? 1 : 0;
    case Op::kAdd:
      return ev(n.a) + ev(n.b);
    case Op::kSub:
      return ev(n.a) - ev(n.b);
    case Op::kMul:
      return ev(n.a) * ev(n.b);
    case Op::kDiv:
      return ev(n.a) / ev(n.b);
    case Op::kLt:
      return ev(n.a) < ev(n.b);
    case Op::kLe:
      return ev(n.a) <= ev(n.b);
    case Op::kGt:
      return ev(n.a) > ev(n.b);
    case Op::kGe:
      return ev(n.a) >= ev(n.b);
    case Op::kEq:
      return ev(n.a) == ev(n.b);
    case Op::kNe:
      return ev(n.a) != ev(n.b);
    case Op::kAnd:
      return ev(n.a) != 0 && ev(n.b) != 0;
    case Op::kOr:
      return ev(n.a) != 0 || ev(n.b) != 0;
  }
  return 0;
}

std::string value_text(const YAML::Node& value) {
  if (value.IsSequence()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : "x") + v.Scalar();
    return out;
  }
  return value.Scalar();
}

}  // namespace

Filter::Filter(std::string text, SourceLocation where)
    : text_(std::move(text)), where_(std::move(where)) {
  root_ = FilterParser(text_, where_).parse();
}

bool Filter::keep(const std::function<std::optional<double>(const std::string&)>& lookup) const {
  return evaluate(*root_, lookup, text_, where_) != 0;
}

// ----------------------------------------------------------------- sweeps

namespace {

void read_axis_values(const std::string& file, const YAML::Node& key, const YAML::Node& values,
                      std::vector<YAML::Node>& out) {
  const std::string name = yaml::as_string(file, key, "sweep");
  if (!values.IsSequence() || values.size() == 0)
    yaml::fail(file, values, name, "expected a non-empty list of values to sweep");
  for (const auto& v : values) {
    if (!(v.IsScalar() || v.IsSequence()))
      yaml::fail(file, v, name, "expected a value (a number, a boolean, or a list for a shape)");
    out.push_back(v);
  }
}

}  // namespace

Sweep read_sweep(const std::string& file, const YAML::Node& node) {
  Sweep sweep;
  yaml::Map m(file, node, "sweep");
  std::set<std::string> seen;
  auto note_key = [&](const YAML::Node& key) {
    const std::string name = yaml::as_string(file, key, "sweep");
    if (!seen.insert(name).second)
      yaml::fail(file, key, name, "is swept twice; give each parameter once");
    return name;
  };
  if (auto product = m.optional("product")) {
    if (!product->IsMap() || product->size() == 0)
      yaml::fail(file, *product, "product", "expected a non-empty map of parameter to values");
    for (const auto& item : *product) {
      Sweep::Axis axis;
      axis.keys.push_back(note_key(item.first));
      axis.key_where.push_back(yaml::location(file, item.first));
      std::vector<YAML::Node> values;
      read_axis_values(file, item.first, item.second, values);
      for (auto& v : values) axis.rows.push_back({v});
      sweep.axes.push_back(std::move(axis));
    }
  }
  if (auto zip = m.optional("zip")) {
    std::vector<YAML::Node> groups;
    if (zip->IsMap())
      groups.push_back(*zip);
    else if (zip->IsSequence() && zip->size() > 0)
      for (const auto& g : *zip) groups.push_back(g);
    else
      yaml::fail(file, *zip, "zip",
                 "expected a map of parameter to equally long lists, or a list of such maps");
    for (const auto& group : groups) {
      if (!group.IsMap() || group.size() == 0)
        yaml::fail(file, group, "zip", "expected a non-empty map of parameter to values");
      Sweep::Axis axis;
      size_t length = 0;
      for (const auto& item : group) {
        const std::string name = note_key(item.first);
        std::vector<YAML::Node> values;
        read_axis_values(file, item.first, item.second, values);
        if (axis.keys.empty()) {
          length = values.size();
          axis.rows.resize(length);
        } else if (values.size() != length) {
          yaml::fail(file, item.second, name,
                     "zipped lists must have the same length: expected " + std::to_string(length) +
                         " values (as '" + axis.keys.front() + "'), got " +
                         std::to_string(values.size()));
        }
        axis.keys.push_back(name);
        axis.key_where.push_back(yaml::location(file, item.first));
        for (size_t i = 0; i < length; ++i) axis.rows[i].push_back(values[i]);
      }
      sweep.axes.push_back(std::move(axis));
    }
  }
  if (auto filter = m.optional("filter")) {
    std::vector<YAML::Node> items;
    if (filter->IsScalar())
      items.push_back(*filter);
    else if (filter->IsSequence())
      for (const auto& f : *filter) items.push_back(f);
    else
      yaml::fail(file, *filter, "filter", "expected an expression or a list of expressions");
    for (const auto& f : items)
      sweep.filters.emplace_back(yaml::as_string(file, f, "filter"), yaml::location(file, f));
  }
  m.finish();
  if (sweep.axes.empty())
    yaml::fail(file, node, "sweep", "expected 'product' or 'zip' with at least one parameter");
  return sweep;
}

std::vector<std::vector<Assignment>> Sweep::points(const std::string& file) const {
  std::vector<std::vector<Assignment>> out{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<Assignment>> next;
    for (const auto& prefix : out)
      for (const auto& row : axis.rows) {
        auto point = prefix;
        for (size_t k = 0; k < axis.keys.size(); ++k)
          point.push_back(Assignment{axis.keys[k], row[k], value_text(row[k]),
                                     yaml::location(file, row[k]), axis.key_where[k]});
        next.push_back(std::move(point));
      }
    out = std::move(next);
  }
  return out;
}

std::string variant_name(const std::string& base, const std::vector<Assignment>& assignments) {
  if (assignments.empty()) return base;
  std::string out = base + "[";
  for (size_t i = 0; i < assignments.size(); ++i)
    out += (i ? "," : "") + assignments[i].key + "=" + assignments[i].text;
  return out + "]";
}

// ------------------------------------------------------ architecture keys

namespace {

const char* const kLevelKeys =
    "size_bytes, double_buffered, read_energy_pj, write_energy_pj, bandwidth_gbps, block_bytes, "
    "shape, noc.bandwidth_gbps, noc.latency_cycles, noc.hop_energy_pj, noc.multicast, "
    "noc.reduction, noc.forwarding";

// Finds the level a key starts with ("<level>.<field>"); -1 if none.
int level_of(const std::vector<Level>& levels, const std::string& key, std::string& field) {
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string prefix = levels[i].name + ".";
    if (key.compare(0, prefix.size(), prefix) == 0) {
      field = key.substr(prefix.size());
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool needs(LevelKind kind, const std::string& field) {
  if (field == "shape" || field.rfind("noc.", 0) == 0) return kind == LevelKind::kSpatial;
  if (field == "block_bytes") return kind == LevelKind::kDram;
  if (field == "size_bytes" || field == "double_buffered") return kind == LevelKind::kBuffer;
  return kind != LevelKind::kSpatial;  // energies and bandwidth of buffers and DRAM
}

[[noreturn]] void unknown_key(const Architecture& arch, const Assignment& a) {
  throw InputError(a.key_where, a.key,
                   "names no parameter of architecture '" + arch.name() + "'; expected " +
                       architecture_keys_help(arch));
}

}  // namespace

std::string architecture_keys_help(const Architecture& arch) {
  std::string levels;
  for (const auto& l : arch.levels()) levels += (levels.empty() ? "" : ", ") + l.name;
  return "clock_mhz, word_bits, output_word_bits, mac.energy_pj, mac.per_pe, or <level>.<field> "
         "with a level of " +
         levels + " and a field of " + kLevelKeys;
}

Architecture apply_architecture(const Architecture& base, const std::vector<Assignment>& points,
                                const std::string& name) {
  double clock = base.clock_mhz();
  std::int64_t word_bits = base.word_bits();
  WordWidths widths = base.word_widths();
  double mac_energy = base.mac_energy_pj();
  std::int64_t per_pe = base.macs_per_pe();
  std::vector<Level> levels = base.levels();
  for (const auto& a : points) {
    const std::string& file = a.where.file;
    const YAML::Node& v = a.value;
    auto positive_int = [&] { return yaml::as_positive_int(file, v, a.key); };
    // Real values within the ranges the architecture loader enforces.
    auto in = [&](const ParameterRange& r) {
      return yaml::as_double_in(file, v, a.key, r.low, r.high);
    };
    auto boolean = [&] { return yaml::as_bool(file, v, a.key); };
    if (a.key == "clock_mhz") {
      clock = in(kClockMhzRange);
    } else if (a.key == "word_bits") {
      word_bits = positive_int();
      if (word_bits > 1024) throw InputError(a.where, a.key, "expected at most 1024 bits");
    } else if (a.key == "output_word_bits") {
      const std::int64_t bits = positive_int();
      if (bits % 8 != 0 || bits > 1024)
        throw InputError(a.where, a.key, "expected a multiple of 8 (8, 16, 32, ...)");
      widths.output_bits = static_cast<int>(bits);
    } else if (a.key == "mac.energy_pj") {
      mac_energy = in(kEnergyPjRange);
    } else if (a.key == "mac.per_pe") {
      per_pe = positive_int();
      if (per_pe > std::numeric_limits<int>::max())
        throw InputError(
            a.where, a.key,
            "expected at most " + std::to_string(std::numeric_limits<int>::max()) + " MACs per PE");
    } else {
      std::string field;
      const int index = level_of(levels, a.key, field);
      if (index < 0) unknown_key(base, a);
      Level& l = levels[static_cast<size_t>(index)];
      static const std::set<std::string> fields = {
          "size_bytes",         "double_buffered",   "read_energy_pj", "write_energy_pj",
          "bandwidth_gbps",     "block_bytes",       "shape",          "noc.bandwidth_gbps",
          "noc.latency_cycles", "noc.hop_energy_pj", "noc.multicast",  "noc.reduction",
          "noc.forwarding"};
      if (!fields.count(field)) unknown_key(base, a);
      if (!needs(l.kind, field))
        throw InputError(a.key_where, a.key,
                         "level '" + l.name + "' is a " + to_string(l.kind) +
                             " level: it has no '" + field + "'");
      if (field == "size_bytes") l.size_bytes = positive_int();
      if (field == "double_buffered") l.double_buffered = boolean();
      if (field == "read_energy_pj") l.read_energy_pj = in(kEnergyPjRange);
      if (field == "write_energy_pj") l.write_energy_pj = in(kEnergyPjRange);
      if (field == "bandwidth_gbps") l.bandwidth_gbps = in(kBandwidthGbpsRange);
      if (field == "block_bytes") l.block_bytes = positive_int();
      if (field == "noc.bandwidth_gbps") l.noc.bandwidth_gbps = in(kBandwidthGbpsRange);
      if (field == "noc.latency_cycles") l.noc.latency_cycles = in(kNocLatencyCyclesRange);
      if (field == "noc.hop_energy_pj") l.noc.hop_energy_pj = in(kEnergyPjRange);
      if (field == "noc.multicast") l.noc.multicast = boolean();
      if (field == "noc.reduction") l.noc.reduction = boolean();
      if (field == "noc.forwarding") l.noc.forwarding = boolean();
      if (field == "shape") {
        l.shape.clear();
        if (v.IsSequence()) {
          for (const auto& s : v) l.shape.push_back(yaml::as_positive_int(file, s, a.key));
        } else if (v.Scalar().find('x') != std::string::npos) {
          // "16x16"
          const std::string& s = v.Scalar();
          size_t start = 0;
          for (;;) {
            const size_t x = s.find('x', start);
            const std::string part = s.substr(start, x == std::string::npos ? x : x - start);
            char* end = nullptr;
            const long n = std::strtol(part.c_str(), &end, 10);
            if (part.empty() || *end != '\0' || n <= 0)
              throw InputError(a.where, a.key,
                               "expected a shape like 16, [16, 16] or 16x16, got '" + s + "'");
            l.shape.push_back(n);
            if (x == std::string::npos) break;
            start = x + 1;
          }
        } else {
          l.shape.push_back(positive_int());
        }
      }
    }
  }
  if (word_bits % 8 != 0)
    throw InputError(points.front().where, "word_bits", "expected a multiple of 8");
  try {
    return Architecture::make(name, clock, static_cast<int>(word_bits), mac_energy,
                              static_cast<int>(per_pe), std::move(levels), std::move(widths));
  } catch (const InputError& e) {
    throw InputError(points.empty() ? SourceLocation{} : points.front().where, "sweep",
                     "design point '" + name + "' is not a valid architecture: " + e.what());
  }
}

std::optional<double> architecture_value(const Architecture& arch, const std::string& key) {
  if (key == "num_pes") return static_cast<double>(arch.num_pes());
  if (key == "clock_mhz") return arch.clock_mhz();
  if (key == "word_bits") return arch.word_bits();
  if (key == "output_word_bits")
    return arch.word_widths().output_bits > 0 ? arch.word_widths().output_bits : arch.word_bits();
  if (key == "mac.energy_pj") return arch.mac_energy_pj();
  if (key == "mac.per_pe") return arch.macs_per_pe();
  std::string field;
  const int index = level_of(arch.levels(), key, field);
  if (index < 0) return std::nullopt;
  const Level& l = arch.levels()[static_cast<size_t>(index)];
  if (!needs(l.kind, field) && field != "bandwidth_gbps") return std::nullopt;
  if (field == "size_bytes") return static_cast<double>(l.size_bytes);
  if (field == "double_buffered") return l.double_buffered;
  if (field == "read_energy_pj") return l.read_energy_pj;
  if (field == "write_energy_pj") return l.write_energy_pj;
  if (field == "bandwidth_gbps")
    return l.kind == LevelKind::kSpatial ? std::nullopt : l.bandwidth_gbps;
  if (field == "block_bytes") return static_cast<double>(l.block_bytes);
  if (field == "shape") return static_cast<double>(l.fanout());
  if (field == "noc.bandwidth_gbps") return l.noc.bandwidth_gbps;
  if (field == "noc.latency_cycles") return l.noc.latency_cycles;
  if (field == "noc.hop_energy_pj") return l.noc.hop_energy_pj;
  if (field == "noc.multicast") return l.noc.multicast;
  if (field == "noc.reduction") return l.noc.reduction;
  if (field == "noc.forwarding") return l.noc.forwarding;
  return std::nullopt;
}

}  // namespace mapex::host
