#!/usr/bin/env bash
# Runs experiments/flash/table5_tiling.yaml and reads the result file back
# with h5py: every job succeeds, the stop reasons carry FLASH's candidate
# counts, in every loop order the tiled mappings (the paper's pick T and
# the search S) beat the non-tiled one on runtime, and the non-tiled
# runtimes are Table 5's (FLASH §5.3).
set -euo pipefail
mapex="$1" experiment="$2" out="$3"
rm -f "$out"
"$mapex" run "$experiment" -o "$out" -j 2 --quiet >/dev/null
/usr/bin/python3 - "$out" "$(dirname "$0")/../../scripts" <<'PY'
import sys

sys.path.insert(0, sys.argv[2])
from mapex_results import read_jobs  # both result-file formats

text = lambda v: v.decode() if isinstance(v, bytes) else v
rows = {text(r["searcher"]): r for r in read_jobs(sys.argv[1]).to_dict("records")}
assert len(rows) == 18, sorted(rows)
for name, r in rows.items():
    assert text(r["status"]) == "ok", (name, text(r["error"]))
    reason = text(r["stop_reason"])
    assert "tile tuples before pruning" in reason and "candidates after" in reason, reason
# Table 5's non-tiled runtimes (ms at 1 GHz).
paper_nt = {"mnk": 2.23, "nmk": 2.23, "mkn": 1.31, "nkm": 1.31, "kmn": 1.31, "knm": 1.31}
for order, paper in paper_nt.items():
    nt, t, s = rows["NT-" + order], rows["T-" + order], rows["S-" + order]
    assert abs(nt["latency_cycles"] / 1e6 / paper - 1) < 0.01, (order, nt["latency_cycles"])
    assert t["latency_cycles"] < nt["latency_cycles"], order
    assert s["latency_cycles"] <= t["latency_cycles"], order
    assert s["evaluations"] > t["evaluations"] > nt["evaluations"], order
print("table5: 18 jobs, non-tiled runtimes as the paper's, tiled beats non-tiled in all orders")
PY
