"""Small ONNX models built at test time with python3-onnx, and the shapes
and MAC counts of their layers counted by hand (tests of `mapex import
onnx` and of the Python module)."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _weight(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _model(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


def _x(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def resnet_block():
    """Stem conv + max pool, a ResNet basic block (two 3x3 convs, batch
    norm, identity add), a stride-2 conv, global pool, flatten, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "w_stem"], ["stem"], name="stem", strides=[2, 2],
                         pads=[3, 3, 3, 3]),
        helper.make_node("Relu", ["stem"], ["stem_r"], name="stem_relu"),
        helper.make_node("MaxPool", ["stem_r"], ["pool"], name="pool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["pool", "w_a"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["a", "g", "b", "m", "v"], ["a_bn"], name="bn_a"),
        helper.make_node("Relu", ["a_bn"], ["a_r"], name="relu_a"),
        helper.make_node("Conv", ["a_r", "w_b"], ["bb"], name="conv_b", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["bb", "g", "b", "m", "v"], ["b_bn"],
                         name="bn_b"),
        helper.make_node("Add", ["b_bn", "pool"], ["sum"], name="residual"),
        helper.make_node("Relu", ["sum"], ["sum_r"], name="relu_sum"),
        helper.make_node("Conv", ["sum_r", "w_c"], ["c"], name="conv_c", strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "w_fc", "b_fc"], ["y"], name="fc", transB=1),
    ]
    inits = [_weight("w_stem", 64, 3, 7, 7), _weight("w_a", 64, 64, 3, 3),
             _weight("w_b", 64, 64, 3, 3), _weight("w_c", 128, 64, 3, 3),
             _weight("g", 64), _weight("b", 64), _weight("m", 64), _weight("v", 64),
             _weight("w_fc", 10, 128), _weight("b_fc", 10)]
    model = _model("resnet_block", nodes, [_x("x", 1, 3, 112, 112)], [_x("y", 1, 10)], inits)
    expected = {
        # name: (type, shape fields, MACs counted by hand, inputs)
        "stem": ("conv2d", dict(N=1, C=3, K=64, H=112, W=112, R=7, S=7, stride=2, padding=3),
                 64 * 3 * 7 * 7 * 56 * 56, []),
        "conv_a": ("conv2d", dict(C=64, K=64, H=28, W=28, R=3, S=3, padding=1),
                   64 * 64 * 3 * 3 * 28 * 28, ["stem"]),
        "conv_b": ("conv2d", dict(C=64, K=64, H=28, W=28, R=3, S=3, padding=1),
                   64 * 64 * 3 * 3 * 28 * 28, ["conv_a"]),
        "conv_c": ("conv2d", dict(C=64, K=128, H=28, W=28, stride=2, padding=1),
                   128 * 64 * 3 * 3 * 14 * 14, ["conv_b", "stem"]),
        "fc": ("fc", dict(N=1, C=128, K=10), 128 * 10, ["conv_c"]),
    }
    return model, expected


