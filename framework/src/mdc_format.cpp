// MAESTRO's mapping and hardware files (MAESTRO, IEEE Micro 2020, §III: the
// data-centric directives; the file syntax and defaults follow MAESTRO's
// own front end as documented in refdata/maestro/README.md).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <memory>
#include <optional>
#include <string_view>

namespace mapex::mdc {
namespace {

/// Word comparison inline: the sizes first, then the characters. Through
/// string_view's operator== each comparison was a call to compare and one
/// to memcmp, a fifth of the parser's instructions.
[[gnu::always_inline]] inline bool eq(std::string_view a, std::string_view b) {
  // Inlined where b is a literal, the memcmp of a known small size becomes
  // a compare or two. Where neither size is known (dimension names against
  // dimension names), the first character decides most comparisons and
  // all of one-character names without a call to memcmp.
  if (a.size() != b.size()) return false;
  if (b.empty()) return true;
  return a[0] == b[0] &&
         (b.size() == 1 || __builtin_memcmp(a.data() + 1, b.data() + 1, b.size() - 1) == 0);
}

/// The sizes of a layer's dimensions from one pass over its list (0 when
/// absent; the first entry of a name wins, as in Layer::dim): the checks
/// and the MAC count read each several times.
struct Sizes {
  std::int64_t n = 0, g = 0, k = 0, c = 0, r = 0, s = 0, y = 0, x = 0, yo = 0, xo = 0, m = 0;
};
Sizes sizes_of(const Layer& layer) {
  Sizes z;
  for (auto it = layer.dims.rbegin(); it != layer.dims.rend(); ++it) {
    const std::string& name = it->first;
    const std::int64_t v = it->second;
    if (name.size() == 2 && name[1] == '\'') {
      if (name[0] == 'Y') z.yo = v;
      if (name[0] == 'X') z.xo = v;
      continue;
    }
    if (name.size() != 1) continue;
    switch (name[0]) {
      case 'N':
        z.n = v;
        break;
      case 'G':
        z.g = v;
        break;
      case 'K':
        z.k = v;
        break;
      case 'C':
        z.c = v;
        break;
      case 'R':
        z.r = v;
        break;
      case 'S':
        z.s = v;
        break;
      case 'Y':
        z.y = v;
        break;
      case 'X':
        z.x = v;
        break;
      case 'M':
        z.m = v;
        break;
      default:
        break;
    }
  }
  return z;
}

/// The size of dimension `name` in `z` (0 when absent or not a dimension).
std::int64_t size_of(const Sizes& z, std::string_view name) {
  if (name.size() == 2 && name[1] == '\'')
    return name[0] == 'Y' ? z.yo : (name[0] == 'X' ? z.xo : 0);
  if (name.size() != 1) return 0;
  switch (name[0]) {
    case 'N':
      return z.n;
    case 'G':
      return z.g;
    case 'K':
      return z.k;
    case 'C':
      return z.c;
    case 'R':
      return z.r;
    case 'S':
      return z.s;
    case 'Y':
      return z.y;
    case 'X':
      return z.x;
    case 'M':
      return z.m;
    default:
      return 0;
  }
}

}  // namespace

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
    if (eq(n, dim_name)) return v;
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
  const Sizes z = sizes_of(*this);
  if (type == LayerType::kGemm) return mul(mul(z.m, z.n), z.k);
  const std::int64_t r = std::max<std::int64_t>(z.r, 1);
  const std::int64_t s = std::max<std::int64_t>(z.s, 1);
  // Output rows: given directly (Y'), or from the input rows and the stride.
  std::int64_t oy = z.yo;
  std::int64_t ox = z.xo;
  if (oy == 0) oy = (z.y - r) / stride_y + 1;
  if (ox == 0) ox = (z.x - s) / stride_x + 1;
  std::int64_t macs = 1;
  for (std::int64_t f :
       {std::max<std::int64_t>(z.n, 1), std::max<std::int64_t>(z.c, 1), r, s, oy, ox})
    macs = mul(macs, f);
  if (type != LayerType::kDsconv) macs = mul(macs, std::max<std::int64_t>(z.k, 1));
  if (type == LayerType::kNgconv) macs = mul(macs, std::max<std::int64_t>(z.g, 1));
  return macs;
}

