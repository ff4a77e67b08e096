#pragma once
/// \file
/// The oracle every fuzz target shares (issue 18, "Every message of a text
/// input ..."): a parser either accepts its input or throws InputError
/// whose message is one line, has no raw control character, and starts
/// with `origin:line:column: ` (line 1 for an empty file). Anything else
/// (another exception type, a message that breaks these rules) aborts, so
/// libFuzzer and the replay driver report the input.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mapex/architecture.hpp>
#include <mapex/network.hpp>
#include <string>

namespace mapex::fuzz {

/// What a message must carry besides being one printable line.
enum class Located {
  kLineColumn,  ///< `origin:line:column: `
  kFile,        ///< `origin: ` (binary inputs: no lines)
};

/// Runs `parse` and applies the oracle to what it throws.
void expect_clean(const std::string& origin, Located located, const std::function<void()>& parse);

/// The fuzz input as text.
std::string as_text(const std::uint8_t* data, std::size_t size);

/// The small chip and network of tests/data (tiny_arch.yaml, tiny_net.yaml),
/// loaded once: the fixed context of the mapping, directive and constraint
/// targets.
const Architecture& tiny_arch();
const Network& tiny_net();

/// A source-tree path (tests/fuzz/..., experiments/...).
std::string source_path(const std::string& relative);

}  // namespace mapex::fuzz
