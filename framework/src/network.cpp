#include <algorithm>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/generators.hpp>
#include <mapex/layer_location.hpp>
#include <mapex/network.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <set>

namespace mapex {

int Network::find_layer(const std::string& name) const {
  for (size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].op.name() == name) return static_cast<int>(i);
  return -1;
}

namespace {

/// The layer's loop nest differentiated with respect to input tensor `wrt`
/// (KAPLA §II-A): the output gradient is read in place of the output, the
/// other inputs as before, and the gradient of `wrt` is accumulated over
/// the loops that do not index it.
Operator gradient(const Operator& op, int wrt, const std::string& name, const std::string& kind) {
  std::vector<Tensor> tensors;
  const Tensor& out = op.output();
  tensors.push_back(Tensor{"d" + out.name, TensorRole::kInput, Reduction::kNone, out.subscripts});
  for (int i = 0; i < static_cast<int>(op.tensors().size()); ++i) {
    const Tensor& t = op.tensors()[static_cast<size_t>(i)];
    if (t.role == TensorRole::kInput && i != wrt) tensors.push_back(t);
  }
  const Tensor& target = op.tensors()[static_cast<size_t>(wrt)];
  tensors.push_back(
      Tensor{"d" + target.name, TensorRole::kOutput, Reduction::kSum, target.subscripts});
  return Operator::make(name, kind, op.dims(), std::move(tensors), op.attributes());
}

}  // namespace

Network Network::make(std::string name, std::vector<Layer> layers) {
  Network net;
  net.name_ = std::move(name);
  for (auto& layer : layers) {
    const std::string where = "network '" + net.name_ + "': layer '" + layer.op.name() + "'";
    if (net.find_layer(layer.op.name()) >= 0) throw InputError(where + " is defined twice");
    for (int p : layer.producers)
      if (p < 0 || p >= static_cast<int>(net.layers_.size()))
        throw InputError(where + " reads from layer #" + std::to_string(p) +
                         ", which is not an earlier layer (layers must be in topological "
                         "order; a cycle has none)");
    net.layers_.push_back(std::move(layer));
  }
  return net;
}

InputError placed_at(const InputError& error, const SourceLocation& at) {
  if (!error.where().file.empty() || at.file.empty()) return error;
  return InputError(at, error.key(), error.problem());
}

Network Network::training() const {
  std::vector<Layer> out = layers_;
  const int forward = static_cast<int>(layers_.size());
  std::vector<int> bwd_data(layers_.size(), -1);  // index of each layer's bwd_data
  for (int l = forward - 1; l >= 0; --l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    std::vector<int> grad_sources;
    for (int c = l + 1; c < forward; ++c) {
      const auto& pr = layers_[static_cast<size_t>(c)].producers;
      if (std::find(pr.begin(), pr.end(), l) != pr.end() && bwd_data[static_cast<size_t>(c)] >= 0)
        grad_sources.push_back(bwd_data[static_cast<size_t>(c)]);
    }
    if (grad_sources.empty()) grad_sources.push_back(l);  // the loss on its output
    std::vector<int> inputs;
    for (int t = 0; t < static_cast<int>(layer.op.tensors().size()); ++t)
      if (layer.op.tensors()[static_cast<size_t>(t)].role == TensorRole::kInput)
        inputs.push_back(t);
    for (size_t i = 1; i < inputs.size(); ++i) {
      const std::string suffix = i == 1 ? ".bwd_weight" : ".bwd_weight" + std::to_string(i);
      Layer g{
          gradient(layer.op, inputs[i], layer.op.name() + suffix, layer.op.kind() + "_bwd_weight"),
          grad_sources};
      g.producers.insert(g.producers.end(), layer.producers.begin(), layer.producers.end());
      out.push_back(std::move(g));
    }
    if (!layer.producers.empty() && !inputs.empty()) {
      bwd_data[static_cast<size_t>(l)] = static_cast<int>(out.size());
      out.push_back(Layer{gradient(layer.op, inputs[0], layer.op.name() + ".bwd_data",
                                   layer.op.kind() + "_bwd_data"),
                          grad_sources});
    }
  }
  return make(name_ + "[training]", std::move(out));
}

}  // namespace mapex
