// MAESTRO's mapping and hardware files (MAESTRO, IEEE Micro 2020, §III: the
// data-centric directives; the file syntax and defaults follow MAESTRO's
// own front end as documented in refdata/maestro/README.md).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <optional>
#include <sstream>
#include <string_view>

namespace mapex::mdc {

DirectiveEvaluator::~DirectiveEvaluator() = default;

std::string to_string(LayerType type) {
  switch (type) {
    case LayerType::kConv:
      return "CONV";
    case LayerType::kDsconv:
      return "DSCONV";
    case LayerType::kNgconv:
      return "NGCONV";
    case LayerType::kTrconv:
      return "TRCONV";
    case LayerType::kGemm:
      return "GEMM";
  }
  return "CONV";
}

std::int64_t Layer::dim(std::string_view dim_name) const {
  for (const auto& [n, v] : dims)
    if (n == dim_name) return v;
  return 0;
}

std::int64_t Layer::true_macs() const {
  // Checked: the dimensions are any int64 the file gives (MAESTRO's own
  // front end wraps silently). The parser calls this once per layer, so an
  // overflow is reported there with the layer's line.
  auto mul = [&](std::int64_t a, std::int64_t b) {
    if (auto p = checked_mul(a, b)) return *p;
    throw InputError("layer '" + name + "': its number of MACs exceeds " +
                     std::to_string(std::numeric_limits<std::int64_t>::max()));
  };
  if (type == LayerType::kGemm) return mul(mul(dim("M"), dim("N")), dim("K"));
  const std::int64_t r = std::max<std::int64_t>(dim("R"), 1);
  const std::int64_t s = std::max<std::int64_t>(dim("S"), 1);
  // Output rows: given directly (Y'), or from the input rows and the stride.
  std::int64_t oy = dim("Y'");
  std::int64_t ox = dim("X'");
  if (oy == 0) oy = (dim("Y") - r) / stride_y + 1;
  if (ox == 0) ox = (dim("X") - s) / stride_x + 1;
  std::int64_t macs = 1;
  for (std::int64_t f :
       {std::max<std::int64_t>(dim("N"), 1), std::max<std::int64_t>(dim("C"), 1), r, s, oy, ox})
    macs = mul(macs, f);
  if (type != LayerType::kDsconv) macs = mul(macs, std::max<std::int64_t>(dim("K"), 1));
  if (type == LayerType::kNgconv) macs = mul(macs, std::max<std::int64_t>(dim("G"), 1));
  return macs;
}

namespace {

struct Token {
  std::string text;
  int line = 0;
  bool negative = false;  ///< written with a leading '-' (a separator for MAESTRO)
  int column = 0;         ///< 1-based, of the token's first character
};

// MAESTRO splits on blanks and the characters , - > ( ) : ; and a token
// starting with // ends the line. Braces are kept as tokens of their own.
std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> out;
  int line = 1;
  std::size_t line_start = 0, start = 0;
  std::string cur;
  bool negative = false;
  auto column = [&](std::size_t at) { return static_cast<int>(at - line_start) + 1; };
  auto flush = [&] {
    if (!cur.empty()) out.push_back({std::move(cur), line, negative, column(start)});
    cur.clear();
    negative = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/' && cur.empty()) {
      while (i < text.size() && text[i] != '\n') ++i;
      flush();
      ++line;
      line_start = i + 1;
      continue;
    }
    if (c == '\n') {
      flush();
      ++line;
      line_start = i + 1;
    } else if (c == '-' && cur.empty() && i + 1 < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      // MAESTRO drops the '-' (it splits on it) and reads -4 as 4; mapex
      // remembers it so that a negative size or offset is reported.
      negative = true;
      start = i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == ',' || c == '-' || c == '>' || c == '(' ||
               c == ')' || c == ':' || c == ';') {
      flush();
    } else if (c == '{' || c == '}') {
      flush();
      out.push_back({std::string(1, c), line, false, column(i)});
    } else {
      if (cur.empty() && !negative) start = i;
      cur += c;
    }
  }
  flush();
  return out;
}

