#!/usr/bin/env bash
# Schedules a small chain with the three solvers of
# experiments/kapla/pipelined.sh (K, B, R in nn_dataflow's space), each to
# an HDF5 file with its CPU time beside it, and builds the page from them:
# the page must carry the chain's row with the three energies and the
# paper's figures, B must be no worse than K or R (it searches both their
# spaces), R keeping everything (p = 1) must be B, the sweeps of R's keep
# probability, of R drawing the gaps between kept blockings (keep_draw=gap,
# recorded in its file), of R per memory level keeping one where a level
# keeps none (never worse than without) and of K's k_S must have their
# sections, and a file
# that is not a schedule is refused.
set -euo pipefail
mapex="$1" data="$2" work="$3" report="$4"
rm -rf "$work" && mkdir -p "$work/runs"
base=(schedule --workload "$data/kapla_tiny_chain.yaml" --arch "$data/kapla_chip4.yaml"
  --costmodel tensor_centric --costmodel-param model=nn_dataflow --intra-searcher nn_dataflow
  --intra-param hybrid_partition=true --intra-param batch_partition=true)
run() {
  /usr/bin/time -o "$work/runs/inference_kapla_mlp_$1.time" -f "%U %S %e" \
    "$mapex" "${base[@]}" "${@:2}" -o "$work/runs/inference_kapla_mlp_$1.h5" >/dev/null
}
run K --intra-param loop_blocking=kapla
run B --inter-layer exhaustive --intra-param loop_blocking=exhaustive
run R --inter-layer exhaustive --allocation-probability 0.8 --intra-param keep_probability=0.8
run Rp1 --inter-layer exhaustive --allocation-probability 1 --intra-param keep_probability=1
run Kk1 --intra-param loop_blocking=kapla --k-s 1
run Rg0.8 --inter-layer exhaustive --allocation-probability 0.8 --intra-param keep_probability=0.8 \
  --intra-param keep_draw=gap
run Rl0.8 --inter-layer exhaustive --allocation-probability 0.8 --intra-param keep_probability=0.8 \
  --intra-param keep_per=memory_level
run Ra0.8 --inter-layer exhaustive --allocation-probability 0.8 --allocation-keep-one \
  --intra-param keep_probability=0.8 --intra-param keep_per=memory_level \
  --intra-param keep_at_least_one=true
run Rf0.8 --inter-layer exhaustive --allocation-probability 0.7 --allocation-keep-one \
  --intra-param keep_probability=0.8 --intra-param keep_per=factorization \
  --intra-param partition_probability=0.7 --intra-param keep_at_least_one=true
/usr/bin/python3 "$report" "$work/runs" -o "$work/kapla_pipelined.md" >/dev/null
/usr/bin/python3 "$report" "$work/runs" --sweeps -o "$work/kapla_sweeps.md" >/dev/null
page=$(cat "$work/kapla_pipelined.md")
for needle in "## Fig. 9 and Table IV: inference, multi-node chip, batch 64" "| kapla_mlp | " \
    "(paper: 7.7%)" "(paper: 174x for inference" "(paper: 59% for inference)" \
    "experiments/kapla/pipelined.sh"; do
  grep -qF -- "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
page=$(cat "$work/kapla_sweeps.md")
for needle in "experiments/kapla/pipelined.sh" "## R by keep probability" "| 1 | 1 of 1 | +0.00% |" \
    "## Fig. 11: k_S in nn_dataflow's space" "K with k_S = 1, 4" \
    "## R drawing the gaps between kept blockings" "| 0.8 | kapla_mlp | " \
    "## KAPLA's released R, per network" "| 0.8 | 1 | kapla_mlp | " \
    "## R per memory level keeping one where a level keeps none" \
    "--allocation-probability 0.7 --allocation-keep-one"; do
  grep -qF -- "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
