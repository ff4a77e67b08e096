#pragma once
/// \file
/// The version of the mapex core library.

#include <string>

namespace mapex {

/// "MAJOR.MINOR.PATCH" of the core library the host runs.
std::string version();

}  // namespace mapex
