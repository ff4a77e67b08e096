#pragma once
/// \file
/// Documented, typed plugin parameters (docs/style.md: SST's documented
/// parameters). A plugin declares ParamSpecs; the host checks what a user
/// gives against them, fills in defaults, and hands the plugin a Params.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace mapex {

enum class ParamType : std::uint32_t { kInt = 1, kDouble = 2, kBool = 3, kString = 4 };
std::string to_string(ParamType type);

/// One declared parameter. Plain C strings so a descriptor can be a static
/// constant in a plugin.
struct ParamSpec {
  const char* name;
  ParamType type;
  const char* default_value;  ///< parsed with the type's rules
  const char* doc;
};

using ParamValue = std::variant<std::int64_t, double, bool, std::string>;

/// Resolved parameter values: every declared name is present.
class Params {
 public:
  /// Checks `given` (name -> text) against `specs`: an unknown name or a
  /// value that does not parse as its type throws InputError naming
  /// `owner` (e.g. "searcher 'random'"), the key and what was expected.
  static Params resolve(const ParamSpec* specs, std::size_t num_specs,
                        const std::map<std::string, std::string>& given, const std::string& owner);

  std::int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::map<std::string, ParamValue>& values() const { return values_; }
  /// `name=value` pairs in name order, for job ids and reports.
  std::string canonical() const;

 private:
  const ParamValue& at(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

std::string format_param(const ParamValue& value);

}  // namespace mapex
