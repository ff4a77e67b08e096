#!/usr/bin/python3
"""Checks scripts/maestro_case_study_1.py end to end on a tiny network: the
five styles of experiments/maestro/case_study_1_styles.yaml written as
MAESTRO files, evaluated by `mapex evaluate --maestro`, and the page's
aggregates, against numbers counted by hand.

  maestro_case_study_1_check.py MAPEX WORK_DIR SCRIPTS_DIR STYLES_FILE"""
import os
import shutil
import sys

import yaml

mapex, work, scripts, styles_file = sys.argv[1:5]
sys.path.insert(0, scripts)
import maestro_case_study_1 as cs1  # noqa: E402

shutil.rmtree(work, ignore_errors=True)
with open(styles_file) as f:
    spec = yaml.safe_load(f)
# 128 PEs: two KC-P clusters of 64. Layers in MAESTRO's terms (Y, X input).
spec["hardware"] = {"num_pes": 128, "noc_bw_cstr": 32, "offchip_bw_cstr": 64}
spec["networks"] = [{"name": "tiny", "layers": [
    {"name": "early", "type": "CONV", "K": 2, "C": 3, "R": 3, "S": 3, "Y": 5, "X": 5},
    {"name": "late", "type": "CONV", "K": 4, "C": 8, "R": 3, "S": 3, "Y": 4, "X": 4},
    {"name": "strided", "type": "CONV", "K": 2, "C": 2, "R": 3, "S": 3, "Y": 7, "X": 7,
     "stride": 2},
    {"name": "fc", "type": "CONV", "K": 4, "C": 8, "R": 1, "S": 1, "Y": 1, "X": 1}]}]
spec["variants"] = {}
df = cs1.run_fixed(spec, os.path.dirname(styles_file), work, mapex)


def check(ok, what):
    if not ok:
        print(f"FAILED: {what}")
        print(df.to_string())
        sys.exit(1)


styles = sorted(df["style"].unique())
check(styles == sorted(cs1.STYLE_ORDER), f"one run per style, got {styles}")
check(len(df) == 4 * 5, "every layer under every style")
kinds = dict(zip(df["layer_name"], df["kind"]))
check(kinds == {"early": "early", "late": "late", "strided": "early", "fc": "fc"},
      f"operator classes (C <= Y early, C > Y late, 1x1 on 1x1 fc): {kinds}")
with open(os.path.join(work, "tiny_YX-P.m")) as f:
    yxp = f.read()
# YX-P's column tile at stride 2: 8 outputs need (8 - 1) x 2 + 3 = 17 input
# columns and move by 16.
check("TemporalMap(17,16) X;" in yxp, "YX-P's column tile from the stride")
early = df[df["layer_name"] == "early"]
# K2 C3 3x3 over 3x3 outputs: 486 MACs, 54 filter words.
check(set(early["num_macs"]) == {486}, "486 MACs in every style")
kcp = early[early["style"] == "KC-P"].iloc[0]
check(kcp["filter_l2_rd"] == 54, "KC-P fetches each of the 54 filter words once")
f = df.rename(columns={"layer_name": "layer"})
rf = cs1.reuse_factors(f, "tiny")
row = rf[(rf["kind"] == "early") & (rf["style"] == "KC-P")].iloc[0]
# Early layers: early (486 MACs, 54 words) and strided (2x2x9 x 3x3 = 324
# MACs, 36 words): (486 + 324) / (54 + 36) = 9 uses per filter word.
check(abs(row["filt"] - 9) < 1e-9 and abs(row["filt_bound"] - 9) < 1e-9,
      f"KC-P's filter reuse is the bound, 9: {row.to_dict()}")
# One level up: each of those 90 filter words is written into L2 once and
# read from it once (KC-P keeps it in its PE), so L2 reads per L2 write = 1.
check(abs(row["filt_l2"] - 1) < 1e-9,
      f"KC-P's L2 filter reuse is 1: {row.to_dict()}")
yrp = rf[(rf["kind"] == "early") & (rf["style"] == "YR-P")].iloc[0]
check(abs(yrp["filt_l2_ratio"] - yrp["filt_l2"]) < 1e-9,
      "YR-P's L2 filter factor over KC-P's (1) is the factor itself")
# The late-layer comparison: the larger |ratio - 1| of the two tensors, in
# percent (activation 1.05x, filter 0.8x: 20%); KC-P against itself is 0.
check(abs(cs1.largest_difference(1.05, 0.8) - 20) < 1e-9, "largest |ratio - 1| in percent")
check(list(cs1.late_layer_differences(f, "KC-P", "tiny")) == [0.0], "KC-P against itself, per layer")
check(cs1.per_dram_fetch_difference(f, "late", "KC-P", "tiny") == 0.0, "KC-P against itself, per fetch")
g = cs1.gains(f, "runtime_cycles", "energy_total_macunits").iloc[0]
per_layer_min = f.groupby("layer")["runtime_cycles"].min().sum()
best_total = f.groupby("style")["runtime_cycles"].sum().min()
check(g["adaptive_lat"] == per_layer_min and g["best_lat"] == best_total,
      "adaptive = sum of per-layer minima, best style = smallest total")
check(0 <= g["lat_gain"] < 1 and 0 <= g["en_gain"] < 1, "reductions in [0, 1)")
page, summary = cs1.page(df, None, spec, {"fixed": "-", "searched": "-"}, reuse_network="tiny",
                        results_dir=work)
check("## Adaptive mapping (fixed mappings)" in page, "the page has the adaptive table")
check(all(r[4] in ("yes", "partly", "no") and r[5] in ("assumption", "model", "limit", "none")
          for r in summary), f"summary classes: {summary}")
print(f"case study I pipeline checked in {work}")
