#pragma once
// The message of the InputError a call throws, or "" when it throws none.

#include <functional>
#include <mapex/error.hpp>
#include <string>

namespace mapex::test {

inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace mapex::test
