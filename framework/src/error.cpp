#include <mapex/error.hpp>

namespace mapex {
namespace {

std::string compose(const SourceLocation& where, const std::string& key,
                    const std::string& problem) {
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0) {
      out += ":" + std::to_string(where.line);
      if (where.column > 0) out += ":" + std::to_string(where.column);
    }
    out += ": ";
  }
  if (!key.empty()) out += "key '" + key + "': ";
  out += problem;
  return out;
}

}  // namespace

Error::Error(const std::string& what) : std::runtime_error(what) {}
Error::~Error() = default;

InputError::InputError(SourceLocation where, std::string key, std::string problem)
    : Error(compose(where, key, problem)),
      where_(std::move(where)),
      key_(std::move(key)),
      problem_(std::move(problem)) {}
InputError::InputError(const std::string& message) : Error(message), problem_(message) {}
InputError::~InputError() = default;

PluginError::PluginError(const std::string& message) : InputError(message) {}
PluginError::~PluginError() = default;

}  // namespace mapex
