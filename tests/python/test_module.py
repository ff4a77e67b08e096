"""The Python module `mapex`: every public function once, against the CLI
where both give a number, and its errors (InputError with the CLI's
file:line message, TypeError for an argument of the wrong type).

usage: test_module.py MAPEX_BINARY TEST_DATA_DIR WORK_DIR (PYTHONPATH names
the build's python folder)"""

import json
import os
import subprocess
import sys
import unittest

import mapex

MAPEX, DATA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
NET = os.path.join(DATA, "tiny_net.yaml")
ARCH = os.path.join(DATA, "tiny_arch.yaml")
MAPPING = os.path.join(DATA, "tiny_conv_mapping.yaml")
EXPERIMENT = os.path.join(DATA, "e2e_experiment.yaml")


def cli_json(*args):
    r = subprocess.run([MAPEX, *args, "--format", "json"], capture_output=True, text=True)
    return json.loads(r.stdout)


class Module(unittest.TestCase):
    def test_load(self):
        w = mapex.load_workload(NET)
        self.assertEqual(w.name, "tiny")
        conv = w.layers[0]
        self.assertEqual((conv["name"], conv["kind"]), ("conv", "conv2d"))
        # 8 output channels x 4 input channels x 3x3 filter x 4x4 outputs
        self.assertEqual(conv["macs"], 8 * 4 * 3 * 3 * 4 * 4)
        self.assertEqual(w.layers[1]["inputs"], ["conv"])
        a = mapex.load_architecture(ARCH)
        self.assertEqual(a.name, "tiny")
        self.assertIn("L1", a.levels)
        m = mapex.load_mapping(MAPPING, w, a, layer="conv")
        self.assertIn("L1", m.yaml)

    def test_evaluate_matches_cli(self):
        for model in ("roofline", "mdc"):
            metrics = mapex.evaluate(NET, ARCH, MAPPING, costmodel=model, layer="conv")
            cli = cli_json("evaluate", "--workload", NET, "--arch", ARCH, "--mapping", MAPPING,
                           "--layer", "conv", "--costmodel", model)["metrics"]
            self.assertEqual(metrics["latency_cycles"], cli["latency_cycles"], model)
            self.assertEqual(metrics["energy_pj"], cli["energy_pj"], model)
            self.assertEqual(metrics["macs"], 8 * 4 * 3 * 3 * 4 * 4)

    def test_search_with_budget(self):
        r = mapex.search(NET, ARCH, "random", layer="conv", max_evaluations=50, seed=3,
                         params={"batch_size": 10})
        self.assertEqual(r["status"], "ok")
        self.assertLessEqual(r["evaluations"], 50)
        cli = cli_json("search", "--workload", NET, "--arch", ARCH, "--searcher", "random",
                       "--layer", "conv", "--max-evaluations", "50", "--seed", "3",
                       "--param", "batch_size=10")
        self.assertEqual(r["metrics"]["latency_cycles"], cli["metrics"]["latency_cycles"])

    def test_count_mapspace_is_exact_int(self):
        n = mapex.count_mapspace(NET, ARCH, layer="conv")
        self.assertIsInstance(n, int)
        cli = cli_json("mapspace", "--workload", NET, "--arch", ARCH, "--layer", "conv")
        self.assertEqual(n, int(cli["valid"]))
        self.assertEqual(mapex.count_mapspace(NET, ARCH, layer="conv", valid=False),
                         int(cli["size"]))

    def test_run_experiment_and_read_results(self):
        out = os.path.join(WORK, "module_e2e.h5")
        df = mapex.run_experiment(EXPERIMENT, output=out, threads=2, force=True)
        self.assertEqual(len(df), 4)
        self.assertEqual(set(df["searcher"]), {"random", "exhaustive-2k"})
        for column in ("workload", "layer", "searcher", "status", "best_mapping"):
            self.assertTrue(all(isinstance(v, str) for v in df[column]), column)
        params = dict(zip(df["searcher"], df["searcher_params"]))
        self.assertEqual(params["random"].get("batch_size"), "128")
        self.assertEqual(params["exhaustive-2k"], {})
        self.assertEqual(df.attrs["experiment_name"], "e2e")
        again = mapex.read_results(out)
        self.assertEqual(list(again["latency_cycles"]), list(df["latency_cycles"]))

    def test_read_results_with_per_row_parameters(self):
        # A file whose strings h5py returns as str and whose rows carry the
        # searcher's parameters (per-row columns, as a later layout may
        # store them): read_results takes them as they are.
        import h5py
        import numpy as np
        text = h5py.string_dtype("utf-8")
        for layout in ("json", "columns"):
            fields = [("searcher", text), ("latency_cycles", "f8")]
            fields += ([("searcher_params", text)] if layout == "json"
                       else [("param.batch_size", text), ("param.victory_condition", text)])
            rows = np.zeros(2, dtype=fields)
            rows["searcher"] = ["random", "random"]
            rows["latency_cycles"] = [10.0, 20.0]
            if layout == "json":
                rows["searcher_params"] = ['{"batch_size": "64"}', '{"batch_size": "128"}']
            else:
                rows["param.batch_size"] = ["64", "128"]
                rows["param.victory_condition"] = ["", "50"]
            path = os.path.join(WORK, f"per_row_{layout}.h5")
            with h5py.File(path, "w") as f:
                f.create_dataset("jobs", data=rows)
                f.attrs["format_version"] = 2
            df = mapex.read_results(path)
            self.assertEqual(list(df["searcher"]), ["random", "random"])
            self.assertEqual([p["batch_size"] for p in df["searcher_params"]], ["64", "128"],
                             layout)
            self.assertEqual(df.attrs["format_version"], 2)
        self.assertEqual(df["searcher_params"][1]["victory_condition"], "50")
        self.assertNotIn("victory_condition", df["searcher_params"][0])
        with self.assertRaises(mapex.InputError):
            mapex.read_results(NET)  # not an HDF5 file

    def test_plugins_found_as_the_cli_finds_them(self):
        names = {p["name"] for p in mapex.plugins()}
        self.assertTrue({"random", "exhaustive", "roofline", "mdc"} <= names, names)

    def test_input_error_carries_the_cli_message(self):
        bad = os.path.join(WORK, "bad_net.yaml")
        with open(bad, "w") as f:
            f.write("network: bad\nlayers:\n  - {name: c, type: conv2d, C: 0, K: 8, H: 6, W: 6,"
                    " R: 3, S: 3}\n")
        with self.assertRaises(mapex.InputError) as caught:
            mapex.load_workload(bad)
        cli = subprocess.run([MAPEX, "check", "--workload", bad], capture_output=True, text=True)
        self.assertEqual(cli.returncode, 2)
        self.assertIn(str(caught.exception), cli.stderr)
        self.assertIn(bad + ":3:", str(caught.exception))
        with self.assertRaises(mapex.InputError) as caught:
            mapex.evaluate(NET, ARCH, MAPPING, costmodel="no_such_model", layer="conv")
        self.assertIn("no_such_model", str(caught.exception))
        self.assertTrue(issubclass(mapex.InputError, mapex.Error))
        # a searcher refusing its input: exit 2 in the CLI, InputError here
        with self.assertRaises(mapex.InputError) as caught:
            mapex.search(NET, ARCH, "flash", layer="conv")
        self.assertIn("GEMM only", str(caught.exception))

    def test_wrong_types(self):
        with self.assertRaises(TypeError):
            mapex.load_workload(42)
        with self.assertRaises(TypeError):
            mapex.search(NET, ARCH, "random", layer="conv", max_evaluations="many")
        with self.assertRaises(TypeError):
            mapex.evaluate(NET, ARCH, MAPPING, layer="conv", params=["batch_size=1"])

    def test_import_onnx(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import onnx
        import onnx_models
        model, expected = onnx_models.mlp()
        path = os.path.join(WORK, "module_mlp.onnx")
        onnx.save(model, path)
        with self.assertWarnsRegex(UserWarning, "'argmax' \\(ArgMax\\) not mapped"):
            w = mapex.import_onnx(path, os.path.join(WORK, "module_mlp.yaml"), batch=8)
        self.assertEqual([l["macs"] for l in w.layers], [e[2] for e in expected.values()])


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=sys.argv[:1], verbosity=2)
