#pragma once
/// \file
/// A Network: ordered, named layers whose tensors connect (docs/design.md). The
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

  /// The training graph of an inference network (KAPLA §II-A): the forward
  /// layers, then for every layer in reverse order its error propagation
  /// `<layer>.bwd_data` (the gradient of its first input; left out for a
  /// layer that reads the network input) and its weight gradient
  /// `<layer>.bwd_weight` (the gradient of each further input, e.g. the
  /// weights). Both are the layer's loop nest with the roles turned round:
  /// the output gradient is read, the input or weight gradient written. A
  /// backward layer depends on the backward data layers of the forward
  /// layer's consumers (or on the layer itself when nothing consumes it:
  /// the loss), and a weight gradient also on the layer's producers.
  Network training() const;

  /// Builds a network from layers in topological order. Throws InputError
  /// naming the layer when a producer is not an earlier layer (which
  /// rules out cycles) or names are not unique.
  static Network make(std::string name, std::vector<Layer> layers);

  /// Loads a network file (see README, "Workload files"); the file may also
  /// hold a single operator. Validates everything: names unique, shapes
  /// positive, producers earlier in the list, and tensors whose shapes agree
  /// between producer and consumer where the layer types define them:
  /// channels (conv2d, fc), batch (conv2d, fc), spatial size (a conv2d
  /// reads at most its producer's output rows and columns: pooling between
  /// layers is implicit, so it may read fewer), and gemm dimensions (a gemm
  /// reads its producers' M x N outputs as its M x K operand).
  /// Throws InputError with file, line, column and key.
  static Network load(const std::string& path);
  /// Same, from YAML text; `origin` names the text in error messages.
  static Network parse(const std::string& yaml_text, const std::string& origin);

 private:
  std::string name_;
  std::vector<Layer> layers_;
};

/// Throws InputError naming the first layer (in file order) that is not
/// connected to the first layer through producer-consumer edges, ignoring
/// their direction. A workload file may list independent layers (a set of
/// operators to map one by one); whole-network scheduling needs one
/// connected graph, so `mapex schedule` calls this. `path`: the file the
/// network was loaded from, to place the message at the first layer
/// outside layer 0's graph (at 1:1 when that layer is not an entry there).
void require_connected(const Network& net, const std::string& path = "");

}  // namespace mapex
