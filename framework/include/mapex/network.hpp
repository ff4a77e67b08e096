#pragma once
/// \file
/// A Network: ordered, named layers whose tensors connect (DESIGN.md). The
/// common case is a chain; residual adds and concatenations are layers with
/// several producers.

#include <mapex/operator.hpp>
#include <string>
#include <vector>

namespace mapex {

struct Layer {
  Operator op;
  /// Indices of earlier layers whose outputs form this layer's input; empty
  /// when the layer reads the network input.
  std::vector<int> producers;
};

class Network {
 public:
  const std::string& name() const { return name_; }
  const std::vector<Layer>& layers() const { return layers_; }
  /// Index of the layer called `name`, or -1.
  int find_layer(const std::string& name) const;

  /// Loads a network file (see README, "Workload files"); the file may also
  /// hold a single operator. Validates everything: names unique, shapes
  /// positive, producers earlier in the list and channel counts that match.
  /// Throws InputError with file, line, column and key.
  static Network load(const std::string& path);
  /// Same, from YAML text; `origin` names the text in error messages.
  static Network parse(const std::string& yaml_text, const std::string& origin);

 private:
  std::string name_;
  std::vector<Layer> layers_;
};

}  // namespace mapex
