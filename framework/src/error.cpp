#include <mapex/error.hpp>

namespace mapex {
namespace {

/// Control characters from an input (a NUL, CR, VT or FF in a key or a
/// value) as C escapes, so a message stays one printable line (issue 18).
std::string escape_controls(const std::string& text) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

std::string compose(const SourceLocation& where, const std::string& raw_key,
                    const std::string& raw_problem) {
  const std::string key = escape_controls(raw_key);
  const std::string problem = escape_controls(raw_problem);
  std::string out;
  if (!where.file.empty()) {
    out += escape_controls(where.file);
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
