#!/usr/bin/python3
"""MAESTRO's case study I (IEEE Micro 2020, "The Impact of Mapping Choices"):
five mapping styles on whole networks, the best single style against the
adaptive choice of a style per layer (and per operator type), and the
reuse factors of YR-P against KC-P in VGG16's early and late layers.

Two runs, side by side:
- fixed: one mapping per style, as the paper (experiments/maestro/
  case_study_1_styles.yaml, MAESTRO files written here and evaluated with
  `mapex evaluate --maestro ... --costmodel mdc`);
- searched: one style per searcher, tiles searched per layer by mapex
  (experiments/maestro/case_study_1.yaml, `mapex run`).

Used by scripts/maestro_dse_report, which writes
docs/results/maestro_case_study_1.md; run alone:

  scripts/maestro_case_study_1.py [--no-run] [-j 2]

Uses Debian's python3-yaml, h5py and pandas (/usr/bin/python3)."""
import argparse
import io
import os
import subprocess
import sys

import pandas as pd
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STYLES_FILE = os.path.join(ROOT, "experiments", "maestro", "case_study_1_styles.yaml")
SEARCHED_FILE = os.path.join(ROOT, "experiments", "maestro", "case_study_1.yaml")
RESULTS_DIR = os.path.join(ROOT, "results", "maestro_case_study_1")
SEARCHED_RESULTS = os.path.join(ROOT, "results", "maestro_case_study_1.h5")
MAPEX = os.path.join(ROOT, "build", "bin", "mapex")
STYLE_ORDER = ["KC-P", "YR-P", "YX-P", "X-P", "C-P"]
# The searched run's searcher labels and the styles they stand for.
SEARCHED_STYLE = {"kc_p": "KC-P", "yr_p": "YR-P", "yx_p": "YX-P", "x_p": "X-P", "c_p": "C-P"}


def fail(message):
    print(f"maestro_case_study_1: error: {message}", file=sys.stderr)
    sys.exit(2)


def maestro_layers(network, base):
    """Layers of one network entry as MAESTRO layers: (name, type, dims,
    stride, kind), kind being the operator class of Fig. 4(b)."""
    if "workload" in network:
        path = os.path.join(base, network["workload"])
        with open(path) as f:
            w = yaml.safe_load(f)
        name = w["network"]
        out = []
        for l in w["layers"]:
            if l["type"] == "fc":  # MAESTRO writes FC as a 1x1 CONV on a 1x1 input
                dims = {"K": l["K"], "C": l["C"], "R": 1, "S": 1, "Y": 1, "X": 1}
                out.append((l["name"], "CONV", dims, 1, "fc"))
                continue
            if l["type"] != "conv2d":
                fail(f"{path}: layer {l['name']}: type {l['type']} has no MAESTRO form here")
            pad = l.get("padding", 0)
            # MAESTRO has no padding: the input is given at its padded size.
            dims = {"K": l["K"], "C": l["C"], "R": l["R"], "S": l["S"], "Y": l["H"] + 2 * pad,
                    "X": l["W"] + 2 * pad}
            groups = l.get("groups", 1)
            if groups == l["C"] == l["K"] and groups > 1:
                dims["K"] = 1
                out.append((l["name"], "DSCONV", dims, l.get("stride", 1), "depthwise"))
            elif groups > 1:
                fail(f"{path}: layer {l['name']}: grouped convolution has no style here")
            else:
                out.append((l["name"], "CONV", dims, l.get("stride", 1), conv_kind(dims)))
        return name, out
    out = []
    for l in network["layers"]:
        dims = {k: l[k] for k in ("K", "C", "R", "S", "Y", "X")}
        kind = "transposed" if l["type"] == "TRCONV" else conv_kind(dims)
        out.append((l["name"], l["type"], dims, l.get("stride", 1), kind))
    return network["name"], out


def conv_kind(dims):
    """Fig. 4(b)'s operator classes; C > Y is a late layer, else early."""
    if dims["R"] == 1 and dims["S"] == 1:
        return "fc" if dims["Y"] == 1 and dims["X"] == 1 else "pointwise"
    return "late" if dims["C"] > dims["Y"] else "early"


