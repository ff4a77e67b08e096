#!/usr/bin/env bash
# Renders every plot of scripts/plot_results.py from a small result file (a
# DSE sweep with traces) and checks each output is a PNG; then checks that
# a file without traces gives exit 2 for the convergence plot.
# usage: plots.sh MAPEX EXPERIMENT WORK_DIR PLOT_SCRIPT
set -euo pipefail
mapex="$1" experiment="$2" work="$3" script="$4"
mkdir -p "$work"
results="$work/plots.h5"
"$mapex" run "$experiment" -o "$results" -j 2 --quiet >/dev/null
for kind in layers pareto convergence dse; do
  png="$work/plot_$kind.png"
  rm -f "$png"
  /usr/bin/python3 "$script" "$kind" "$results" -o "$png"
  # The PNG signature: 89 50 4E 47 0D 0A 1A 0A, and a non-trivial size.
  signature=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
  if [ "$signature" != "89504e470d0a1a0a" ]; then
    echo "plot $kind: $png is not a PNG (signature $signature)" >&2
    exit 1
  fi
  size=$(stat -c %s "$png")
  if [ "$size" -lt 10000 ]; then
    echo "plot $kind: $png is only $size bytes" >&2
    exit 1
  fi
done
# Without traces the convergence plot refuses with one line and exit 2.
sed 's/^traces: true/traces: false/' "$experiment" > "$work/plots_notraces.yaml"
cp "$(dirname "$experiment")"/tiny_*.yaml "$work/"
"$mapex" run "$work/plots_notraces.yaml" -o "$work/plots_notraces.h5" --quiet >/dev/null
set +e
err=$(/usr/bin/python3 "$script" convergence "$work/plots_notraces.h5" -o "$work/none.png" 2>&1)
status=$?
set -e
if [ $status -ne 2 ] || [[ "$err" != *"no traces stored"* ]]; then
  echo "convergence without traces: expected exit 2 and 'no traces stored', got $status: $err" >&2
  exit 1
fi
# One chip: the design-space plot refuses (nothing to compare) with exit 2;
# the convergence plot draws a panel for each of the two layers.
"$mapex" run "$(dirname "$experiment")/e2e_experiment.yaml" -o "$work/one_chip.h5" --quiet >/dev/null
set +e
err=$(/usr/bin/python3 "$script" dse "$work/one_chip.h5" -o "$work/none.png" 2>&1)
status=$?
set -e
if [ $status -ne 2 ] || [[ "$err" != *"design point"* ]]; then
  echo "dse on one chip: expected exit 2 and 'design point', got $status: $err" >&2
  exit 1
fi
/usr/bin/python3 "$script" convergence "$work/one_chip.h5" -o "$work/two_layers.png"
/usr/bin/python3 - "$work/two_layers.png" <<'PY'
import sys
import matplotlib.image
height, width = matplotlib.image.imread(sys.argv[1]).shape[:2]
# Two panels side by side: wider than tall.
assert width > 1.5 * height, f"expected two panels side by side, got {width}x{height}"
PY
echo "all plots rendered"
