#pragma once
// Reading Timeloop's YAML: the files as one document, keys with hyphens
// read as underscores (as Timeloop's front end does), every error at the
// file, line and column of the offending node. Internal to the core library.

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mapex::timeloop {

/// A key as Timeloop reads it: `word-bits` and `word_bits` are one key.
std::string normal_key(const std::string& key);

/// One top-level section of the document and the file it came from.
struct Section {
  std::string file;
  YAML::Node key;
  YAML::Node value;
};

/// The files of one Timeloop run as one document (top-level keys by their
/// normal form). A key in two files is bad input naming both.
class Document {
 public:
  static Document read(const std::vector<std::string>& paths);
  const Section* find(const std::string& key) const;
  const std::map<std::string, Section>& sections() const { return sections_; }

 private:
  std::map<std::string, Section> sections_;
};

/// A YAML map of a Timeloop file, looked up by normal keys. `finish`
/// rejects keys never asked for (Timeloop would ignore a misspelt one).
class Obj {
 public:
  Obj(std::string file, YAML::Node node, const std::string& what);
  std::optional<YAML::Node> get(const std::string& key);
  YAML::Node need(const std::string& key);
  bool has(const std::string& key) const;
  /// Fails at `key` when present: it cannot be carried over (`reason`).
  void refuse(const std::string& key, const std::string& reason);
  void ignore(const std::string& key) { seen_.insert(key); }
  void finish() const;
  const std::string& file() const { return file_; }
  const YAML::Node& node() const { return node_; }

 private:
  std::string file_;
  YAML::Node node_;
  std::string what_;
  std::set<std::string> seen_;
};

/// `name[0..167]` -> ("name", 168); a name without a range counts 1.
std::pair<std::string, std::int64_t> split_range(const std::string& file, const YAML::Node& node,
                                                 const std::string& text);

}  // namespace mapex::timeloop