namespace {

/// One word of the file: a view into the text being parsed (which outlives
/// the parser), so no word is copied or allocated (MAESTRO files are mostly
/// short words; the parser used to build a std::string per token).
struct Token {
  std::string_view text;
  int line = 0;
  int column = 0;         ///< 1-based, of the token's first character
  bool negative = false;  ///< written with a leading '-' (a separator for MAESTRO)
};

/// What a character does to MAESTRO's front end, as a table so that the
/// scan costs one load per character.
enum CharClass : std::uint8_t {
  kSeparator,
  kNewline,
  kBrace,
  kMinus,
  kNul,          // the end of the text, or a word character inside it
  kWordOrSlash,  // the classes from here on continue a word
  kSlash = kWordOrSlash,
  kWordChar,
};
struct CharClasses {
  CharClass of[256] = {};
  constexpr CharClasses() {
    for (auto& c : of) c = kWordChar;
    for (unsigned char c : {' ', '\t', '\r', ',', '>', '(', ')', ':', ';'}) of[c] = kSeparator;
    of[static_cast<unsigned char>('\n')] = kNewline;
    of[static_cast<unsigned char>('{')] = kBrace;
    of[static_cast<unsigned char>('}')] = kBrace;
    of[static_cast<unsigned char>('-')] = kMinus;  // a separator, or the sign of a number
    of[static_cast<unsigned char>('/')] = kSlash;  // a word character, or a comment
    of[0] = kNul;
  }
  CharClass operator()(char c) const { return of[static_cast<unsigned char>(c)]; }
  /// A word character or '/' (inside a word, "//" is no comment).
  bool in_word(char c) const { return of[static_cast<unsigned char>(c)] >= kWordOrSlash; }
};
constexpr CharClasses kClass{};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// MAESTRO splits on blanks and the characters , - > ( ) : ; and a token
// starting with // ends the line. Braces are kept as tokens of their own.
// The words are made one at a time as the parser asks for them: a vector of
// every token of a 66-layer file (4,000 tokens, 128 KiB) was written and
// read back once, in fresh pages the kernel had to fault in and zero.
class Lexer {
 public:
  /// `text` must be followed by a '\0' (as a std::string's text is): the
  /// scan stops there without comparing its position to the end at every
  /// character.
  explicit Lexer(std::string_view text) : text_(text), at_(text.data()), line_start_(text.data()) {
    scan();
  }

  bool at_end() const { return !has_ahead_; }
  /// The next token (valid unless at_end()).
  const Token& ahead() const { return ahead_; }
  /// The last token of the file once at_end() (where "unexpected end of
  /// file" points), before then the last one made.
  Token last() const { return made_any_ ? ahead_ : Token{"", 1, 1, false}; }
  /// Moves past ahead().
  void advance() { scan(); }
  /// The text from ahead() on, up to the end of the file.
  std::string_view rest() const {
    return has_ahead_ ? text_.substr(static_cast<std::size_t>(ahead_.text.data() - text_.data()))
                      : std::string_view{};
  }

 private:
  const char* end() const { return text_.data() + text_.size(); }
  int column(const char* at) const { return static_cast<int>(at - line_start_) + 1; }
  void make(const char* word, const char* word_end, const char* start, bool negative) {
    ahead_ = {std::string_view(word, static_cast<std::size_t>(word_end - word)), line_,
              column(start), negative};
    has_ahead_ = made_any_ = true;
  }
  // A word ends at a separator, newline, brace or the end of the text; a
  // '-' right after a word is only that (so Conv2d-1 gives Conv2d and 1,
  // not a negative 1). Returns where the scan goes on.
  const char* make_word(const char* start, const char* word, bool negative) {
    const char* p = word;
    while (kClass.in_word(*p) || (*p == '\0' && p != end())) ++p;
    make(word, p, start, negative);
    return *p == '-' ? p + 1 : p;
  }

