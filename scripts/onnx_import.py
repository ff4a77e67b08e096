#!/usr/bin/python3
"""Turns an ONNX graph into a mapex network file (README, "ONNX models").

Run by `mapex import onnx MODEL.onnx -o NET.yaml [--batch N]`, which then
loads the file it wrote with mapex's own network reader, so every shape
written here is checked by the same rules as a hand-written network.

What becomes a layer: Conv (pads, strides, dilations, group: regular,
depthwise, grouped), Gemm (transA/transB) and MatMul. A product with a
constant operand (the weights) is an `fc` layer (N = the rows of the
activation, all leading dimensions together); a product of two activations
is a `gemm`, or a batched loop nest when it has batch dimensions
(attention scores). Everything else that only reshapes, normalises,
activates or pools is folded: it passes its producers through, and the next
layer reads the shape it produced (pooling shrinks H and W, Flatten makes
the fc's C). Add and Sum pass the union of their operands' producers (a
residual add, as mapex networks write it: the consumer lists every layer
summed into its input), Concat likewise (the consumer's C is the sum).
Operators mapex cannot map (and shape-growing ones such as Resize or Pad,
whose consumers would read more than their producers give) are listed by
name and type in a warning and cut the connection through them.

Bad input (not an ONNX file, a graph with no mappable operator, a shape
that cannot be inferred) is one line `mapex: error: FILE: ...` and exit 2.
"""

import argparse
import json
import sys
import warnings

EXIT_BAD_INPUT = 2

# Operators that keep the connection and whose output shape the next layer
# reads: element-wise activations, normalisations, pooling, reshapes.
FOLDED = {
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "Tanh",
    "Softmax", "LogSoftmax", "HardSwish", "Gelu", "Erf", "Clip", "Softplus",
    "Softsign", "Mish", "Identity", "Dropout", "Cast",
    "BatchNormalization", "InstanceNormalization", "LayerNormalization",
    "LpNormalization", "LRN",
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool",
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
    "Mul", "Div", "Sub", "Sqrt", "Pow", "Neg", "Abs", "Exp", "Log",
    "ReduceMean", "Split", "Slice",
}
# Operators whose output joins the producers of all their operands.
JOINS = {"Add", "Sum", "Concat"}
# Operators that make or hold constants.
CONSTANT_MAKERS = {"Constant", "ConstantOfShape", "Shape"}


class BadInput(Exception):
    """Input mapex refuses: exit 2 with this message after the file name."""


def fail(path, message):
    print(f"mapex: error: {path}: {message}", file=sys.stderr)
    sys.exit(EXIT_BAD_INPUT)


