#!/usr/bin/env bash
# Schedules a small chain with the three solvers of
# experiments/kapla/networks.sh (K, X, R), each to an HDF5 file, and builds
# the whole-network report page from them: the page must carry the row of
# the chain with its three energies, the comparisons, the paper's figure
# beside ours; without X's files, no X columns; and refuse a file that is
# not a schedule.
set -euo pipefail
mapex="$1" data="$2" work="$3" report="$4"
rm -rf "$work" && mkdir -p "$work/runs"
base=(schedule --workload "$data/kapla_tiny_chain.yaml" --arch "$data/kapla_chip4.yaml")
"$mapex" "${base[@]}" -o "$work/runs/inference_tiny_K.h5" >/dev/null
"$mapex" "${base[@]}" --inter-layer exhaustive -o "$work/runs/inference_tiny_X.h5" >/dev/null
"$mapex" "${base[@]}" --inter-layer exhaustive --allocation-probability 0.1 \
  --intra-searcher random --intra-max-evaluations 2000 -o "$work/runs/inference_tiny_R.h5" >/dev/null
/usr/bin/python3 "$report" "$work/runs" -o "$work/kapla_networks.md" >/dev/null
page=$(cat "$work/kapla_networks.md")
for needle in "## Fig. 9: inference, multi-node chip, batch 64" "| tiny | 3 |" \
    "K vs X: mean" "K vs R: mean" "X takes" "| energy overhead, Fig. 9: inference, multi-node chip, batch 64 | 7.7% |"; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
# K is never better than the exhaustive inter-layer search on the same model.
/usr/bin/python3 - "$work/runs" <<'PY'
import sys, h5py
e = {s: float(h5py.File(f"{sys.argv[1]}/inference_tiny_{s}.h5", "r").attrs["energy_pj"]) for s in "KX"}
assert e["X"] <= e["K"] * (1 + 1e-12), e
PY
# Without X's runs (the regeneration's set: K and R): no X columns, the K vs R
# comparison stays, and the paper's table says X was not run.
mkdir -p "$work/no_x" && cp "$work/runs/inference_tiny_K.h5" "$work/runs/inference_tiny_R.h5" "$work/no_x/"
/usr/bin/python3 "$report" "$work/no_x" -o "$work/no_x.md" >/dev/null
page=$(cat "$work/no_x.md")
for needle in "| network | layers | K energy (pJ) | R energy (pJ) | K vs R | segments K | time K / R (s) |" \
    "K vs R: mean" "| 7.7% | not run | mean "; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
if grep -q "X energy\|K vs X: mean" <<<"$page"; then echo "X columns without X runs:"; echo "$page"; exit 1; fi
# A run's result file is not a schedule: refused with the file named.
mkdir -p "$work/bad" && cp "$work/runs/inference_tiny_K.h5" "$work/bad/x_K.h5"
/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f.attrs['kind']='run'" "$work/bad/x_K.h5"
if err=$(/usr/bin/python3 "$report" "$work/bad" -o "$work/bad.md" 2>&1); then
  echo "a non-schedule file was accepted"; exit 1
fi
grep -qF "x_K.h5: not a schedule result file" <<<"$err" || { echo "unexpected error: $err"; exit 1; }
echo "report built from $work/runs"
