// Fuzz target: the result-file reader (README, "Result files (HDF5)") on
// damaged files. The input is written to a temporary file, as HDF5 reads
// from files; messages name that file.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "fuzz_check.hpp"
#include "host/result_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/mapex_fuzz_result_" + std::to_string(getpid()) +
           ".h5";
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  fuzz::expect_clean(path, fuzz::Located::kFile, [&] { (void)host::read_results(path); });
  std::remove(path.c_str());
  return 0;
}