def load_model(path, batch):
    """The model with every tensor shape inferred, batch set on the inputs."""
    try:
        import onnx
        from onnx import shape_inference
    except ImportError:
        fail(path, "the ONNX importer needs Python's onnx package (Debian: python3-onnx)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(path, f"cannot read the file ({e.strerror}); expected an ONNX model")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # protobuf's own note on bad bytes; we say it once
            model = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf's DecodeError and friends
        fail(path, f"not an ONNX model: {type(e).__name__}: {e}; expected a serialised ModelProto")
    if not model.HasField("graph") or len(model.graph.node) == 0:
        fail(path, "not an ONNX model: it holds no graph nodes; expected a serialised ModelProto "
                   "with a graph")
    initializers = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        dims = inp.type.tensor_type.shape.dim
        for axis, d in enumerate(dims):
            if axis == 0 and batch is not None:
                d.ClearField("dim_param")
                d.dim_value = batch
            elif not d.HasField("dim_value"):
                if axis == 0:
                    d.ClearField("dim_param")
                    d.dim_value = 1  # a symbolic batch is 1 unless --batch says otherwise
                else:
                    fail(path, f"graph input '{inp.name}': dimension {axis} is symbolic "
                               f"('{d.dim_param}'); expected a fixed size (only the batch, "
                               f"dimension 0, may be symbolic: --batch N sets it)")
    try:
        return shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as e:
        fail(path, f"ONNX shape inference failed: {str(e).splitlines()[0]}; expected a graph "
                   f"whose shapes ONNX can infer")


def attr(node, name, default):
    from onnx import helper
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class Importer:
    def __init__(self, path, model):
        self.path = path
        graph = model.graph
        self.shapes = {}
        for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
            dims = vi.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                self.shapes[vi.name] = [d.dim_value for d in dims]
        self.constants = set()
        for init in graph.initializer:
            self.constants.add(init.name)
            self.shapes[init.name] = list(init.dims)
        self.graph = graph
        self.sources = {}  # tensor name -> producer layer names (ordered, unique)
        self.layers = []  # dicts written to YAML
        self.folded = []  # (node name, op type)
        self.unmapped = []  # (node name, op type, reason)
        self.cut = []  # (layer, producers it reads through a reshape mapex cannot relate)
        self.names = set()

    # --- helpers -------------------------------------------------------
    def node_name(self, node, index):
        base = node.name or f"{node.op_type.lower()}_{index}"
        name, n = base, 2
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return name

    def shape(self, node, tensor, what):
        if tensor not in self.shapes:
            raise BadInput(f"node '{node.name}' ({node.op_type}): the shape of {what} "
                           f"'{tensor}' is unknown; expected a shape ONNX can infer")
        return self.shapes[tensor]

    def joined_sources(self, tensors):
        out = []
        for t in tensors:
            for s in self.sources.get(t, []):
                if s not in out:
                    out.append(s)
        return out

    def add_layer(self, node, layer, inputs):
        producers = self.joined_sources(inputs)
        by_name = {l["name"]: l for l in self.layers}
        if not reads_as_written(layer, [by_name[p] for p in producers]):
            self.cut.append((layer["name"], producers))
            producers = []
        layer["inputs"] = producers
        self.layers.append(layer)
        for out in node.output:
            self.sources[out] = [layer["name"]]

    # --- layers --------------------------------------------------------
    def conv(self, node, name):
        x, w = node.input[0], node.input[1]
        xs = self.shape(node, x, "input")
        ws = self.shape(node, w, "weight")
        if len(xs) != 4 or len(ws) != 4:
            raise Unmappable(f"a {len(xs) - 2}-D convolution (mapex maps 2-D ones)")
        n, c, h, wd = xs
        k, _, r, s = ws
        group = attr(node, "group", 1)
        strides = list(attr(node, "strides", [1, 1]))
        dil = list(attr(node, "dilations", [1, 1]))
        auto_pad = attr(node, "auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        out = self.shape(node, node.output[0], "output")
        p, q = out[2], out[3]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            totals = [max(0, (o - 1) * st + (kk - 1) * dd + 1 - i)
                      for o, st, kk, dd, i in zip((p, q), strides, (r, s), dil, (h, wd))]
            pads = [totals[0] // 2, totals[1] // 2, totals[0] - totals[0] // 2,
                    totals[1] - totals[1] // 2]
        elif auto_pad == "VALID":
            pads = [0, 0, 0, 0]
        else:
            pads = list(attr(node, "pads", [0, 0, 0, 0]))
        # mapex pads both sides alike; an uneven ONNX pad becomes the even pad
        # that gives the same output size (the MACs depend only on it).
        pad_hw = []
        for axis, (size, kern, st, dd, o) in enumerate(zip((h, wd), (r, s), strides, dil, (p, q))):
            total = pads[axis] + pads[axis + 2]
            chosen = None
            for cand in sorted({total // 2, (total + 1) // 2}):
                if (size + 2 * cand - (kern - 1) * dd - 1) // st + 1 == o:
                    chosen = cand
                    break
            if chosen is None:
                raise Unmappable(f"padding {pads[axis]}+{pads[axis + 2]} on axis {axis + 2} gives "
                                 f"an output size no even padding gives")
            pad_hw.append(chosen)
        square = strides[0] == strides[1] and dil[0] == dil[1] and pad_hw[0] == pad_hw[1]
        if square:
            layer = {"name": name, "type": "conv2d", "N": n, "C": c, "K": k, "H": h, "W": wd,
                     "R": r, "S": s}
            if strides[0] != 1:
                layer["stride"] = strides[0]
            if dil[0] != 1:
                layer["dilation"] = dil[0]
            if pad_hw[0]:
                layer["padding"] = pad_hw[0]
            if group != 1:
                layer["groups"] = group
            layer["_P"], layer["_Q"] = p, q
            return layer, n * k * (c // group) * r * s * p * q
        return self.conv_loopnest(name, n, c, k, r, s, p, q, strides, dil, group), \
            n * k * (c // group) * r * s * p * q

    @staticmethod
    def conv_loopnest(name, n, c, k, r, s, p, q, strides, dil, group):
        """A convolution with per-axis strides, dilations or pads, written as
        its loop nest (input rows in padded coordinates, as make_conv2d)."""
        row = f"P*{strides[0]} + R*{dil[0]}"
        col = f"Q*{strides[1]} + S*{dil[1]}"
        if group == 1:
            dims = {"N": n, "K": k, "C": c, "P": p, "Q": q, "R": r, "S": s}
            tensors = [
                {"name": "Input", "role": "input", "subscripts": ["N", "C", row, col]},
                {"name": "Weight", "role": "input", "subscripts": ["K", "C", "R", "S"]},
                {"name": "Output", "role": "output", "subscripts": ["N", "K", "P", "Q"]},
            ]
        else:
            cg, kg = c // group, k // group
            dims = {"N": n, "G": group, "K": kg, "C": cg, "P": p, "Q": q, "R": r, "S": s}
            tensors = [
                {"name": "Input", "role": "input", "subscripts": ["N", f"G*{cg} + C", row, col]},
                {"name": "Weight", "role": "input", "subscripts": ["G", "K", "C", "R", "S"]},
                {"name": "Output", "role": "output",
                 "subscripts": ["N", f"G*{kg} + K", "P", "Q"]},
            ]
        return {"name": name, "type": "loopnest", "dims": dims, "tensors": tensors}

    def product(self, node, name, a, b, trans_a=False, trans_b=False):
        """Gemm or MatMul: A (rows x inner) times B (inner x cols)."""
        a_shape = list(self.shape(node, a, "operand A"))
        b_shape = list(self.shape(node, b, "operand B"))
        if len(a_shape) == 1:
            a_shape = [1] + a_shape
        if len(b_shape) == 1:
            b_shape = b_shape + [1]
        if trans_a:
            a_shape[-2], a_shape[-1] = a_shape[-1], a_shape[-2]
        if trans_b:
            b_shape[-2], b_shape[-1] = b_shape[-1], b_shape[-2]
        m, kk = a_shape[-2], a_shape[-1]
        kb, cols = b_shape[-2], b_shape[-1]
        if kk != kb:
            raise BadInput(f"node '{node.name}' ({node.op_type}): operand A has {kk} columns but "
                           f"B has {kb} rows; expected them equal")
        a_const, b_const = a in self.constants, b in self.constants
        a_batch, b_batch = a_shape[:-2], b_shape[:-2]
        if b_const and not b_batch:
            rows = m
            for d in a_batch:
                rows *= d
            # The weights are B: an fc layer, every leading dimension of A a sample.
            return {"name": name, "type": "fc", "N": rows, "C": kk, "K": cols}, rows * kk * cols
        batch_dims = a_batch if len(a_batch) >= len(b_batch) else b_batch
        batch = 1
        for d in batch_dims:
            batch *= d
        if batch == 1 or a_const or b_const:
            if a_const and not a_batch and b_batch:
                cols *= batch  # W x X with batched X: the batch joins X's columns
                batch = 1
            if batch == 1:
                return {"name": name, "type": "gemm", "M": m, "N": cols, "K": kk}, m * cols * kk
        # Two activations with batch dimensions (attention scores, context):
        # a batched matrix product, batch dimensions merged into B.
        layer = {"name": name, "type": "loopnest",
                 "dims": {"B": batch, "M": m, "N": cols, "K": kk},
                 "tensors": [
                     {"name": "Lhs", "role": "input",
                      "subscripts": ["B", "M", "K"] if a_batch else ["M", "K"]},
                     {"name": "Rhs", "role": "input",
                      "subscripts": ["B", "K", "N"] if b_batch else ["K", "N"]},
                     {"name": "Out", "role": "output", "subscripts": ["B", "M", "N"]},
                 ]}
        return layer, batch * m * cols * kk

    # --- the walk ------------------------------------------------------
    def run(self):
        for index, node in enumerate(self.graph.node):
            op = node.op_type
            if op in CONSTANT_MAKERS or all(i in self.constants for i in node.input if i):
                if op in CONSTANT_MAKERS or node.input:
                    self.constants.update(node.output)
                    continue
            name = self.node_name(node, index)
            try:
                if op == "Conv":
                    layer, macs = self.conv(node, name)
                    self.add_layer(node, layer, [node.input[0]])
                elif op == "Gemm":
                    layer, macs = self.product(node, name, node.input[0], node.input[1],
                                               bool(attr(node, "transA", 0)),
                                               bool(attr(node, "transB", 0)))
                    self.add_layer(node, layer, [t for t in node.input[:2]
                                                 if t not in self.constants])
                elif op == "MatMul":
                    layer, macs = self.product(node, name, node.input[0], node.input[1])
                    self.add_layer(node, layer, [t for t in node.input[:2]
                                                 if t not in self.constants])
                elif op in JOINS or op in FOLDED:
                    self.folded.append((name, op))
                    data = [t for t in node.input if t and t not in self.constants]
                    if op not in JOINS:
                        data = data[:1]
                    for out in node.output:
                        self.sources[out] = self.joined_sources(data)
                    continue
                else:
                    raise Unmappable("mapex has no layer type for it")
            except Unmappable as why:
                self.unmapped.append((name, op, str(why)))
                for out in node.output:
                    self.sources[out] = []
                continue
            self.layers[-1]["_macs"] = macs
            self.layers[-1]["_op"] = op
        if not self.layers:
            nodes = [f"'{n.name or '#' + str(i)}' ({n.op_type})"
                     for i, n in enumerate(self.graph.node)]
            listed = ", ".join(nodes[:10]) + (f" and {len(nodes) - 10} more" if len(nodes) > 10
                                               else "")
            raise BadInput(f"no mappable operator in the graph (its nodes: {listed}); "
                           f"expected at least one Conv, Gemm or MatMul")


def reads_as_written(layer, producers):
    """Whether mapex's network reader relates `layer` to its producers
    (README, "Workload files"): batch and channels between conv2d and fc
    layers (each producer's K equal to C for an add, their sum for a
    concatenation, K x pixels for an fc reading a flattened convolution), a
    conv2d reading at most its conv2d producer's P x Q, a gemm reading its
    gemm producers' M x N as M x K. A reshape between layers (an fc's output
    viewed as an image, tokens folded into features) can break these; such
    a layer is imported reading the network input, with a warning."""
    kind = layer["type"]
    if kind in ("conv2d", "fc"):
        related = [p for p in producers if p["type"] in ("conv2d", "fc")]
        if any(p["N"] != layer["N"] for p in related):
            return False
        if kind == "conv2d" and any(layer["H"] > p["_P"] or layer["W"] > p["_Q"]
                                    for p in related if p["type"] == "conv2d"):
            return False
        if len(related) == len(producers) and related:
            ks = [p["K"] for p in related]
            flattened = (kind == "fc" and len(related) == 1 and related[0]["type"] == "conv2d"
                         and layer["C"] % ks[0] == 0
                         and layer["C"] // ks[0] <= related[0]["_P"] * related[0]["_Q"])
            return all(k == layer["C"] for k in ks) or sum(ks) == layer["C"] or flattened
        return True
    if kind == "gemm":
        related = [p for p in producers if p["type"] == "gemm"]
        if any(p["M"] != layer["M"] for p in related):
            return False
        if related and len(related) == len(producers):
            ns = [p["N"] for p in related]
            return all(n == layer["K"] for n in ns) or sum(ns) == layer["K"]
    return True


class Unmappable(Exception):
    """A node mapex cannot map: listed in the warning, its connection cut."""


def yaml_value(v):
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a YAML scalar
    if isinstance(v, list):
        return "[" + ", ".join(yaml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def write_network(importer, model_path, network_name, out_path):
    lines = [f"# Imported from {model_path} by `mapex import onnx`.",
             f"# Kept {len(importer.layers)} layers; folded "
             f"{len(importer.folded)} nodes into their shapes"
             + (f"; not mapped: {', '.join(f'{n} ({o})' for n, o, _ in importer.unmapped)}"
                if importer.unmapped else "") + ".",
             f"network: {yaml_value(network_name)}",
             "layers:"]
    for layer in importer.layers:
        fields = {k: v for k, v in layer.items() if not k.startswith("_")}
        lines.append(f"  # {layer['_op']}, {layer['_macs']} MACs")
        lines.append(f"  - {yaml_value(fields)}")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    parser = argparse.ArgumentParser(prog="mapex import onnx",
                                     description="an ONNX graph as a mapex network")
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--batch", type=int)
    args = parser.parse_args(argv)
    if args.batch is not None and args.batch < 1:
        print(f"mapex: error: --batch expects a positive integer, got {args.batch}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    model = load_model(args.model, args.batch)
    importer = Importer(args.model, model)
    try:
        importer.run()
    except BadInput as e:
        fail(args.model, str(e))
    for name, op, why in importer.unmapped:
        print(f"mapex: warning: {args.model}: node '{name}' ({op}) not mapped: {why}; "
              f"the connection through it is cut", file=sys.stderr)
    for name, producers in importer.cut:
        print(f"mapex: warning: {args.model}: layer '{name}' reads {', '.join(producers)} "
              f"through a reshape that mapex's network shapes cannot express; it is imported "
              f"reading the network input", file=sys.stderr)
    network_name = model.graph.name or "onnx_model"
    write_network(importer, args.model, network_name, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
