#!/usr/bin/env bash
# Runs the default experiment like ./scripts/run does and reads the result
# file back with h5py.
set -euo pipefail
mapex="$1" experiment="$2" output="$3" reader="$4"
rm -f "$output"
table=$("$mapex" run "$experiment" -o "$output" --quiet)
echo "$table" | grep -q '| job_id' || { echo "no results table printed:"; echo "$table"; exit 1; }
jobs=$(echo "$table" | grep -cE '^\| [0-9a-f]{16} ')
[ "$jobs" -gt 0 ] || { echo "no job rows in the table"; exit 1; }
/usr/bin/python3 "$reader" "$output" "$jobs"