def depthwise_separable():
    """Depthwise 3x3, pointwise 1x1, a grouped stride-2 conv with TF-style
    uneven padding, a dilated conv and a conv with per-axis strides (a loop
    nest). The batch is symbolic: the test imports it with --batch 2."""
    nodes = [
        helper.make_node("Conv", ["x", "w_dw"], ["dw"], name="dw", group=32, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["dw", "lo", "hi"], ["dw6"], name="relu6"),
        helper.make_node("Conv", ["dw6", "w_pw"], ["pw"], name="pw"),
        helper.make_node("Relu", ["pw"], ["pw_r"], name="relu_pw"),
        helper.make_node("Conv", ["pw_r", "w_g"], ["g"], name="grouped", group=4,
                         strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Conv", ["g", "w_d"], ["d"], name="dilated", dilations=[2, 2],
                         pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["d", "w_r"], ["y"], name="rect", strides=[1, 2]),
    ]
    inits = [_weight("w_dw", 32, 1, 3, 3), _weight("w_pw", 64, 32, 1, 1),
             _weight("w_g", 64, 16, 3, 3), _weight("w_d", 64, 64, 3, 3),
             _weight("w_r", 16, 64, 1, 1),
             numpy_helper.from_array(np.array(0, dtype=np.float32), "lo"),
             numpy_helper.from_array(np.array(6, dtype=np.float32), "hi")]
    model = _model("dw_separable", nodes, [_x("x", "N", 32, 16, 16)], [_x("y", "N", 16, 8, 4)],
                   inits)
    expected = {
        "dw": ("conv2d", dict(N=2, C=32, K=32, H=16, W=16, groups=32, padding=1),
               2 * 32 * 3 * 3 * 16 * 16, []),
        "pw": ("conv2d", dict(N=2, C=32, K=64, H=16, W=16, R=1, S=1),
               2 * 64 * 32 * 16 * 16, ["dw"]),
        # pads 0 before, 1 after: the even padding 1 gives the same 8x8 output
        "grouped": ("conv2d", dict(C=64, K=64, groups=4, stride=2, padding=1),
                    2 * 64 * 16 * 3 * 3 * 8 * 8, ["pw"]),
        "dilated": ("conv2d", dict(C=64, K=64, H=8, W=8, dilation=2, padding=2),
                    2 * 64 * 64 * 3 * 3 * 8 * 8, ["grouped"]),
        "rect": ("loopnest", dict(), 2 * 16 * 64 * 8 * 4, ["dilated"]),
    }
    return model, expected


def mlp():
    """Gemm (transB), MatMul + bias Add, Gemm (transA after a Transpose), Softmax, then an ArgMax that
    mapex cannot map. Symbolic batch, imported with --batch 8."""
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["h1r"], name="relu1"),
        helper.make_node("MatMul", ["h1r", "w2"], ["h2m"], name="fc2"),
        helper.make_node("Add", ["h2m", "b2"], ["h2"], name="bias2"),
        helper.make_node("Relu", ["h2"], ["h2r"], name="relu2"),
        helper.make_node("Transpose", ["h2r"], ["h2t"], name="to_features_first", perm=[1, 0]),
        helper.make_node("Gemm", ["h2t", "w3"], ["logits"], name="fc3", transA=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax"),
        helper.make_node("ArgMax", ["probs"], ["y"], name="argmax", axis=1),
    ]
    inits = [_weight("w1", 256, 784), _weight("b1", 256), _weight("w2", 256, 128),
             _weight("b2", 128), _weight("w3", 128, 10)]
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["B", 1])
    model = _model("mlp", nodes, [_x("x", "B", 784)], [y], inits)
    expected = {
        "fc1": ("fc", dict(N=8, C=784, K=256), 8 * 784 * 256, []),
        "fc2": ("fc", dict(N=8, C=256, K=128), 8 * 256 * 128, ["fc1"]),
        "fc3": ("fc", dict(N=8, C=128, K=10), 8 * 128 * 10, ["fc2"]),
    }
    return model, expected


