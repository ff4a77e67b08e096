#pragma once
/// \file
/// Error types of mapex. Library code never exits: it throws one of these,
/// and the CLI turns it into one line and an exit status (docs/design.md, Command line).

#include <boost/config.hpp>
#include <stdexcept>
#include <string>

namespace mapex {

/// Base of every mapex error. Visible across the plugin boundary so that a
/// plugin's exception is caught by type in the host.
class BOOST_SYMBOL_VISIBLE Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what);
  ~Error() override;
};

/// Where in an input file something was found. Line and column are 1-based;
/// 0 means unknown (e.g. a file that could not be opened).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

/// Bad user input: a file that cannot be read or parsed, an unknown key, a
/// value of the wrong type or out of range, an unknown plugin or parameter.
/// The CLI maps it to exit status 2. The message names the file, line and
/// column, the key and what was expected.
class BOOST_SYMBOL_VISIBLE InputError : public Error {
 public:
  InputError(SourceLocation where, std::string key, std::string problem);
  explicit InputError(const std::string& message);
  ~InputError() override;

  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  /// The message without location and key.
  const std::string& problem() const { return problem_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string problem_;
};

/// A plugin that cannot be loaded or used (missing entry point, ABI
/// mismatch, duplicate name). Also bad input (exit status 2).
class BOOST_SYMBOL_VISIBLE PluginError : public InputError {
 public:
  explicit PluginError(const std::string& message);
  ~PluginError() override;
};

}  // namespace mapex
