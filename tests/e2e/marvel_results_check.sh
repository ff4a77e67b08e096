#!/bin/sh
# Runs a small Marvel experiment shaped like Fig. 9 and checks that
# scripts/marvel_results turns its HDF5 file into the results document:
# our speed-ups beside the paper's, and "not run" for the missing figures.
# Usage: marvel_results_check.sh MAPEX EXPERIMENT WORKDIR RESULTS_SCRIPT
set -eu
mapex=$1 experiment=$2 work=$3 script=$4
rm -rf "$work"
mkdir -p "$work"
"$mapex" run "$experiment" -o "$work/marvel_fig9.h5" -j 2 --quiet
/usr/bin/python3 "$script" --results "$work" --notes /nonexistent -o "$work/marvel.md"
doc="$work/marvel.md"
grep -q "over dMazeRunner-like | [0-9.]*x | 2.35x" "$doc" || { cat "$doc"; exit 1; }
grep -q "over Interstellar-like | [0-9.]*x | 1.15x" "$doc" || { cat "$doc"; exit 1; }
grep -q "| marvel_small | tiny | [0-9.]*x | [0-9.]*x | [0-9.]*x |" "$doc" || { cat "$doc"; exit 1; }
grep -q "Not run (marvel_fig12.h5 missing" "$doc" || { cat "$doc"; exit 1; }
# The settings each job searched, from its stop reason, and the summary CSV
# with one row per headline (here Fig. 9's two speed-ups).
grep -q "| marvel_fig9.h5 | [0-9]* | true |" "$doc" || { cat "$doc"; exit 1; }
csv="$work/marvel_summary.csv"
head -1 "$csv" | grep -qx "figure,quantity,paper,mapex,reproduced,reason_class,note,readings" || { cat "$csv"; exit 1; }
[ "$(grep -c '^Fig. 9,' "$csv")" = 2 ] || { cat "$csv"; exit 1; }
# The quality section from a small JSON of scripts/marvel_quality: the
# evaluation ratio is against the exhaustive search's evaluations (100x
# here, not met), the whole-space ratio beside it (1.0e+04x), and the
# ResNet50 time is for all layers together.
cat >"$work/quality.json" <<'EOF'
{"quality": [{"layer": "l1", "exhaustive_cycles": 100, "marvel_cycles": 104, "gap": 0.04,
  "exhaustive_complete": true, "exhaustive_evaluations": 100000, "marvel_evaluations": 1000,
  "space_size": "10000000"}], "geomean_gap": 0.04,
 "resnet50_p2_seconds": {"latency": 61.0}}
EOF
/usr/bin/python3 "$script" --results "$work" --quality "$work/quality.json" --notes /nonexistent \
  -o "$work/quality.md"
doc="$work/quality.md"
grep -q "| l1 | 100 | 104 | 4.00% | 100000 | yes | 1000 | 100x | 1.00e+07 | 1.0e+04x |" "$doc" || { cat "$doc"; exit 1; }
grep -q "within 5% of the exhaustive optimum: met" "$doc" || { cat "$doc"; exit 1; }
grep -q "fewer evaluations than the exhaustive search: not met (0 of 1 layers" "$doc" || { cat "$doc"; exit 1; }
grep -q "all 53 CONV2D layers of ResNet50 on P2 together" "$doc" || { cat "$doc"; exit 1; }
grep -q "latency: 61.0 s (not met)" "$doc" || { cat "$doc"; exit 1; }
# The off-chip-candidates run (fig9_offchip_candidates.yaml): here the same
# jobs stand in for it, so its geometric-mean speed-ups, per platform and
# as the summary's readings, must equal the headline's.
cp "$work/marvel_fig9.h5" "$work/marvel_fig9_offchip.h5"
/usr/bin/python3 "$script" --results "$work" --notes /nonexistent -o "$work/offchip.md" \
  --csv "$work/offchip_summary.csv"
doc="$work/offchip.md"
grep -q "^| tiny | [0-9]* candidates | [0-9.]*x | [0-9.]*x | [0-9.]*x | [0-9.]*x | [0-9.]*x |" "$doc" \
  || { cat "$doc"; exit 1; }
/usr/bin/python3 - "$work/offchip_summary.csv" <<'PY' || { cat "$work/offchip_summary.csv"; exit 1; }
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["figure"] == "Fig. 9"]
assert len(rows) == 2, rows
for r in rows:
    label, _, value = r["readings"].partition("=")
    assert "(TINY)" in label and value == r["mapex"], r
PY
echo "marvel results document written from $work/marvel_fig9.h5"
