// Fuzz target: MAESTRO hardware files (`key: value` lines).
#include <mapex/mdc.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "hw.m";
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn,
                     [&] { (void)mdc::parse_hardware(fuzz::as_text(data, size), origin); });
  return 0;
}