bool is_integer(const std::string& s) {
  if (s.empty()) return false;
  std::size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

/// The value of an integer token (is_integer holds), or nothing when it
/// does not fit an int64. std::stoll would throw std::out_of_range, which
/// reaches the user as "stoll" with no file or line.
std::optional<std::int64_t> to_int64(const std::string& s) {
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

const std::string kInt64Max = std::to_string(std::numeric_limits<std::int64_t>::max());
constexpr std::int64_t kMaxNocHops = 1'000'000'000;

bool is_section(const std::string& s) {
  return s == "Type" || s == "Stride" || s == "Dimensions" || s == "Dataflow" || s == "Layer";
}

bool is_directive_word(const std::string& s) {
  return s == "TemporalMap" || s == "SpatialMap" || s == "Cluster";
}

class Parser {
 public:
  Parser(const std::string& text, std::string origin)
      : tokens_(tokenize(text)), origin_(std::move(origin)) {}

  Network parse() {
    Network net;
    net.origin = origin_;
    bool seen_network = false;
    while (!at_end()) {
      const Token t = next();
      if (t.text == "Constant") {
        const Token name = expect_any("a constant name");
        const Token value = expect_any("the constant's value");
        if (!is_integer(value.text))
          fail(value, "Constant",
               "expected an integer value for '" + name.text + "', got '" + value.text + "'");
        const auto v = to_int64(value.text);
        if (!v)
          fail(value, "Constant",
               "expected an integer of at most " + kInt64Max + " for '" + name.text + "', got '" +
                   value.text + "'");
        constants_[name.text] = *v;
      } else if (t.text == "Network") {
        if (seen_network) fail(t, "Network", "a second Network block; expected one per file");
        seen_network = true;
        net.name = expect_any("a network name").text;
        expect("{", "Network");
        while (!peek_is("}")) {
          if (at_end()) fail(last(), "Network", "missing '}' closing the Network block");
          const Token lt = next();
          if (lt.text == "Layer") {
            net.layers.push_back(parse_layer(lt, net.layers));
          } else if (lt.text == "Accelerator") {
            skip_block(lt);
          } else {
            fail(lt, "Network", "expected 'Layer', got '" + lt.text + "'");
          }
        }
        next();
      } else if (t.text == "Accelerator") {
        skip_block(t);
      } else {
        fail(t, "", "expected 'Constant' or 'Network', got '" + t.text + "'");
      }
    }
    if (!seen_network) fail_at(1, 1, "Network", "no Network block found");
    if (net.layers.empty()) fail_at(1, 1, "Network", "the network has no layers");
    return net;
  }

 private:
  [[noreturn]] void fail(const Token& t, const std::string& key, const std::string& problem) const {
    fail_at(t.line, t.column, key, problem);
  }
  [[noreturn]] void fail_at(int line, int column, const std::string& key,
                            const std::string& problem) const {
    throw InputError(SourceLocation{origin_, line, column}, key, problem);
  }
  bool at_end() const { return pos_ >= tokens_.size(); }
  Token last() const { return tokens_.empty() ? Token{"", 1, false, 1} : tokens_.back(); }
  const Token& next() {
    if (at_end()) fail(last(), "", "unexpected end of file");
    return tokens_[pos_++];
  }
  // The words these take are literals: string_view and const char* keep
  // a std::string from being built for every token (messages build theirs).
  bool peek_is(std::string_view s) const { return !at_end() && tokens_[pos_].text == s; }
  const Token& expect_any(std::string_view what) {
    if (at_end()) fail(last(), "", "unexpected end of file; expected " + std::string(what));
    const Token& t = tokens_[pos_];
    if (t.text == "{" || t.text == "}")
      fail(t, "", "expected " + std::string(what) + ", got '" + t.text + "'");
    ++pos_;
    return t;
  }
  void expect(std::string_view s, std::string_view key) {
    if (at_end())
      fail(last(), std::string(key), "unexpected end of file; expected '" + std::string(s) + "'");
    const Token& t = tokens_[pos_];
    if (t.text != s)
      fail(t, std::string(key), "expected '" + std::string(s) + "', got '" + t.text + "'");
    ++pos_;
  }
  void skip_block(const Token& opener) {
    expect("{", opener.text);
    int depth = 1;
    while (depth > 0) {
      if (at_end()) fail(opener, opener.text, "missing '}' closing the block");
      const Token& t = next();
      if (t.text == "{") ++depth;
      if (t.text == "}") --depth;
    }
  }

  static const std::vector<std::string>& allowed_dims(LayerType type) {
    static const std::vector<std::string> gemm{"M", "N", "K"};
    static const std::vector<std::string> ngconv{"N", "G", "K", "C",  "R",
                                                 "S", "Y", "X", "Y'", "X'"};
    static const std::vector<std::string> conv{"N", "K", "C", "R", "S", "Y", "X", "Y'", "X'"};
    switch (type) {
      case LayerType::kGemm:
        return gemm;
      case LayerType::kNgconv:
        return ngconv;
      default:
        return conv;
    }
  }

  // A size or offset: an integer, a Constant, or Sz(DIM).
  std::int64_t parse_value(const Layer& layer, const char* key_text) {
    const Token& t = expect_any("a size");
    const std::string_view key = key_text;
    std::int64_t v = 0;
    if (t.text == "Sz") {
      const Token& d = expect_any("a dimension after Sz");
      v = layer.dim(d.text);
      if (v == 0) {
        // Sz of an output dimension given through the input one, and back.
        if (d.text == "Y'" && layer.dim("Y") > 0)
          v = (layer.dim("Y") - std::max<std::int64_t>(layer.dim("R"), 1)) / layer.stride_y + 1;
        else if (d.text == "X'" && layer.dim("X") > 0)
          v = (layer.dim("X") - std::max<std::int64_t>(layer.dim("S"), 1)) / layer.stride_x + 1;
        else
          fail(d, key_text, "Sz(" + d.text + ") names no dimension of layer '" + layer.name + "'");
      }
    } else if (is_integer(t.text)) {
      const auto parsed = to_int64(t.text);
      if (!parsed)
        fail(t, key_text,
             "expected a positive " + std::string(key) + " of at most " + kInt64Max + ", got '" +
                 t.text + "'");
      v = *parsed;
    } else if (auto it = constants_.find(t.text); it != constants_.end()) {
      v = it->second;
    } else {
      fail(t, key_text,
           "expected a positive integer, a Constant or Sz(DIM) as " + std::string(key) + ", got '" +
               t.text + "'");
    }
    if (t.negative) v = -v;
    if (v <= 0)
      fail(t, key_text, "expected a positive " + std::string(key) + ", got " + std::to_string(v));
    return v;
  }

  Layer parse_layer(const Token& layer_token, const std::vector<Layer>& previous) {
    Layer layer;
    layer.line = layer_token.line;
    layer.column = layer_token.column;
    // MAESTRO splits names on '-' and keeps the last piece (Conv2d-1 is 1).
    layer.name = expect_any("a layer name").text;
    while (!at_end() && !peek_is("{") && !peek_is("}") && !is_section(tokens_[pos_].text))
      layer.name = next().text;
    expect("{", "Layer");
    bool has_type = false, has_dims = false, has_dataflow = false;
    Token type_token = layer_token;
    while (!peek_is("}")) {
      if (at_end()) fail(layer_token, "Layer", "missing '}' closing layer '" + layer.name + "'");
      const Token& t = next();
      if (t.text == "Type") {
        type_token = expect_any("a layer type");
        const std::string& v = type_token.text;
        if (v == "CONV")
          layer.type = LayerType::kConv;
        else if (v == "DSCONV")
          layer.type = LayerType::kDsconv;
        else if (v == "NGCONV")
          layer.type = LayerType::kNgconv;
        else if (v == "TRCONV")
          layer.type = LayerType::kTrconv;
        else if (v == "GEMM")
          layer.type = LayerType::kGemm;
        else
          fail(type_token, "Type",
               "unknown layer type '" + v + "'; expected CONV, DSCONV, NGCONV, TRCONV or GEMM");
        has_type = true;
      } else if (t.text == "Stride") {
        if (has_dims) fail(t, "Stride", "Stride must come before Dimensions");
        expect("{", "Stride");
        while (!peek_is("}")) {
          const Token& k = expect_any("X or Y");
          if (k.text != "X" && k.text != "Y")
            fail(k, "Stride", "expected X or Y, got '" + k.text + "'");
          const std::int64_t v = parse_value(layer, "stride");
          (k.text == "X" ? layer.stride_x : layer.stride_y) = v;
        }
        next();
      } else if (t.text == "Dimensions") {
        if (!has_type) fail(t, "Dimensions", "Type must come before Dimensions");
        expect("{", "Dimensions");
        const auto& allowed = allowed_dims(layer.type);
        while (!peek_is("}")) {
          const Token& k = expect_any("a dimension name");
          if (std::find(allowed.begin(), allowed.end(), k.text) == allowed.end()) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            fail(k, "Dimensions",
                 "unknown dimension '" + k.text + "' for " + to_string(layer.type) +
                     "; expected one of " + list);
          }
          if (layer.dim(k.text) != 0) fail(k, "Dimensions", "dimension '" + k.text + "' twice");
          layer.dims.emplace_back(k.text, parse_value(layer, "dimension size"));
        }
        next();
        has_dims = true;
      } else if (t.text == "Dataflow") {
        if (!has_dims) fail(t, "Dataflow", "Dimensions must come before Dataflow");
        expect("{", "Dataflow");
        while (!peek_is("}")) {
          if (at_end()) fail(t, "Dataflow", "missing '}' closing the Dataflow block");
          layer.dataflow.push_back(parse_directive(layer));
        }
        next();
        has_dataflow = true;
      } else {
        fail(t, "Layer", "expected Type, Stride, Dimensions or Dataflow, got '" + t.text + "'");
      }
    }
    next();
    if (!has_type) fail(layer_token, "Type", "layer '" + layer.name + "' has no Type");
    if (!has_dims) fail(layer_token, "Dimensions", "layer '" + layer.name + "' has no Dimensions");
    check_dims(layer, layer_token);
    try {
      (void)layer.true_macs();
    } catch (const InputError& e) {
      fail(layer_token, "Dimensions", e.what());
    }
    if (!has_dataflow) {
      if (previous.empty())
        fail(layer_token, "Dataflow",
             "layer '" + layer.name + "' has no Dataflow and no previous layer to copy it from");
      layer.dataflow = previous.back().dataflow;
      // A copied dataflow must still name this layer's dimensions.
      for (const auto& d : layer.dataflow)
        check_directive_dim(layer, d, layer_token.line, layer_token.column);
    }
    return layer;
  }

  void check_dims(const Layer& layer, const Token& at) const {
    auto need = [&](const char* d) {
      if (layer.dim(d) == 0)
        fail(at, "Dimensions",
             "layer '" + layer.name + "' (" + to_string(layer.type) + ") lacks dimension " + d);
    };
    if (layer.type == LayerType::kGemm) {
      need("M");
      need("N");
      need("K");
      return;
    }
    for (const char* d : {"C", "R", "S"}) need(d);
    if (layer.type != LayerType::kDsconv) need("K");
    if (layer.type == LayerType::kNgconv) need("G");
    if (layer.dim("Y") == 0 && layer.dim("Y'") == 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' needs Y or Y'");
    if (layer.dim("X") == 0 && layer.dim("X'") == 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' needs X or X'");
    if (layer.dim("Y") > 0 && layer.dim("Y'") > 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' gives both Y and Y'");
    if (layer.dim("X") > 0 && layer.dim("X'") > 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' gives both X and X'");
    if (layer.dim("Y") > 0 && layer.dim("Y") < layer.dim("R"))
      fail(at, "Dimensions", "layer '" + layer.name + "': Y is smaller than the filter height R");
    if (layer.dim("X") > 0 && layer.dim("X") < layer.dim("S"))
      fail(at, "Dimensions", "layer '" + layer.name + "': X is smaller than the filter width S");
  }

  void check_directive_dim(const Layer& layer, const Directive& d, int line, int column) const {
    if (d.kind == DirectiveKind::kCluster) return;
    bool known = layer.dim(d.dim) > 0;
    if (d.dim == "Y'" || d.dim == "Y") known = known || layer.dim("Y") > 0 || layer.dim("Y'") > 0;
    if (d.dim == "X'" || d.dim == "X") known = known || layer.dim("X") > 0 || layer.dim("X'") > 0;
    if (layer.type == LayerType::kGemm && (d.dim == "Y'" || d.dim == "X'")) known = false;
    if (!known)
      fail_at(line, column, "Dataflow",
              "directive on unknown dimension '" + d.dim + "'; layer '" + layer.name +
                  "' has no such dimension");
  }

  Directive parse_directive(const Layer& layer) {
    const Token& t = next();
    Directive d;
    d.line = t.line;
    d.column = t.column;
    if (t.text == "TemporalMap" || t.text == "SpatialMap") {
      d.kind = t.text == "TemporalMap" ? DirectiveKind::kTemporalMap : DirectiveKind::kSpatialMap;
      d.size = parse_value(layer, "size");
      d.offset = parse_value(layer, "offset");
      const Token& dim = expect_any("a dimension name");
      if (is_directive_word(dim.text))
        fail(dim, "Dataflow", t.text + " needs a dimension after (size, offset)");
      d.dim = dim.text;
      check_directive_dim(layer, d, dim.line, dim.column);
    } else if (t.text == "Cluster") {
      d.kind = DirectiveKind::kCluster;
      d.size = parse_value(layer, "cluster size");
      const Token& type = expect_any("the cluster type P or L");
      if (type.text != "P" && type.text != "L")
        fail(type, "Cluster", "expected the cluster type P or L, got '" + type.text + "'");
      d.cluster_type = type.text[0];
    } else {
      fail(t, "Dataflow",
           "unknown directive '" + t.text + "'; expected TemporalMap, SpatialMap or Cluster");
    }
    return d;
  }

  std::vector<Token> tokens_;
  std::string origin_;
  std::size_t pos_ = 0;
  std::map<std::string, std::int64_t> constants_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "", "cannot open file for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Network parse_mapping(const std::string& text, const std::string& origin) {
  return Parser(text, origin).parse();
}

Network load_mapping(const std::string& path) { return parse_mapping(read_file(path), path); }

Hardware parse_hardware(const std::string& text, const std::string& origin) {
  Hardware hw;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const auto c = line.find("//"); c != std::string::npos) line.erase(c);
    std::string key, value;
    const auto colon = line.find(':');
    auto trim = [](std::string s) {
      const auto b = s.find_first_not_of(" \t\r");
      if (b == std::string::npos) return std::string();
      const auto e = s.find_last_not_of(" \t\r");
      return s.substr(b, e - b + 1);
    };
    if (trim(line).empty()) continue;
    // Columns of the key and of the value, 1-based.
    const int key_column = static_cast<int>(line.find_first_not_of(" \t\r")) + 1;
    const SourceLocation at_key{origin, number, key_column};
    if (colon == std::string::npos)
      throw InputError(at_key, "", "expected 'key: value', got '" + trim(line) + "'");
    key = trim(line.substr(0, colon));
    value = trim(line.substr(colon + 1));
    const auto value_start = line.find_first_not_of(" \t\r", colon + 1);
    const SourceLocation at_value{
        origin, number,
        static_cast<int>(value_start == std::string::npos ? colon + 1 : value_start) + 1};
    const auto parsed = is_integer(value) ? to_int64(value) : std::nullopt;
    if (!parsed || *parsed <= 0)
      throw InputError(
          at_value, key,
          "expected a positive integer of at most " + kInt64Max + ", got '" + value + "'");
    const std::int64_t v = *parsed;
    if (key == "num_pes")
      hw.num_pes = v;
    else if (key == "l1_size_cstr")
      hw.l1_size = v;
    else if (key == "l2_size_cstr")
      hw.l2_size = v;
    else if (key == "noc_bw_cstr")
      hw.noc_bw = v;
    else if (key == "offchip_bw_cstr")
      hw.offchip_bw = v;
    else if (key == "NoC_NumHops" && v > kMaxNocHops)
      // The hop latency is added to every transfer's cycles: bounded so that
      // those sums cannot overflow (a latency of 2^63 cycles means nothing).
      throw InputError(at_value, key,
                       "expected at most " + std::to_string(kMaxNocHops) + " hops, got " + value);
    else if (key == "NoC_NumHops")
      hw.noc_latency = v;
    else
      throw InputError(at_key, key,
                       "unknown key; expected num_pes, l1_size_cstr, l2_size_cstr, noc_bw_cstr, "
                       "offchip_bw_cstr or NoC_NumHops");
  }
  return hw;
}

Hardware load_hardware(const std::string& path) { return parse_hardware(read_file(path), path); }

void validate(const Layer& layer, const Hardware& hw, const std::string& origin) {
  auto fail = [&](const auto& at, const std::string& key, const std::string& problem) {
    throw InputError(SourceLocation{origin, at.line, at.column}, key,
                     "layer '" + layer.name + "': " + problem);
  };
  std::int64_t clusters = 1;
  int spatial = 0;
  int level = 0;
  struct At {
    int line, column;
  };
  At level_at{layer.line, layer.column};
  auto close_level = [&](At at) {
    if (spatial == 0)
      fail(at, "Dataflow",
           "cluster level " + std::to_string(level) + " has no SpatialMap; expected one or two");
    spatial = 0;
    ++level;
  };
  for (const auto& d : layer.dataflow) {
    if (d.kind == DirectiveKind::kCluster) {
      close_level({d.line, d.column});
      const auto product = checked_mul(clusters, d.size);
      if (!product)
        fail(d, "Cluster",
             "clusters of more than " + kInt64Max + " PEs exceed the " +
                 std::to_string(hw.num_pes) + " PEs of the hardware");
      clusters = *product;
      if (clusters > hw.num_pes)
        fail(d, "Cluster",
             "clusters of " + std::to_string(clusters) + " PEs exceed the " +
                 std::to_string(hw.num_pes) + " PEs of the hardware");
      level_at = {d.line, d.column};
      continue;
    }
    if (d.kind == DirectiveKind::kSpatialMap && ++spatial > 2)
      fail(d, "SpatialMap",
           "a third SpatialMap in cluster level " + std::to_string(level) +
               "; expected one or two per level");
    // MAESTRO §III: a filter dimension mapped temporally must be mapped whole
    // (the sliding window needs the whole filter row in one step).
    if (d.kind == DirectiveKind::kTemporalMap && (d.dim == "R" || d.dim == "S") &&
        layer.type != LayerType::kGemm) {
      const std::int64_t full = layer.dim(d.dim);
      if (d.size != full || d.offset != full)
        fail(d, "TemporalMap",
             "TemporalMap on " + d.dim + " must have size and offset " + std::to_string(full) +
                 " (the whole filter), got (" + std::to_string(d.size) + "," +
                 std::to_string(d.offset) + ")");
    }
  }
  close_level(layer.dataflow.empty()
                  ? level_at
                  : At{layer.dataflow.back().line, layer.dataflow.back().column});
}

std::string format_dataflow(const std::vector<Directive>& dataflow, const std::string& indent) {
  std::string out;
  for (const auto& d : dataflow) {
    out += indent;
    switch (d.kind) {
      case DirectiveKind::kTemporalMap:
      case DirectiveKind::kSpatialMap:
        out += (d.kind == DirectiveKind::kTemporalMap ? "TemporalMap(" : "SpatialMap(") +
               std::to_string(d.size) + "," + std::to_string(d.offset) + ") " + d.dim + ";\n";
        break;
      case DirectiveKind::kCluster:
        out += "Cluster(" + std::to_string(d.size) + "," + std::string(1, d.cluster_type) + ");\n";
        break;
    }
  }
  return out;
}

std::string format_network(const Network& network) {
  std::string out = "Network " + network.name + " {\n";
  for (const auto& layer : network.layers) {
    out += "\tLayer " + layer.name + " {\n";
    out += "\t\tType: " + to_string(layer.type) + "\n";
    if (layer.type != LayerType::kGemm)
      out += "\t\tStride { X: " + std::to_string(layer.stride_x) +
             ", Y: " + std::to_string(layer.stride_y) + " }\n";
    out += "\t\tDimensions { ";
    for (std::size_t i = 0; i < layer.dims.size(); ++i)
      out += (i ? ", " : "") + layer.dims[i].first + ": " + std::to_string(layer.dims[i].second);
    out += " }\n\t\tDataflow {\n" + format_dataflow(layer.dataflow, "\t\t\t") + "\t\t}\n\t}\n";
  }
  return out + "}\n";
}

}  // namespace mapex::mdc
