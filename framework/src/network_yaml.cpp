// Reading a Network from YAML (moved out of the core file so that the library
// that mdc and the light commands load needs no yaml-cpp).

#include <algorithm>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/generators.hpp>
#include <mapex/layer_location.hpp>
#include <mapex/network.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <set>

#include "yaml_reader.hpp"

namespace mapex {

namespace {

/// A sum of channel counts that does not fit an int64 (no C or K equals it).
constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();

Tensor read_tensor(const std::string& file, const YAML::Node& node, const std::vector<Dim>& dims) {
  yaml::Map m(file, node, "a tensor");
  Tensor t;
  t.name = m.string("name");
  const std::string role = m.string("role");
  if (role == "input") {
    t.role = TensorRole::kInput;
  } else if (role == "output") {
    t.role = TensorRole::kOutput;
    t.reduction = Reduction::kSum;
  } else {
    yaml::fail(file, m.required("role"), "role", "expected input or output, got '" + role + "'");
  }
  if (auto red = m.optional("reduction")) {
    const std::string r = yaml::as_string(file, *red, "reduction");
    if (r == "sum")
      t.reduction = Reduction::kSum;
    else if (r == "max")
      t.reduction = Reduction::kMax;
    else if (r == "none")
      t.reduction = Reduction::kNone;
    else
      yaml::fail(file, *red, "reduction", "expected sum, max or none, got '" + r + "'");
  }
  const YAML::Node subs = m.required("subscripts");
  if (!subs.IsSequence() || subs.size() == 0)
    yaml::fail(file, subs, "subscripts", "expected a non-empty list of affine expressions");
  for (const auto& s : subs) {
    const std::string text = yaml::as_scalar(file, s, "subscripts");
    try {
      t.subscripts.push_back(parse_affine(text, dims));
    } catch (const InputError& e) {
      yaml::fail(file, s, "subscripts", e.what());
    }
  }
  m.finish();
  return t;
}

Operator read_loopnest(yaml::Map& m, const std::string& name) {
  const std::string& file = m.file();
  const YAML::Node dims_node = m.required("dims");
  if (!dims_node.IsMap() || dims_node.size() == 0)
    yaml::fail(file, dims_node, "dims", "expected a map of dimension name to bound");
  std::vector<Dim> dims;
  for (const auto& item : dims_node) {
    const std::string dim_name = yaml::as_string(file, item.first, "dims");
    dims.push_back(Dim{dim_name, yaml::as_positive_int(file, item.second, dim_name)});
  }
  const YAML::Node tensors_node = m.required("tensors");
  if (!tensors_node.IsSequence())
    yaml::fail(file, tensors_node, "tensors", "expected a list of tensors");
  std::vector<Tensor> tensors;
  for (const auto& t : tensors_node) tensors.push_back(read_tensor(file, t, dims));
  try {
    return Operator::make(name, "loopnest", std::move(dims), std::move(tensors));
  } catch (const InputError& e) {
    yaml::fail(file, m.node(), "tensors", e.what());
  }
}

Operator read_operator(yaml::Map& m, const std::string& name, std::int64_t batch) {
  const std::string& file = m.file();
  const YAML::Node type_node = m.required("type");
  const std::string type = yaml::as_string(file, type_node, "type");
  try {
    if (type == "conv2d") {
      Conv2dShape s;
      s.N = m.positive_int("N", batch);
      s.C = m.positive_int("C");
      s.K = m.positive_int("K");
      s.H = m.positive_int("H");
      s.W = m.positive_int("W");
      s.R = m.positive_int("R");
      s.S = m.positive_int("S");
      s.stride_h = s.stride_w = m.positive_int("stride", 1);
      s.dilation_h = s.dilation_w = m.positive_int("dilation", 1);
      s.groups = m.positive_int("groups", 1);
      if (auto pad = m.optional("padding")) {
        const std::int64_t p = yaml::as_int(file, *pad, "padding");
        if (p < 0) yaml::fail(file, *pad, "padding", "expected 0 or a positive integer");
        s.padding_h = s.padding_w = p;
      }
      return make_conv2d(name, s);
    }
    if (type == "fc")
      return make_fc(name, m.positive_int("N", batch), m.positive_int("C"), m.positive_int("K"));
    if (type == "gemm")
      return make_gemm(name, m.positive_int("M"), m.positive_int("N"), m.positive_int("K"));
    if (type == "loopnest") return read_loopnest(m, name);
  } catch (const InputError& e) {
    if (e.where().line > 0) throw;
    yaml::fail(file, m.node(), "", e.what());
  }
  yaml::fail(file, type_node, "type", "expected conv2d, fc, gemm or loopnest, got '" + type + "'");
}

/// Output channels of a layer, if it has such a notion.
std::optional<std::int64_t> out_channels(const Operator& op) {
  const auto& a = op.attributes();
  if ((op.kind() == "conv2d" || op.kind() == "fc") && a.count("K")) return a.at("K");
  return std::nullopt;
}

/// True when an fc layer of `c` inputs can read the flattened output of a
/// convolution: K channels of at most P x Q pixels each (pooling between
/// layers is implicit, so the flattened map may be smaller than P x Q).
bool reads_flattened(const Operator& producer, std::int64_t c) {
  if (producer.kind() != "conv2d") return false;
  const auto& a = producer.attributes();
  return c % a.at("K") == 0 && c / a.at("K") <= mul_saturating(a.at("P"), a.at("Q"));
}

/// Bound of dimension `name` of `op`, if it has one.
std::optional<std::int64_t> dim_bound(const Operator& op, const std::string& name) {
  const DimId d = op.find_dim(name);
  if (d < 0) return std::nullopt;
  return op.dims()[static_cast<size_t>(d)].bound;
}

bool is_conv_or_fc(const Operator& op) { return op.kind() == "conv2d" || op.kind() == "fc"; }

/// Why `layer`'s tensors disagree with its producers' outputs beyond the
/// channel count, or nothing when they agree (or when the layer types do
/// not define the dimension, e.g. loop nests). Batch: conv2d and fc layers
/// read their producers' samples one for one. Spatial size: a conv2d reads
/// at most its producer's P x Q output (pooling between layers is implicit,
/// so it may read fewer). Gemm: a gemm reads its producers' M x N outputs
/// as its M x K operand, added (each N equals K) or concatenated (the Ns
/// sum to K).
std::optional<std::string> shape_mismatch(const std::vector<Layer>& earlier, const Layer& layer) {
  const Operator& op = layer.op;
  const auto& a = op.attributes();
  std::int64_t gemm_total = 0;
  bool gemm_all_equal = true;
  bool all_gemm = op.kind() == "gemm" && !layer.producers.empty();
  for (int p : layer.producers) {
    const Operator& prod = earlier[static_cast<size_t>(p)].op;
    const auto& pa = prod.attributes();
    const std::string from = " but its producer '" + prod.name() + "' ";
    if (is_conv_or_fc(op) && is_conv_or_fc(prod)) {
      const auto n = dim_bound(op, "N");
      const auto pn = dim_bound(prod, "N");
      if (n && pn && *n != *pn)
        return "reads a batch of " + std::to_string(*n) + from + "gives " + std::to_string(*pn);
    }
    if (op.kind() == "conv2d" && prod.kind() == "conv2d" &&
        (a.at("H") > pa.at("P") || a.at("W") > pa.at("Q")))
      return "reads " + std::to_string(a.at("H")) + "x" + std::to_string(a.at("W")) + " pixels" +
             from + "gives " + std::to_string(pa.at("P")) + "x" + std::to_string(pa.at("Q")) +
             " (a layer may read fewer, after pooling, never more)";
    if (op.kind() == "gemm") {
      if (prod.kind() != "gemm") {
        all_gemm = false;
        continue;
      }
      if (pa.at("M") != a.at("M"))
        return "has M = " + std::to_string(a.at("M")) + from +
               "has M = " + std::to_string(pa.at("M")) +
               " (a gemm reads its producer's M x N output as M x K)";
      // Saturated: a sum past int64 differs from every K anyway.
      gemm_total = checked_add(gemm_total, pa.at("N")).value_or(kSaturated);
      gemm_all_equal = gemm_all_equal && pa.at("N") == a.at("K");
    }
  }
  if (all_gemm && !gemm_all_equal && gemm_total != a.at("K"))
    return "reads K = " + std::to_string(a.at("K")) +
           " but its producers give N = " + std::to_string(gemm_total) +
           " (expected K to equal each producer's N for an add, or their sum for a "
           "concatenation)";
  return std::nullopt;
}

}  // namespace

Network Network::load(const std::string& path) {
  // A Timeloop problem is read as the loop nest it describes (README,
  // "Timeloop files").
  if (timeloop::is_timeloop_file(path)) {
    const auto imported = timeloop::import_files({path});
    if (imported.workload_yaml.empty())
      throw InputError(SourceLocation{path, 0, 0}, "problem",
                       "missing: this Timeloop file has no problem");
    return parse(imported.workload_yaml, timeloop::converted_origin(path));
  }
  return parse(yaml::read_text(path), path);
}

Network Network::parse(const std::string& yaml_text, const std::string& origin) {
  const YAML::Node root = yaml::load_text(yaml_text, origin);
  yaml::Map top(origin, root, "a workload file");
  Network net;
  net.name_ = top.string("network");
  const std::int64_t batch = top.positive_int("batch", 1);
  const bool training = top.boolean("training", false);
  const YAML::Node layers = top.required("layers");
  if (!layers.IsSequence() || layers.size() == 0)
    yaml::fail(origin, layers, "layers", "expected a non-empty list of layers");
  top.finish();

  for (const auto& node : layers) {
    yaml::Map m(origin, node, "a layer");
    const YAML::Node name_node = m.required("name");
    const std::string name = yaml::as_string(origin, name_node, "name");
    if (net.find_layer(name) >= 0)
      yaml::fail(origin, name_node, "name", "layer '" + name + "' is defined twice");
    Layer layer{read_operator(m, name, batch), {}};
    if (auto inputs = m.optional("inputs")) {
      for (const auto& producer : yaml::as_string_list(origin, *inputs, "inputs")) {
        const int index = net.find_layer(producer);
        if (index < 0)
          yaml::fail(origin, *inputs, "inputs",
                     "layer '" + producer + "' is not defined before '" + name + "'");
        layer.producers.push_back(index);
      }
    } else if (!net.layers_.empty()) {
      layer.producers.push_back(static_cast<int>(net.layers_.size()) - 1);
    }
    m.finish();

    // Channel counts must line up where the layers have channels.
    const auto& a = layer.op.attributes();
    if ((layer.op.kind() == "conv2d" || layer.op.kind() == "fc") && !layer.producers.empty()) {
      const std::int64_t c = a.at("C");
      std::int64_t total = 0;
      bool all_equal = true;
      bool known = true;
      for (int p : layer.producers) {
        const auto k = out_channels(net.layers_[static_cast<size_t>(p)].op);
        if (!k) {
          known = false;
          break;
        }
        total = checked_add(total, *k).value_or(kSaturated);  // past int64: no C equals it
        all_equal = all_equal && *k == c;
      }
      const bool flattened =
          layer.op.kind() == "fc" && layer.producers.size() == 1 &&
          reads_flattened(net.layers_[static_cast<size_t>(layer.producers[0])].op, c);
      if (known && !all_equal && total != c && !flattened)
        yaml::fail(origin, node, "C",
                   "layer '" + name + "' reads " + std::to_string(c) +
                       " channels but its producers give " + std::to_string(total) +
                       " (expected C to equal each producer's K for an add, or their sum "
                       "for a concatenation, or an fc reading K x pixels of a convolution)");
    }
    if (const auto why = shape_mismatch(net.layers_, layer))
      yaml::fail(origin, node, "inputs", "layer '" + name + "' " + *why);
    net.layers_.push_back(std::move(layer));
  }
  return training ? net.training() : net;
}

SourceLocation layer_location(const std::string& yaml_text, const std::string& origin,
                              const std::string& name) {
  SourceLocation start{origin, 1, 1};
  // A training graph's backward layers are derived from the forward layer.
  std::string forward = name;
  for (const std::string suffix : {".bwd_data", ".bwd_weight"})
    if (forward.size() > suffix.size() &&
        forward.compare(forward.size() - suffix.size(), suffix.size(), suffix) == 0)
      forward.resize(forward.size() - suffix.size());
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap() || !root["layers"] || !root["layers"].IsSequence()) return start;
    for (const auto& entry : root["layers"])
      if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() &&
          entry["name"].Scalar() == forward)
        return yaml::location(origin, entry);
  } catch (const YAML::Exception&) {
  }
  return start;
}

