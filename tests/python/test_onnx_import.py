"""`mapex import onnx` on small ONNX models built here with python3-onnx:
each layer's type, shape fields, MACs and inputs against hand counts
(onnx_models.py), the warning for an operator mapex cannot map, and bad
input (exit 2 naming the file and the node).

usage: test_onnx_import.py MAPEX_BINARY WORK_DIR"""

import os
import subprocess
import sys
import unittest

import onnx
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_models  # noqa: E402

MAPEX, WORK = sys.argv[1], sys.argv[2]


def run(*args):
    return subprocess.run([MAPEX, *args], capture_output=True, text=True)


class ImportOnnx(unittest.TestCase):
    def import_model(self, key):
        model, expected = onnx_models.MODELS[key]()
        path = os.path.join(WORK, key + ".onnx")
        onnx.save(model, path)
        out = os.path.join(WORK, key + ".yaml")
        args = ["import", "onnx", path, "-o", out]
        if key in onnx_models.BATCH:
            args += ["--batch", str(onnx_models.BATCH[key])]
        r = run(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            written = yaml.safe_load(f)
        return expected, written, r

    def check(self, key):
        expected, written, r = self.import_model(key)
        layers = {layer["name"]: layer for layer in written["layers"]}
        self.assertEqual(list(layers), list(expected), "kept layers, in graph order")
        table = {}
        for line in r.stdout.splitlines()[1:]:
            cols = line.split("\t")
            if len(cols) == 4:
                table[cols[0]] = cols
        total = 0
        for name, (kind, fields, macs, inputs) in expected.items():
            layer = layers[name]
            self.assertEqual(layer["type"], kind, name)
            for field, value in fields.items():
                self.assertEqual(layer.get(field), value, f"{name}.{field}")
            self.assertEqual(layer["inputs"], inputs, f"{name}: inputs")
            # MACs as mapex counts them on the loaded network
            self.assertEqual(table[name][1], kind, name)
            self.assertEqual(int(table[name][2]), macs, f"{name}: MACs")
            self.assertEqual(table[name][3], ",".join(inputs), f"{name}: inputs (loaded)")
            total += macs
        self.assertIn(f"kept {len(expected)} layers, {total} MACs", r.stdout)
        return r

    def test_resnet_basic_block(self):
        self.check("resnet_block")

    def test_depthwise_separable_block(self):
        self.check("dw_separable")

    def test_mlp_and_unmapped_operator_warning(self):
        r = self.check("mlp")
        self.assertIn("warning", r.stderr)
        self.assertIn("'argmax' (ArgMax)", r.stderr)

    def test_attention_projections(self):
        self.check("attention")

    def test_concat_and_cut_connections(self):
        r = self.check("branches")
        self.assertIn("'upsample' (Resize)", r.stderr)
        self.assertIn("layer 'from_dense' reads dense", r.stderr)

    def test_batch_changes_the_samples(self):
        model, _ = onnx_models.mlp()
        path = os.path.join(WORK, "mlp_b3.onnx")
        onnx.save(model, path)
        r = run("import", "onnx", path, "-o", os.path.join(WORK, "mlp_b3.yaml"), "--batch", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fc1\tfc\t" + str(3 * 784 * 256), r.stdout)

    def test_not_an_onnx_file(self):
        path = os.path.join(WORK, "text.onnx")
        with open(path, "w") as f:
            f.write("network: not onnx\n")
        r = run("import", "onnx", path, "-o", os.path.join(WORK, "text.yaml"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(path, r.stderr)
        self.assertIn("not an ONNX model", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_no_mappable_operator(self):
        path = os.path.join(WORK, "relu.onnx")
        onnx.save(onnx_models.relu_only(), path)
        r = run("import", "onnx", path, "-o", os.path.join(WORK, "relu.yaml"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(path, r.stderr)
        self.assertIn("'only_relu' (Relu)", r.stderr)
        self.assertIn("expected at least one Conv, Gemm or MatMul", r.stderr)

    def test_missing_file_and_usage(self):
        r = run("import", "onnx", os.path.join(WORK, "absent.onnx"), "-o", "x.yaml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("absent.onnx", r.stderr)
        r = run("import", "onnx", os.path.join(WORK, "absent.onnx"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("-o NET.yaml", r.stderr)


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=sys.argv[:1], verbosity=2)