/usr/bin/python3 - "$work/runs" <<'PY'
import sys, h5py
e = {s: float(h5py.File(f"{sys.argv[1]}/inference_kapla_mlp_{s}.h5", "r").attrs["energy_pj"])
     for s in ("K", "B", "R", "Rp1", "Rg0.8", "Rl0.8", "Ra0.8")}
assert e["B"] <= e["K"] * (1 + 1e-12) and e["B"] <= e["R"] * (1 + 1e-12), e
assert e["B"] <= e["Rg0.8"] * (1 + 1e-12), e
assert e["Rp1"] == e["B"], e
# Keeping one where a level keeps none only adds to Rl's draws.
assert e["Ra0.8"] <= e["Rl0.8"] * (1 + 1e-12), e
# R's parameters stay with its numbers.
a = h5py.File(f"{sys.argv[1]}/inference_kapla_mlp_R.h5", "r").attrs
assert str(a["allocation_probability"]) == "0.8", dict(a)
assert "keep_probability=0.8" in str(a["intra_params"]).split(), dict(a)
assert str(a["costmodel_params"]) == "model=nn_dataflow", dict(a)
g = h5py.File(f"{sys.argv[1]}/inference_kapla_mlp_Rg0.8.h5", "r").attrs
assert "keep_draw=gap" in str(g["intra_params"]).split(), dict(g)
f = h5py.File(f"{sys.argv[1]}/inference_kapla_mlp_Rf0.8.h5", "r").attrs
assert int(f["allocation_keep_one"]) == 1 and str(f["allocation_probability"]) == "0.7", dict(f)
assert "keep_per=factorization" in str(f["intra_params"]).split(), dict(f)
assert "keep_at_least_one=true" in str(f["intra_params"]).split(), dict(f)
assert float(f["energy_pj"]) >= e["B"] * (1 - 1e-12), dict(f)
PY
# The index rows of R read those sections back: the gap draw's R / K and
# energy, and R per memory level's R / K, are readings the index parses.
/usr/bin/python3 - "$work" "$(dirname "$report")" <<'PY'
import sys
from importlib.machinery import SourceFileLoader
work, scripts = sys.argv[1:3]
sys.path.insert(0, scripts)
fair = SourceFileLoader("fair", f"{scripts}/kapla_fair_report.py").load_module()
index = SourceFileLoader("index", f"{scripts}/results_index").load_module()
pipe = fair.pipelined(work)
time_row, energy_row = fair.random_time_row(pipe), fair.random_energy_row(pipe)
t = dict(index.parse_readings(time_row[-1]))
e = dict(index.parse_readings(energy_row[-1]))
assert t["p=0.8 drawing the gaps between kept blockings"].endswith("x"), time_row[-1]
assert t["p=0.8 drawn per memory level, every seed"].endswith("x"), time_row[-1]
assert e["p=0.8 drawing the gaps between kept blockings"] == "+0.0%", energy_row[-1]
# KAPLA's released R is a reading, with the partition probability it ran with.
released = "p=0.8 per factorisation and order, partitions 0.7, one kept where none is " \
    "(KAPLA's released R)"
assert e[released].endswith("%") and e[released + ", seed 1"] == e[released], energy_row[-1]
assert "the authors' code's definition of R" in energy_row[6], energy_row[6]
assert "spend their time on what they evaluate" in time_row[6], time_row[6]
PY
mkdir -p "$work/bad" && cp "$work/runs/inference_kapla_mlp_K".{h5,time} "$work/bad/"
/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f.attrs['kind']='run'" \
  "$work/bad/inference_kapla_mlp_K.h5"
if err=$(/usr/bin/python3 "$report" "$work/bad" -o "$work/bad.md" 2>&1); then
  echo "a non-schedule file was accepted"; exit 1
fi
grep -qF "inference_kapla_mlp_K.h5: not a schedule result file" <<<"$err" ||
  { echo "unexpected error: $err"; exit 1; }
echo "report built from $work/runs"
