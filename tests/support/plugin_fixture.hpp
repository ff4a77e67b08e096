#pragma once
// The built plugins, loaded once per test binary, and a mapping evaluated
// under one of their cost models (precheck, then evaluate) as the
// framework does.

#include <mapex/costmodel.hpp>
#include <string>

#include "host/plugin_registry.hpp"

namespace mapex::test {

inline const host::PluginRegistry& registry() {
  static const host::PluginRegistry r = host::load_plugins();
  return r;
}

inline Metrics evaluate_with(const std::string& model, const Operator& op, const Architecture& arch,
                             const Mapping& m) {
  const auto bound = registry().make_costmodel(model, {})->bind(op, arch);
  if (auto reason = bound->precheck(m)) return Metrics::invalid(*reason);
  return bound->evaluate(m);
}

}  // namespace mapex::test