def attention():
    """Self-attention of one 16-token sequence, model width 64, 4 heads of
    16: Q, K, V and output projections as MatMuls with weights (fc layers),
    scores and context as batched MatMuls of two activations."""
    shape4 = numpy_helper.from_array(np.array([1, 16, 4, 16], dtype=np.int64), "shape4")
    shape3 = numpy_helper.from_array(np.array([1, 16, 64], dtype=np.int64), "shape3")
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="v_proj"),
        helper.make_node("Reshape", ["q", "shape4"], ["q4"], name="q_heads"),
        helper.make_node("Reshape", ["k", "shape4"], ["k4"], name="k_heads"),
        helper.make_node("Reshape", ["v", "shape4"], ["v4"], name="v_heads"),
        helper.make_node("Transpose", ["q4"], ["qh"], name="q_t", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vh"], name="v_t", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "shape3"], ["ctx3"], name="merge_heads"),
        helper.make_node("MatMul", ["ctx3", "wo"], ["y"], name="out_proj"),
    ]
    inits = [_weight("wq", 64, 64), _weight("wk", 64, 64), _weight("wv", 64, 64),
             _weight("wo", 64, 64), shape4, shape3]
    model = _model("attention", nodes, [_x("x", 1, 16, 64)], [_x("y", 1, 16, 64)], inits)
    expected = {
        "q_proj": ("fc", dict(N=16, C=64, K=64), 16 * 64 * 64, []),
        "k_proj": ("fc", dict(N=16, C=64, K=64), 16 * 64 * 64, []),
        "v_proj": ("fc", dict(N=16, C=64, K=64), 16 * 64 * 64, []),
        "scores": ("loopnest", dict(), 4 * 16 * 16 * 16, ["q_proj", "k_proj"]),
        "context": ("loopnest", dict(), 4 * 16 * 16 * 16, ["scores", "v_proj"]),
        "out_proj": ("fc", dict(N=16, C=64, K=64), 16 * 64 * 64, ["context"]),
    }
    return model, expected


def relu_only():
    """A graph with no operator mapex can map."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="only_relu")]
    return _model("relu_only", nodes, [_x("x", 1, 8)], [_x("y", 1, 8)], [])


MODELS = {"resnet_block": resnet_block, "dw_separable": depthwise_separable, "mlp": mlp,
          "attention": attention}
BATCH = {"dw_separable": 2, "mlp": 8}


def branches():
    """Two convolutions concatenated (an Inception-style join), a 1x1 conv
    reading both, a Resize that mapex cannot map (its consumer is cut off),
    and an fc whose output is reshaped into an image for a conv that reads
    it: the reshape breaks mapex's channel rule, so that conv is cut too."""
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], dtype=np.float32), "roi")
    img = numpy_helper.from_array(np.array([1, 16, 4, 4], dtype=np.int64), "img")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["b1"], name="branch1"),
        helper.make_node("Conv", ["x", "w2"], ["b2"], name="branch3", pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["b1", "b2"], ["cat"], name="concat", axis=1),
        helper.make_node("Conv", ["cat", "w3"], ["c"], name="join"),
        helper.make_node("Resize", ["c", "roi", "scales"], ["up"], name="upsample",
                         mode="nearest"),
        helper.make_node("Conv", ["up", "w4"], ["d"], name="after_resize"),
        helper.make_node("Flatten", ["d"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "w5"], ["e"], name="dense", transB=1),
        helper.make_node("Reshape", ["e", "img"], ["e_img"], name="to_image"),
        helper.make_node("Conv", ["e_img", "w6"], ["y"], name="from_dense"),
    ]
    inits = [_weight("w1", 8, 16, 1, 1), _weight("w2", 24, 16, 3, 3),
             _weight("w3", 32, 32, 1, 1), _weight("w4", 8, 32, 1, 1),
             _weight("w5", 256, 8 * 16 * 16), _weight("w6", 4, 16, 1, 1), scales, roi, img]
    model = _model("branches", nodes, [_x("x", 1, 16, 8, 8)], [_x("y", 1, 4, 4, 4)], inits)
    expected = {
        "branch1": ("conv2d", dict(C=16, K=8, H=8, W=8), 8 * 16 * 8 * 8, []),
        "branch3": ("conv2d", dict(C=16, K=24, R=3, S=3, padding=1), 24 * 16 * 9 * 8 * 8, []),
        "join": ("conv2d", dict(C=32, K=32), 32 * 32 * 8 * 8, ["branch1", "branch3"]),
        "after_resize": ("conv2d", dict(C=32, K=8, H=16, W=16), 8 * 32 * 16 * 16, []),
        "dense": ("fc", dict(N=1, C=2048, K=256), 2048 * 256, ["after_resize"]),
        "from_dense": ("conv2d", dict(C=16, K=4, H=4, W=4), 4 * 16 * 4 * 4, []),
    }
    return model, expected


MODELS["branches"] = branches