def maestro_file(network, layers, style):
    lines = [f"Network {network} {{"]
    for name, typ, dims, stride, _ in layers:
        directives = style["depthwise" if typ == "DSCONV" else "conv"]
        xt, xo = 7 * stride + dims["S"], 8 * stride
        lines += [f"Layer {name} {{", f"Type: {typ}", f"Stride {{ X: {stride}, Y: {stride} }}",
                  "Dimensions { " + ", ".join(f"{k}: {v}" for k, v in dims.items()) + " }",
                  "Dataflow {"]
        lines += [d.format(XT=xt, XO=xo) + ";" for d in directives]
        lines += ["}", "}"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def evaluate(net, layers, style_name, style, hw, kinds):
    """Writes the network's MAESTRO file under one style and evaluates it."""
    slug = "".join(c if c.isalnum() or c == "-" else "_" for c in style_name)
    path = os.path.join(RESULTS_DIR, f"{net}_{slug}.m")
    with open(path, "w") as f:
        f.write(maestro_file(net, layers, style))
    out = subprocess.run([MAPEX, "evaluate", "--maestro", path, "--hw", hw, "--costmodel", "mdc",
                          "--format", "csv"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{path}: mapex evaluate failed: {out.stderr.strip()}")
    df = pd.read_csv(io.StringIO(out.stdout))
    df["network"], df["style"] = net, style_name
    df["kind"] = [kinds[n] for n in df["layer_name"]]
    return df


def run_fixed(spec):
    """One MAESTRO file per network and style, evaluated by mapex's mdc."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    hw = os.path.join(RESULTS_DIR, "hw.m")
    with open(hw, "w") as f:
        f.write("".join(f"{k}: {v}\n" for k, v in spec["hardware"].items()))
    base = os.path.dirname(STYLES_FILE)
    frames = []
    for network in spec["networks"]:
        net, layers = maestro_layers(network, base)
        kinds = {name: kind for name, _, _, _, kind in layers}
        for style_name, style in spec["styles"].items():
            frames.append(evaluate(net, layers, style_name, style, hw, kinds))
        for variant_name, variant in spec.get("variants", {}).items():
            if net not in variant["networks"]:
                continue
            frames.append(evaluate(net, layers, variant_name, variant, hw, kinds))
    df = pd.concat(frames, ignore_index=True)
    df.to_csv(os.path.join(RESULTS_DIR, "fixed.csv"), index=False)
    return df


def load_fixed():
    path = os.path.join(RESULTS_DIR, "fixed.csv")
    if not os.path.exists(path):
        fail(f"{path} is missing: run without --no-run first")
    return pd.read_csv(path)


def gains(df, latency, energy):
    """Per network: each style's totals, the best single style, and the
    adaptive totals (best style per layer; per operator class)."""
    rows = []
    df = df[df["style"].isin(STYLE_ORDER)]
    for net, g in df.groupby("network", sort=False):
        totals = g.groupby("style")[[latency, energy]].sum()
        per_layer = g.groupby("layer")[[latency, energy]].min().sum()
        per_kind = g.groupby(["kind", "style"])[[latency, energy]].sum().groupby("kind").min().sum()
        row = {"network": net, "layers": g["layer"].nunique()}
        for s in STYLE_ORDER:
            if s in totals.index:
                row[f"lat_{s}"], row[f"en_{s}"] = totals.loc[s, latency], totals.loc[s, energy]
        row["best_lat_style"] = totals[latency].idxmin()
        row["best_en_style"] = totals[energy].idxmin()
        row["best_lat"], row["best_en"] = totals[latency].min(), totals[energy].min()
        row["adaptive_lat"], row["adaptive_en"] = per_layer[latency], per_layer[energy]
        row["kind_lat"], row["kind_en"] = per_kind[latency], per_kind[energy]
        rows.append(row)
    out = pd.DataFrame(rows)
    out["lat_gain"] = 1 - out["adaptive_lat"] / out["best_lat"]
    out["en_gain"] = 1 - out["adaptive_en"] / out["best_en"]
    out["kind_lat_gain"] = 1 - out["kind_lat"] / out["best_lat"]
    out["kind_en_gain"] = 1 - out["kind_en"] / out["best_en"]
    return out


def reuse_factors(df, network="vgg16"):
    """The paper's reuse factor, "the number of local accesses per fetch":
    L1 reads per L2 read of a tensor, summed over VGG16's early (C <= Y) and
    late layers, per style, and over KC-P's. `filt_bound` is the most any
    mapping can reach: every filter word fetched once (MACs / filter words,
    MAESTRO writes each filter word into L2 once)."""
    g = df[df["network"] == network]
    rows = []
    for kind in ("early", "late"):
        k = g[g["kind"] == kind]
        ref = k[k["style"] == "KC-P"]
        ref_act = ref["input_l1_rd"].sum() / ref["input_l2_rd"].sum()
        ref_filt = ref["filter_l1_rd"].sum() / ref["filter_l2_rd"].sum()
        for style, t in k.groupby("style", sort=False):
            act = t["input_l1_rd"].sum() / t["input_l2_rd"].sum()
            filt = t["filter_l1_rd"].sum() / t["filter_l2_rd"].sum()
            rows.append({"kind": kind, "style": style, "layers": t["layer_name"].nunique(),
                         "act": act, "filt": filt, "act_ratio": act / ref_act,
                         "filt_ratio": filt / ref_filt,
                         "filt_bound": t["num_macs"].sum() / t["filter_l2_wr"].sum(),
                         "energy": t["energy_total_macunits"].sum(),
                         "latency": t["runtime_cycles"].sum()})
    return pd.DataFrame(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-run", action="store_true")
    args = ap.parse_args()
    with open(STYLES_FILE) as f:
        spec = yaml.safe_load(f)
    df = load_fixed() if args.no_run else run_fixed(spec)
    pd.set_option("display.width", 250)
    print(gains(df.rename(columns={"layer_name": "layer"}), "runtime_cycles",
                "energy_total_macunits").to_string())
    print(reuse_factors(df).to_string())


if __name__ == "__main__":
    main()
