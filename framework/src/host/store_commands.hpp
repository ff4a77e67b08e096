#pragma once
// The commands that read or write result files (HDF5) or distribute a run
// over MPI ranks: run, merge, report and schedule (docs/design.md, Command
// line). They live in their own library, libmapex_store.so, which the
// `mapex` executable loads only when one of them is asked for: linking
// HDF5 and MPI into the executable made every command, `mapex version`
// included, map about fifty shared libraries (MPI, HDF5 and through them
// curl, gnutls, krb5, ...) before doing anything, several times the work
// of evaluating a one-layer file. The tests and `mapex-flash` link the same
// code statically (store_link_direct.cpp).

#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

/// Whether `command` is one of run, merge, report, schedule.
bool is_store_command(const std::string& command);

/// Runs one of them in this process (the code of the store library).
int store_command(const std::string& command, const std::vector<std::string>& args,
                  std::ostream& out, std::ostream& err);

/// Runs one of them from the command line: directly where the store code is
/// linked in, through libmapex_store.so in the `mapex` executable.
int call_store_command(const std::string& command, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err);

}  // namespace mapex::host

/// The store library's entry point, looked up by name after dlopen.
#define MAPEX_STORE_ENTRY_NAME "mapex_store_command"
extern "C" int mapex_store_command(const std::string& command, const std::vector<std::string>& args,
                                   std::ostream& out, std::ostream& err);
