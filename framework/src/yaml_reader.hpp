#pragma once
// Strict YAML reading with source locations: every error names the file,
// line, column, key and what was expected (docs/design.md, The flow of a job). Internal
// to the core library.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <mapex/error.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mapex::yaml {

/// Parses a file; a missing file or a syntax error is an InputError.
YAML::Node load_file(const std::string& path);
/// Parses text; `origin` stands for the file name in errors.
YAML::Node load_text(const std::string& text, const std::string& origin);
/// Reads a whole file into a string (InputError if it cannot).
std::string read_text(const std::string& path);

SourceLocation location(const std::string& file, const YAML::Node& node);
[[noreturn]] void fail(const std::string& file, const YAML::Node& node, const std::string& key,
                       const std::string& problem);

/// What a node holds, for messages: "a map", "a list", "'abc'".
std::string describe(const YAML::Node& node);

std::int64_t as_int(const std::string& file, const YAML::Node& node, const std::string& key);
std::int64_t as_positive_int(const std::string& file, const YAML::Node& node,
                             const std::string& key);
double as_double(const std::string& file, const YAML::Node& node, const std::string& key);
double as_positive_double(const std::string& file, const YAML::Node& node, const std::string& key);
/// A number within [low, high]; the message names the range.
double as_double_in(const std::string& file, const YAML::Node& node, const std::string& key,
                    double low, double high);
bool as_bool(const std::string& file, const YAML::Node& node, const std::string& key);
std::string as_string(const std::string& file, const YAML::Node& node, const std::string& key);
/// A scalar's text, whatever it looks like (for plugin parameters).
std::string as_scalar(const std::string& file, const YAML::Node& node, const std::string& key);
std::vector<std::string> as_string_list(const std::string& file, const YAML::Node& node,
                                        const std::string& key);

/// A YAML map whose keys are checked: `finish()` rejects every key that was
/// not asked for, naming the allowed ones.
class Map {
 public:
  Map(std::string file, YAML::Node node, std::string what);

  bool has(const std::string& key) const;
  /// A required key; error naming `what` when it is missing.
  YAML::Node required(const std::string& key);
  std::optional<YAML::Node> optional(const std::string& key);

  std::int64_t positive_int(const std::string& key);
  std::int64_t positive_int(const std::string& key, std::int64_t fallback);
  double positive_double(const std::string& key);
  double positive_double(const std::string& key, double fallback);
  double non_negative_double(const std::string& key, double fallback);
  /// A number within [low, high] (as_double_in), required or with a fallback.
  double double_in(const std::string& key, double low, double high);
  double double_in(const std::string& key, double low, double high, double fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);

  /// Marks a key as known without reading it.
  void allow(const std::string& key) { seen_.insert(key); }
  /// Throws for the first key that was never asked for.
  void finish() const;
  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  YAML::Node node_;
  std::string what_;
  std::set<std::string> seen_;
};

}  // namespace mapex::yaml
