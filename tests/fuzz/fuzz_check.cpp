#include "fuzz_check.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mapex/error.hpp>
#include <new>

namespace mapex::fuzz {
namespace {

[[noreturn]] void fail(const std::string& why, const std::string& message) {
  std::fprintf(stderr, "fuzz oracle: %s: [%s]\n", why.c_str(), message.c_str());
  std::abort();
}

bool digits_then(const std::string& s, std::size_t& at, char end) {
  const std::size_t start = at;
  while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
  if (at == start || at >= s.size() || s[at] != end) return false;
  if (s[start] == '0') return false;  // 1-based
  ++at;
  return true;
}

// Where the file a message names ends: the input itself, or (for inputs
// that name other files, as an experiment names its workloads) a file that
// exists, the place of an error found while reading it.
std::size_t named_file_end(const std::string& origin, Located located, const std::string& message) {
  if (message.compare(0, origin.size(), origin) == 0) return origin.size();
  const std::size_t colon = message.find(':');
  std::error_code ec;
  if (located == Located::kLineColumn && colon != std::string::npos && colon > 0 &&
      std::filesystem::is_regular_file(message.substr(0, colon), ec))
    return colon;
  fail("message does not name the file", message);
}

void check_message(const std::string& origin, Located located, const std::string& message) {
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) fail("control character in message", message);
  }
  std::size_t at = named_file_end(origin, located, message);
  if (located == Located::kFile) {
    if (message.compare(at, 2, ": ") != 0 && message.compare(at, 1, ":") != 0)
      fail("message does not name the file", message);
    return;
  }
  if (at >= message.size() || message[at] != ':') fail("message has no line", message);
  ++at;
  if (!digits_then(message, at, ':')) fail("message has no line", message);
  if (!digits_then(message, at, ':')) fail("message has no column", message);
}

}  // namespace

void expect_clean(const std::string& origin, Located located, const std::function<void()>& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    check_message(origin, located, e.what());
  } catch (const std::bad_alloc&) {
    fail("std::bad_alloc", "");
  } catch (const std::exception& e) {
    fail("exception other than InputError", e.what());
  }
}

std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

std::string source_path(const std::string& relative) {
  return std::string(MAPEX_FUZZ_SOURCE_DIR) + "/" + relative;
}

const Architecture& tiny_arch() {
  static const Architecture arch = Architecture::load(source_path("tests/data/tiny_arch.yaml"));
  return arch;
}

const Network& tiny_net() {
  static const Network net = Network::load(source_path("tests/data/tiny_net.yaml"));
  return net;
}

}  // namespace mapex::fuzz
