#include "timeloop_reader.hpp"

#include <algorithm>
#include <mapex/error.hpp>

#include "yaml_reader.hpp"

namespace mapex::timeloop {

std::string normal_key(const std::string& key) {
  std::string out = key;
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

Document Document::read(const std::vector<std::string>& paths) {
  Document doc;
  for (const auto& path : paths) {
    const YAML::Node root = yaml::load_file(path);
    if (root.IsNull()) continue;  // an empty file adds nothing, as in Timeloop
    if (!root.IsMap())
      yaml::fail(path, root, "",
                 "expected a map of Timeloop sections (problem, architecture, ...)");
    for (const auto& entry : root) {
      const std::string key = normal_key(yaml::as_string(path, entry.first, "top-level key"));
      auto [it, fresh] = doc.sections_.emplace(key, Section{path, entry.first, entry.second});
      if (!fresh)
        yaml::fail(path, entry.first, key,
                   "given twice in one document (also in " + it->second.file + ", line " +
                       std::to_string(it->second.key.Mark().line + 1) + ")");
    }
  }
  return doc;
}

const Section* Document::find(const std::string& key) const {
  auto it = sections_.find(key);
  return it == sections_.end() ? nullptr : &it->second;
}

Obj::Obj(std::string file, YAML::Node node, const std::string& what)
    : file_(std::move(file)), node_(std::move(node)), what_(what) {
  if (!node_.IsMap())
    yaml::fail(file_, node_, what, "expected a map, got " + yaml::describe(node_));
}

bool Obj::has(const std::string& key) const {
  for (const auto& entry : node_)
    if (entry.first.IsScalar() && normal_key(entry.first.Scalar()) == key) return true;
  return false;
}

std::optional<YAML::Node> Obj::get(const std::string& key) {
  seen_.insert(key);
  for (const auto& entry : node_)
    if (entry.first.IsScalar() && normal_key(entry.first.Scalar()) == key) return entry.second;
  return std::nullopt;
}

YAML::Node Obj::need(const std::string& key) {
  if (auto v = get(key)) return *v;
  yaml::fail(file_, node_, key, "missing in " + what_);
}

void Obj::refuse(const std::string& key, const std::string& reason) {
  seen_.insert(key);
  for (const auto& entry : node_)
    if (entry.first.IsScalar() && normal_key(entry.first.Scalar()) == key)
      yaml::fail(file_, entry.first, key, "cannot be carried over to mapex: " + reason);
}

void Obj::finish() const {
  for (const auto& entry : node_) {
    const std::string key = entry.first.IsScalar() ? normal_key(entry.first.Scalar()) : "";
    if (!seen_.count(key)) yaml::fail(file_, entry.first, key, "unknown key in " + what_);
  }
}

std::pair<std::string, std::int64_t> split_range(const std::string& file, const YAML::Node& node,
                                                 const std::string& text) {
  const auto open = text.find('[');
  if (open == std::string::npos) return {text, 1};
  const auto dots = text.find("..", open);
  const auto close = text.find(']', open);
  if (dots == std::string::npos || close == std::string::npos || close != text.size() - 1 ||
      dots > close)
    yaml::fail(file, node, "name", "expected NAME or NAME[first..last], got '" + text + "'");
  try {
    const std::int64_t first = std::stoll(text.substr(open + 1, dots - open - 1));
    const std::int64_t last = std::stoll(text.substr(dots + 2, close - dots - 2));
    if (first < 0 || last < first) throw std::invalid_argument("range");
    return {text.substr(0, open), last - first + 1};
  } catch (const std::exception&) {
    yaml::fail(file, node, "name",
               "expected a range [first..last] with first <= last, got '" + text + "'");
  }
}

}  // namespace mapex::timeloop