  /// Finds the token after the current one; at the end of the text, keeps
  /// the last one in ahead_ for last().
  void scan() {
    has_ahead_ = false;
    const char* p = at_;
    for (;;) {
      switch (kClass(*p)) {
        case kSeparator:
          // Blanks come in runs (indentation): skipped in one loop.
          do ++p;
          while (kClass(*p) == kSeparator);
          break;
        case kNewline:
          ++line_;
          line_start_ = ++p;
          // The indentation of the next line, without a turn of the switch.
          while (kClass(*p) == kSeparator) ++p;
          break;
        case kNul:
          if (p == end()) {
            at_ = p;
            return;
          }
          p = make_word(p, p, false);  // a '\0' inside the file is a word character
          at_ = p;
          return;
        case kBrace:
          make(p, p + 1, p, false);
          at_ = p + 1;
          return;
        case kMinus:
          // MAESTRO drops the '-' (it splits on it) and reads -4 as 4; mapex
          // remembers it so that a negative size or offset is reported.
          if (is_digit(p[1])) {
            p = make_word(p, p + 1, true);
            at_ = p;
            return;
          }
          ++p;
          break;
        case kSlash:
          if (p[1] == '/') {
            // A comment: the rest of the line (its newline is counted above).
            while (*p != '\n' && p != end()) ++p;
            break;
          }
          [[fallthrough]];
        case kWordChar:
          at_ = make_word(p, p, false);
          return;
      }
    }
  }

  std::string_view text_;
  // Pointers, not offsets: one subtraction fewer per token and column.
  const char* at_;  ///< where the scan goes on
  int line_ = 1;
  const char* line_start_;
  Token ahead_;
  bool has_ahead_ = false;
  bool made_any_ = false;
};

/// The value of an integer token ([+-]digits), nothing when the token is
/// not one, and `overflow` set when it is one but does not fit an int64
/// (std::stoll would throw std::out_of_range, which reaches the user as
/// "stoll" with no file or line).
std::optional<std::int64_t> to_int64(std::string_view s, bool& overflow) {
  overflow = false;
  if (s.empty()) return std::nullopt;
  const bool minus = s[0] == '-';
  const std::size_t sign = (s[0] == '+' || minus) ? 1 : 0;
  if (sign == s.size()) return std::nullopt;
  // Digits accumulated as an unsigned magnitude (a call to from_chars per
  // number was a tenth of the parser); -2^63 still fits.
  std::uint64_t v = 0;
  // Up to 18 digits cannot overflow: no bound to test per digit (sizes in
  // MAESTRO files are short; the test per digit was half of this function).
  if (s.size() - sign <= 18) {
    for (std::size_t i = sign; i < s.size(); ++i) {
      if (!is_digit(s[i])) return std::nullopt;
      v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    }
    return minus ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  }
  const std::uint64_t limit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (minus ? 1 : 0);
  for (std::size_t i = sign; i < s.size(); ++i) {
    if (!is_digit(s[i])) {
      overflow = false;  // not an integer at all, however long
      return std::nullopt;
    }
    if (!overflow) {
      const auto digit = static_cast<std::uint64_t>(s[i] - '0');
      if (v > (limit - digit) / 10)
        overflow = true;
      else
        v = v * 10 + digit;
    }
  }
  if (overflow) return std::nullopt;
  return minus ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
}

const std::string kInt64Max = std::to_string(std::numeric_limits<std::int64_t>::max());
constexpr std::int64_t kMaxNocHops = 1'000'000'000;

std::string str(std::string_view s) { return std::string(s); }

[[gnu::always_inline]] inline bool is_section(std::string_view s) {
  return eq(s, "Type") || eq(s, "Stride") || eq(s, "Dimensions") || eq(s, "Dataflow") ||
         eq(s, "Layer");
}

[[gnu::always_inline]] inline bool is_directive_word(std::string_view s) {
  return eq(s, "TemporalMap") || eq(s, "SpatialMap") || eq(s, "Cluster");
}

class Parser {
 public:
  // `text` must be followed by a '\0' (as a std::string's is): the lexer
  // relies on it.
  Parser(std::string_view text, std::string origin) : lexer_(text), origin_(std::move(origin)) {}

