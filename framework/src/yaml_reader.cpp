#include "yaml_reader.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mapex::yaml {

std::string read_text(const std::string& path) {
  // A directory opens and reads as an empty file: refused by name instead
  // of reported at its "line 1" (issue 18).
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a directory; expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

YAML::Node load_text(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(SourceLocation{origin, e.mark.line + 1, e.mark.column + 1}, "",
                     "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(SourceLocation{origin, e.mark.line + 1, e.mark.column + 1}, "",
                     "YAML error: " + e.msg);
  }
}

YAML::Node load_file(const std::string& path) { return load_text(read_text(path), path); }

SourceLocation location(const std::string& file, const YAML::Node& node) {
  if (!node.IsDefined()) return SourceLocation{file, 0, 0};
  const YAML::Mark mark = node.Mark();
  // A null document (an empty file, or only comments) has no mark: its
  // place is the start of the file.
  if (mark.line < 0) return SourceLocation{file, 1, 1};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

void fail(const std::string& file, const YAML::Node& node, const std::string& key,
          const std::string& problem) {
  throw InputError(location(file, node), key, problem);
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

namespace {

void require_scalar(const std::string& file, const YAML::Node& node, const std::string& key,
                    const std::string& expected) {
  if (!node.IsDefined() || !node.IsScalar())
    fail(file, node, key, "expected " + expected + ", got " + describe(node));
}

}  // namespace

namespace {

std::optional<std::int64_t> parse_int(const std::string& text) {
  std::int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return value;
}

}  // namespace

std::int64_t as_int(const std::string& file, const YAML::Node& node, const std::string& key) {
  require_scalar(file, node, key, "an integer");
  const auto value = parse_int(node.Scalar());
  if (!value) fail(file, node, key, "expected an integer, got " + describe(node));
  return *value;
}

std::int64_t as_positive_int(const std::string& file, const YAML::Node& node,
                             const std::string& key) {
  require_scalar(file, node, key, "a positive integer");
  const auto value = parse_int(node.Scalar());
  if (!value || *value <= 0)
    fail(file, node, key, "expected a positive integer, got " + describe(node));
  return *value;
}

double as_double(const std::string& file, const YAML::Node& node, const std::string& key) {
  require_scalar(file, node, key, "a number");
  const std::string& text = node.Scalar();
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    fail(file, node, key, "expected a number, got " + describe(node));
  return value;
}

double as_positive_double(const std::string& file, const YAML::Node& node, const std::string& key) {
  const double value = as_double(file, node, key);
  if (!(value > 0)) fail(file, node, key, "expected a positive number, got " + describe(node));
  return value;
}

double as_double_in(const std::string& file, const YAML::Node& node, const std::string& key,
                    double low, double high) {
  const double value = as_double(file, node, key);
  if (!(value >= low && value <= high)) {
    std::ostringstream range;
    range << "expected a number from " << low << " to " << high << ", got " << describe(node);
    fail(file, node, key, range.str());
  }
  return value;
}

bool as_bool(const std::string& file, const YAML::Node& node, const std::string& key) {
  require_scalar(file, node, key, "true or false");
  const std::string& t = node.Scalar();
  if (t == "true" || t == "True" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "False" || t == "no" || t == "off") return false;
  fail(file, node, key, "expected true or false, got " + describe(node));
}

std::string as_string(const std::string& file, const YAML::Node& node, const std::string& key) {
  require_scalar(file, node, key, "a string");
  if (node.Scalar().empty()) fail(file, node, key, "expected a non-empty string");
  return node.Scalar();
}

std::string as_scalar(const std::string& file, const YAML::Node& node, const std::string& key) {
  require_scalar(file, node, key, "a scalar value");
  return node.Scalar();
}

std::vector<std::string> as_string_list(const std::string& file, const YAML::Node& node,
                                        const std::string& key) {
  if (!node.IsSequence()) fail(file, node, key, "expected a list, got " + describe(node));
  std::vector<std::string> out;
  for (const auto& item : node) out.push_back(as_string(file, item, key));
  return out;
}

Map::Map(std::string file, YAML::Node node, std::string what)
    : file_(std::move(file)), node_(std::move(node)), what_(std::move(what)) {
  if (!node_.IsMap()) fail(file_, node_, what_, "expected a map, got " + describe(node_));
}

bool Map::has(const std::string& key) const { return static_cast<bool>(node_[key]); }

YAML::Node Map::required(const std::string& key) {
  seen_.insert(key);
  YAML::Node value = node_[key];
  if (!value) fail(file_, node_, key, "missing in " + what_);
  return value;
}

std::optional<YAML::Node> Map::optional(const std::string& key) {
  seen_.insert(key);
  YAML::Node value = node_[key];
  if (!value) return std::nullopt;
  return value;
}

std::int64_t Map::positive_int(const std::string& key) {
  return as_positive_int(file_, required(key), key);
}
std::int64_t Map::positive_int(const std::string& key, std::int64_t fallback) {
  auto node = optional(key);
  return node ? as_positive_int(file_, *node, key) : fallback;
}
double Map::positive_double(const std::string& key) {
  return as_positive_double(file_, required(key), key);
}
double Map::positive_double(const std::string& key, double fallback) {
  auto node = optional(key);
  return node ? as_positive_double(file_, *node, key) : fallback;
}
double Map::non_negative_double(const std::string& key, double fallback) {
  auto node = optional(key);
  if (!node) return fallback;
  const double value = as_double(file_, *node, key);
  if (value < 0) fail(file_, *node, key, "expected a non-negative number, got " + describe(*node));
  return value;
}
double Map::double_in(const std::string& key, double low, double high) {
  return as_double_in(file_, required(key), key, low, high);
}
double Map::double_in(const std::string& key, double low, double high, double fallback) {
  auto node = optional(key);
  return node ? as_double_in(file_, *node, key, low, high) : fallback;
}
bool Map::boolean(const std::string& key, bool fallback) {
  auto node = optional(key);
  return node ? as_bool(file_, *node, key) : fallback;
}
std::string Map::string(const std::string& key) { return as_string(file_, required(key), key); }
std::string Map::string(const std::string& key, const std::string& fallback) {
  auto node = optional(key);
  return node ? as_string(file_, *node, key) : fallback;
}

void Map::finish() const {
  for (const auto& item : node_) {
    const std::string key = item.first.Scalar();
    if (!seen_.count(key)) {
      std::string allowed;
      for (const auto& k : seen_) allowed += (allowed.empty() ? "" : ", ") + k;
      fail(file_, item.first, key, "unknown key in " + what_ + "; expected one of: " + allowed);
    }
  }
}

}  // namespace mapex::yaml
