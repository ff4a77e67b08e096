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
grep -q "Not run (results/marvel_fig12.h5 missing)" "$doc" || { cat "$doc"; exit 1; }
echo "marvel results document written from $work/marvel_fig9.h5"
