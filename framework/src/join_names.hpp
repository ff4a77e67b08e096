#pragma once
/// \file
/// "a, b, c": how the constraint checks and their YAML reader list names in
/// a message.

#include <string>
#include <vector>

namespace mapex::detail {

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace mapex::detail