  Network parse() {
    Network net;
    net.origin = origin_;
    bool seen_network = false;
    while (!at_end()) {
      const Token t = next();
      if (eq(t.text, "Constant")) {
        const Token name = expect_any("a constant name");
        const Token value = expect_any("the constant's value");
        bool overflow = false;
        const auto v = to_int64(value.text, overflow);
        if (!v && !overflow)
          fail(value, "Constant",
               "expected an integer value for '" + str(name.text) + "', got '" + str(value.text) +
                   "'");
        if (!v)
          fail(value, "Constant",
               "expected an integer of at most " + kInt64Max + " for '" + str(name.text) +
                   "', got '" + str(value.text) + "'");
        constants_[str(name.text)] = *v;
      } else if (eq(t.text, "Network")) {
        if (seen_network) fail(t, "Network", "a second Network block; expected one per file");
        seen_network = true;
        net.name = expect_any("a network name").text;
        expect("{", "Network");
        net.layers.reserve(layers_ahead());
        while (!peek_is("}")) {
          if (at_end()) fail(last(), "Network", "missing '}' closing the Network block");
          const Token lt = next();
          if (eq(lt.text, "Layer")) {
            net.layers.push_back(parse_layer(lt, net.layers));
          } else if (eq(lt.text, "Accelerator")) {
            skip_block(lt);
          } else {
            fail(lt, "Network", "expected 'Layer', got '" + str(lt.text) + "'");
          }
        }
        next();
      } else if (eq(t.text, "Accelerator")) {
        skip_block(t);
      } else {
        fail(t, "", "expected 'Constant' or 'Network', got '" + str(t.text) + "'");
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
  bool at_end() const { return lexer_.at_end(); }
  Token last() const { return lexer_.last(); }
  Token next() {
    if (at_end()) fail(last(), "", "unexpected end of file");
    const Token t = lexer_.ahead();
    lexer_.advance();
    return t;
  }
  // The words these take are literals: string_view and const char* keep
  // a std::string from being built for every token (messages build theirs).
  [[gnu::always_inline]] bool peek_is(std::string_view s) const {
    return !at_end() && eq(lexer_.ahead().text, s);
  }
  // Inline: called for nearly every token, and the call's prologue and
  // epilogue were a third of its cost.
  [[gnu::always_inline]] Token expect_any(std::string_view what) {
    if (at_end()) fail(last(), "", "unexpected end of file; expected " + std::string(what));
    const Token t = lexer_.ahead();
    if (eq(t.text, "{") || eq(t.text, "}"))
      fail(t, "", "expected " + std::string(what) + ", got '" + str(t.text) + "'");
    lexer_.advance();
    return t;
  }
  [[gnu::always_inline]] void expect(std::string_view s, std::string_view key) {
    if (at_end())
      fail(last(), std::string(key), "unexpected end of file; expected '" + std::string(s) + "'");
    const Token& t = lexer_.ahead();
    if (!eq(t.text, s))
      fail(t, std::string(key), "expected '" + std::string(s) + "', got '" + str(t.text) + "'");
    lexer_.advance();
  }
  void skip_block(const Token& opener) {
    expect("{", opener.text);
    int depth = 1;
    while (depth > 0) {
      if (at_end()) fail(opener, str(opener.text), "missing '}' closing the block");
      const Token& t = next();
      if (eq(t.text, "{")) ++depth;
      if (eq(t.text, "}")) --depth;
    }
  }

  /// About the number of directives up to the next '}': the ';' that end
  /// them in the text (one allocation for a layer's list; only a hint, so
  /// a ';' inside a comment does no harm).
  std::size_t directives_ahead() const {
    const std::string_view rest = lexer_.rest();
    return static_cast<std::size_t>(std::count(
        rest.begin(),
        rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.find('}'), rest.size())), ';'));
  }

  /// About the number of layers in the rest of the file: the words "Layer"
  /// in its text (only a hint, as above). One allocation for the list: grown
  /// by doubling, a 66-layer network left 14 KiB of freed lists behind in
  /// fresh heap pages.
  std::size_t layers_ahead() const {
    const std::string_view rest = lexer_.rest();
    std::size_t count = 0;
    for (auto at = rest.find("Layer"); at != std::string_view::npos;
         at = rest.find("Layer", at + 5))
      ++count;
    return count;
  }

  /// About the number of dimensions up to the next '}': the ':' after
  /// their names (a hint, as above), or as many as the layer type allows
  /// when the file leaves the colons out.
  std::size_t dims_ahead(unsigned allowed) const {
    const std::string_view rest = lexer_.rest();
    const auto colons = static_cast<std::size_t>(std::count(
        rest.begin(),
        rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.find('}'), rest.size())), ':'));
    return colons > 0 ? colons : static_cast<std::size_t>(std::popcount(allowed));
  }

