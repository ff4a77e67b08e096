#include <charconv>
#include <cmath>
#include <mapex/error.hpp>
#include <mapex/params.hpp>
#include <optional>
#include <sstream>

namespace mapex {

std::string to_string(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "double";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "string";
  }
  return "string";
}

std::string format_param(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream out;
          out.precision(17);
          out << v;
          return out.str();
        } else {
          return std::to_string(v);
        }
      },
      value);
}

namespace {

std::optional<ParamValue> parse_value(ParamType type, const std::string& text) {
  switch (type) {
    case ParamType::kInt: {
      std::int64_t v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
        return std::nullopt;
      return v;
    }
    case ParamType::kDouble: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        return std::nullopt;
      return v;
    }
    case ParamType::kBool:
      if (text == "true" || text == "1" || text == "yes") return true;
      if (text == "false" || text == "0" || text == "no") return false;
      return std::nullopt;
    case ParamType::kString:
      return text;
  }
  return std::nullopt;
}

}  // namespace

Params Params::resolve(const ParamSpec* specs, std::size_t num_specs,
                       const std::map<std::string, std::string>& given, const std::string& owner) {
  Params p;
  for (std::size_t i = 0; i < num_specs; ++i) {
    const ParamSpec& spec = specs[i];
    auto value = parse_value(spec.type, spec.default_value ? spec.default_value : "");
    if (!value)
      throw PluginError(owner + ": the default of parameter '" + spec.name +
                        "' does not parse as " + to_string(spec.type));
    p.values_[spec.name] = *value;
  }
  for (const auto& [name, text] : given) {
    const ParamSpec* spec = nullptr;
    for (std::size_t i = 0; i < num_specs; ++i)
      if (name == specs[i].name) spec = &specs[i];
    if (!spec) {
      std::string known;
      for (std::size_t i = 0; i < num_specs; ++i)
        known += (known.empty() ? "" : ", ") + std::string(specs[i].name);
      throw InputError(SourceLocation{}, name,
                       "unknown parameter of " + owner +
                           "; expected one of: " + (known.empty() ? "(none)" : known));
    }
    auto value = parse_value(spec->type, text);
    if (!value)
      throw InputError(
          SourceLocation{}, name,
          "parameter of " + owner + " expects " + to_string(spec->type) + ", got '" + text + "'");
    p.values_[name] = *value;
  }
  return p;
}

const ParamValue& Params::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error("parameter '" + name + "' was not declared");
  return it->second;
}

std::int64_t Params::get_int(const std::string& name) const {
  return std::get<std::int64_t>(at(name));
}
double Params::get_double(const std::string& name) const { return std::get<double>(at(name)); }
bool Params::get_bool(const std::string& name) const { return std::get<bool>(at(name)); }
const std::string& Params::get_string(const std::string& name) const {
  return std::get<std::string>(at(name));
}

std::string Params::canonical() const {
  std::string out;
  for (const auto& [name, value] : values_)
    out += (out.empty() ? "" : ",") + name + "=" + format_param(value);
  return out;
}

}  // namespace mapex