SourceLocation layer_file_location(const std::string& path, const std::string& name) {
  if (path.empty()) return SourceLocation{};
  std::string text;
  try {
    text = yaml::read_text(path);
  } catch (const InputError&) {
    return SourceLocation{path, 1, 1};
  }
  return layer_location(text, path, name);
}

void require_connected(const Network& net, const std::string& path) {
  // Union-find over producer-consumer edges, direction ignored.
  const auto& layers = net.layers();
  std::vector<int> root(layers.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = static_cast<int>(i);
  auto find = [&root](int x) {
    while (root[static_cast<size_t>(x)] != x)
      x = root[static_cast<size_t>(x)] = root[static_cast<size_t>(root[static_cast<size_t>(x)])];
    return x;
  };
  for (size_t i = 0; i < layers.size(); ++i)
    for (int p : layers[i].producers)
      root[static_cast<size_t>(find(static_cast<int>(i)))] = find(p);
  for (size_t i = 1; i < layers.size(); ++i)
    if (find(static_cast<int>(i)) != find(0))
      throw InputError(layer_file_location(path, layers[i].op.name()), "inputs",
                       "network '" + net.name() + "' is not one connected graph: layer '" +
                           layers[i].op.name() + "' shares no tensor, directly or through other " +
                           "layers, with layer '" + layers[0].op.name() +
                           "' (whole-network scheduling needs one connected graph; schedule the "
                           "parts as separate networks)");
}

}  // namespace mapex