  /// MAESTRO's dimension names as bits of a set (0: none of them), so that
  /// checking a name against its layer type and against the names already
  /// given is a mask each instead of string comparisons along two lists (a
  /// twentieth of the reader's instructions).
  static unsigned dim_bit(std::string_view name) {
    if (name.size() == 2 && name[1] == '\'')
      return name[0] == 'Y' ? 1u << 8 : name[0] == 'X' ? 1u << 9 : 0;
    if (name.size() != 1) return 0;
    switch (name[0]) {
      case 'N':
        return 1u << 0;
      case 'G':
        return 1u << 1;
      case 'K':
        return 1u << 2;
      case 'C':
        return 1u << 3;
      case 'R':
        return 1u << 4;
      case 'S':
        return 1u << 5;
      case 'Y':
        return 1u << 6;
      case 'X':
        return 1u << 7;
      case 'M':
        return 1u << 10;
      default:
        return 0;
    }
  }
  /// The bits of allowed_dims(type).
  static unsigned allowed_dim_bits(LayerType type) {
    unsigned bits = 0;
    for (const auto& name : allowed_dims(type)) bits |= dim_bit(name);
    return bits;
  }

  static const std::vector<std::string_view>& allowed_dims(LayerType type) {
    static const std::vector<std::string_view> gemm{"M", "N", "K"};
    static const std::vector<std::string_view> ngconv{"N", "G", "K", "C",  "R",
                                                      "S", "Y", "X", "Y'", "X'"};
    static const std::vector<std::string_view> conv{"N", "K", "C", "R", "S", "Y", "X", "Y'", "X'"};
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
    if (eq(t.text, "Sz")) {
      const Token& d = expect_any("a dimension after Sz");
      v = layer.dim(d.text);
      if (v == 0) {
        // Sz of an output dimension given through the input one, and back.
        if (eq(d.text, "Y'") && layer.dim("Y") > 0)
          v = (layer.dim("Y") - std::max<std::int64_t>(layer.dim("R"), 1)) / layer.stride_y + 1;
        else if (eq(d.text, "X'") && layer.dim("X") > 0)
          v = (layer.dim("X") - std::max<std::int64_t>(layer.dim("S"), 1)) / layer.stride_x + 1;
        else
          fail(d, key_text,
               "Sz(" + str(d.text) + ") names no dimension of layer '" + layer.name + "'");
      }
    } else if (bool overflow = false; const auto parsed = to_int64(t.text, overflow)) {
      v = *parsed;
    } else if (overflow) {
      fail(t, key_text,
           "expected a positive " + std::string(key) + " of at most " + kInt64Max + ", got '" +
               str(t.text) + "'");
    } else if (auto it = constants_.find(t.text); it != constants_.end()) {
      v = it->second;
    } else {
      fail(t, key_text,
           "expected a positive integer, a Constant or Sz(DIM) as " + std::string(key) + ", got '" +
               str(t.text) + "'");
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
    while (!at_end() && !peek_is("{") && !peek_is("}") && !is_section(lexer_.ahead().text))
      layer.name = next().text;
    expect("{", "Layer");
    bool has_type = false, has_dims = false, has_dataflow = false;
    Token type_token = layer_token;
    while (!peek_is("}")) {
      if (at_end()) fail(layer_token, "Layer", "missing '}' closing layer '" + layer.name + "'");
      const Token& t = next();
      if (eq(t.text, "Type")) {
        type_token = expect_any("a layer type");
        const std::string_view v = type_token.text;
        if (eq(v, "CONV"))
          layer.type = LayerType::kConv;
        else if (eq(v, "DSCONV"))
          layer.type = LayerType::kDsconv;
        else if (eq(v, "NGCONV"))
          layer.type = LayerType::kNgconv;
        else if (eq(v, "TRCONV"))
          layer.type = LayerType::kTrconv;
        else if (eq(v, "GEMM"))
          layer.type = LayerType::kGemm;
        else
          fail(
              type_token, "Type",
              "unknown layer type '" + str(v) + "'; expected CONV, DSCONV, NGCONV, TRCONV or GEMM");
        has_type = true;
      } else if (eq(t.text, "Stride")) {
        if (has_dims) fail(t, "Stride", "Stride must come before Dimensions");
        expect("{", "Stride");
        while (!peek_is("}")) {
          const Token& k = expect_any("X or Y");
          if (!eq(k.text, "X") && !eq(k.text, "Y"))
            fail(k, "Stride", "expected X or Y, got '" + str(k.text) + "'");
          const std::int64_t v = parse_value(layer, "stride");
          (eq(k.text, "X") ? layer.stride_x : layer.stride_y) = v;
        }
        next();
      } else if (eq(t.text, "Dimensions")) {
        if (!has_type) fail(t, "Dimensions", "Type must come before Dimensions");
        expect("{", "Dimensions");
        const unsigned allowed = allowed_dim_bits(layer.type);
        unsigned seen = 0;
        layer.dims.reserve(dims_ahead(allowed));
        while (!peek_is("}")) {
          const Token& k = expect_any("a dimension name");
          const unsigned bit = dim_bit(k.text);
          if ((bit & allowed) == 0) {
            std::string list;
            for (const auto& a : allowed_dims(layer.type))
              (list += (list.empty() ? "" : ", ")) += a;
            fail(k, "Dimensions",
                 "unknown dimension '" + str(k.text) + "' for " + to_string(layer.type) +
                     "; expected one of " + list);
          }
          if ((seen & bit) != 0) fail(k, "Dimensions", "dimension '" + str(k.text) + "' twice");
          seen |= bit;
          layer.dims.emplace_back(k.text, parse_value(layer, "dimension size"));
        }
        next();
        has_dims = true;
      } else if (eq(t.text, "Dataflow")) {
        if (!has_dims) fail(t, "Dataflow", "Dimensions must come before Dataflow");
        expect("{", "Dataflow");
        layer.dataflow.reserve(directives_ahead());
        const Sizes sizes = sizes_of(layer);
        while (!peek_is("}")) {
          if (at_end()) fail(t, "Dataflow", "missing '}' closing the Dataflow block");
          layer.dataflow.push_back(parse_directive(layer, sizes));
        }
        next();
        has_dataflow = true;
      } else {
        fail(t, "Layer",
             "expected Type, Stride, Dimensions or Dataflow, got '" + str(t.text) + "'");
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
      const Sizes sizes = sizes_of(layer);
      for (const auto& d : layer.dataflow)
        check_directive_dim(layer, sizes, d, layer_token.line, layer_token.column);
    }
    return layer;
  }

  void check_dims(const Layer& layer, const Token& at) const {
    const Sizes z = sizes_of(layer);
    auto need = [&](std::int64_t size, const char* d) {
      if (size == 0)
        fail(at, "Dimensions",
             "layer '" + layer.name + "' (" + to_string(layer.type) + ") lacks dimension " + d);
    };
    if (layer.type == LayerType::kGemm) {
      need(z.m, "M");
      need(z.n, "N");
      need(z.k, "K");
      return;
    }
    need(z.c, "C");
    need(z.r, "R");
    need(z.s, "S");
    if (layer.type != LayerType::kDsconv) need(z.k, "K");
    if (layer.type == LayerType::kNgconv) need(z.g, "G");
    if (z.y == 0 && z.yo == 0) fail(at, "Dimensions", "layer '" + layer.name + "' needs Y or Y'");
    if (z.x == 0 && z.xo == 0) fail(at, "Dimensions", "layer '" + layer.name + "' needs X or X'");
    if (z.y > 0 && z.yo > 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' gives both Y and Y'");
    if (z.x > 0 && z.xo > 0)
      fail(at, "Dimensions", "layer '" + layer.name + "' gives both X and X'");
    if (z.y > 0 && z.y < z.r)
      fail(at, "Dimensions", "layer '" + layer.name + "': Y is smaller than the filter height R");
    if (z.x > 0 && z.x < z.s)
      fail(at, "Dimensions", "layer '" + layer.name + "': X is smaller than the filter width S");
  }

  // `z`: the layer's sizes (sizes_of, once its Dimensions are read).
  void check_directive_dim(const Layer& layer, const Sizes& z, const Directive& d, int line,
                           int column) const {
    if (d.kind == DirectiveKind::kCluster) return;
    bool known = size_of(z, d.dim) > 0;
    if (eq(d.dim, "Y'") || eq(d.dim, "Y")) known = known || z.y > 0 || z.yo > 0;
    if (eq(d.dim, "X'") || eq(d.dim, "X")) known = known || z.x > 0 || z.xo > 0;
    if (layer.type == LayerType::kGemm && (eq(d.dim, "Y'") || eq(d.dim, "X'"))) known = false;
    if (!known)
      fail_at(line, column, "Dataflow",
              "directive on unknown dimension '" + d.dim + "'; layer '" + layer.name +
                  "' has no such dimension");
  }

  Directive parse_directive(const Layer& layer, const Sizes& sizes) {
    const Token& t = next();
    Directive d;
    d.line = t.line;
    d.column = t.column;
    if (eq(t.text, "TemporalMap") || eq(t.text, "SpatialMap")) {
      d.kind = eq(t.text, "TemporalMap") ? DirectiveKind::kTemporalMap : DirectiveKind::kSpatialMap;
      d.size = parse_value(layer, "size");
      d.offset = parse_value(layer, "offset");
      const Token& dim = expect_any("a dimension name");
      if (is_directive_word(dim.text))
        fail(dim, "Dataflow", str(t.text) + " needs a dimension after (size, offset)");
      d.dim = dim.text;
      check_directive_dim(layer, sizes, d, dim.line, dim.column);
    } else if (eq(t.text, "Cluster")) {
      d.kind = DirectiveKind::kCluster;
      d.size = parse_value(layer, "cluster size");
      const Token& type = expect_any("the cluster type P or L");
      if (!eq(type.text, "P") && !eq(type.text, "L"))
        fail(type, "Cluster", "expected the cluster type P or L, got '" + str(type.text) + "'");
      d.cluster_type = type.text[0];
    } else {
      fail(t, "Dataflow",
           "unknown directive '" + str(t.text) + "'; expected TemporalMap, SpatialMap or Cluster");
    }
    return d;
  }

  Lexer lexer_;
  std::string origin_;
  std::map<std::string, std::int64_t, std::less<>> constants_;
};

/// The whole file in one string of its size, read with open/read: growing
/// the string as the text came in (stdio and a 16 KiB stack buffer) wrote a
/// 20 KiB file into 16 KiB and then 32 KiB of fresh heap, 12 pages for the
/// kernel to fault in and zero where 5 hold it (a fresh page costs about
/// 0.85 us of a 1.6 ms process here, some 3,000 instructions' worth;
/// docs/results/benchmarks.md). A file that changes while it is read still
/// reads to its end; a directory opens but reads as nothing, as it did
/// through ifstream.
/// A file's text followed by a '\0' (where the lexer stops), in a buffer
/// that is not zeroed before the text is read into it (zeroing it was 21k
/// instructions for a 20 KiB file).
struct FileText {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

FileText read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(SourceLocation{path, 0, 0}, "", "cannot open file for reading");
  struct stat st {};
  // Room for one byte more than the file: a read that fills it means the
  // file grew.
  std::size_t room = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0
                         ? static_cast<std::size_t>(st.st_size) + 1
                         : std::size_t{4096};
  FileText text{std::make_unique_for_overwrite<char[]>(room + 1), 0};
  for (;;) {
    if (text.size == room) {
      room *= 2;
      auto larger = std::make_unique_for_overwrite<char[]>(room + 1);
      std::memcpy(larger.get(), text.data.get(), text.size);
      text.data = std::move(larger);
    }
    const ssize_t got = ::read(fd, text.data.get() + text.size, room - text.size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.size += static_cast<std::size_t>(got);
  }
  ::close(fd);
  text.data[text.size] = '\0';
  return text;
}

constexpr std::string_view kBlanks = " \t\r";

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

}  // namespace

Network parse_mapping(const std::string& text, const std::string& origin) {
  return Parser(text, origin).parse();
}

Network load_mapping(const std::string& path) {
  const FileText text = read_file(path);
  return Parser(text.view(), path).parse();
}

Hardware parse_hardware(const std::string& text, const std::string& origin) {
  Hardware hw;
  int number = 0;
  // Line by line as std::getline splits them (a last line without '\n' counts).
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t eol = std::min(text.find('\n', at), text.size());
    std::string_view line = std::string_view(text).substr(at, eol - at);
    at = eol + 1;
    ++number;
    if (const auto c = line.find("//"); c != std::string_view::npos) line = line.substr(0, c);
    if (trim(line).empty()) continue;
    const auto colon = line.find(':');
    // Columns of the key and of the value, 1-based.
    const int key_column = static_cast<int>(line.find_first_not_of(kBlanks)) + 1;
    const SourceLocation at_key{origin, number, key_column};
    if (colon == std::string_view::npos)
      throw InputError(at_key, "", "expected 'key: value', got '" + str(trim(line)) + "'");
    const std::string key = str(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    const auto value_start = line.find_first_not_of(kBlanks, colon + 1);
    const SourceLocation at_value{
        origin, number,
        static_cast<int>(value_start == std::string_view::npos ? colon + 1 : value_start) + 1};
    bool overflow = false;
    const auto parsed = to_int64(value, overflow);
    if (!parsed || *parsed <= 0)
      throw InputError(
          at_value, key,
          "expected a positive integer of at most " + kInt64Max + ", got '" + str(value) + "'");
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
      throw InputError(
          at_value, key,
          "expected at most " + std::to_string(kMaxNocHops) + " hops, got " + str(value));
    else if (key == "NoC_NumHops")
      hw.noc_latency = v;
    else
      throw InputError(at_key, key,
                       "unknown key; expected num_pes, l1_size_cstr, l2_size_cstr, noc_bw_cstr, "
                       "offchip_bw_cstr or NoC_NumHops");
  }
  return hw;
}

Hardware load_hardware(const std::string& path) {
  return parse_hardware(std::string(read_file(path).view()), path);
}

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
