#pragma once
/// \file
/// The one command-line parser of the CLI's commands (Boost.Program_options),
/// so every command reports bad usage the same way.

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace mapex::host {

/// Parses a command's arguments against `desc` (and `positional` when not
/// null). Bad usage throws InputError (exit 2) whose message is the parser's
/// then `after` (e.g. "\n" and the usage text). With --help given, returns
/// before checking required options, so `--help` alone always works.
boost::program_options::variables_map parse_command_line(
    const boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description* positional,
    const std::vector<std::string>& args, const std::string& after);

/// `desc` as the text --help prints, for `after`.
std::string options_text(const boost::program_options::options_description& desc);

}  // namespace mapex::host
