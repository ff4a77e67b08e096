#!/usr/bin/env bash
# Smoke test of scripts/flash_report (docs/results/flash.md): the page from
# committed result files of experiments/flash/ (tests/data/flash_results.tar.xz,
# from a full run: rebuild it with `scripts/flash_report` and
# `tar cJf tests/data/flash_results.tar.xz -C results --exclude='*.log' flash`
# when the experiments change) with --no-run, into a temporary folder. The
# report must exit 0 and write the page with its sections and its summary.
set -euo pipefail
fixture="$1" work="$2" report="$3"
rm -rf "$work" && mkdir -p "$work"
tar xJf "$fixture" -C "$work"
/usr/bin/python3 "$report" --no-run --results "$work/flash" \
  --out "$work/flash.md" >/dev/null
page=$(cat "$work/flash.md")
for needle in "# FLASH" "Table 5" "Fig. 7" "Fig. 8" "Fig. 9" "Fig. 10"; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
[[ -s "$work/flash_summary.csv" ]] || { echo "no flash_summary.csv beside the page"; exit 1; }
# The readings column: the NoC sweep's values on the row it moves.
summary="$work/flash_summary.csv"
head -1 "$summary" | tr -d '\r' | grep -qx "figure,quantity,paper,mapex,reproduced,reason_class,note,readings" \
  || { echo "summary header without readings"; head -1 "$summary"; exit 1; }
grep -q "^Fig. 8,\"NVDLA-style runtime vs the others, workload I Edge\",.*,NoC 32 GB/s=[0-9.]*% lower;" "$summary" \
  || { echo "no NoC readings on Fig. 8's workload I row"; cat "$summary"; exit 1; }
# --no-run runs nothing: a missing result file is named, with exit 2.
rm "$work/flash/fig7_random_sampling.h5"
set +e
err=$(/usr/bin/python3 "$report" --no-run --results "$work/flash" --out "$work/again.md" 2>&1 >/dev/null)
code=$?
set -e
[[ $code -eq 2 ]] || { echo "--no-run with a missing study exited $code, expected 2"; exit 1; }
grep -qF "no result file for fig7_random_sampling" <<<"$err" \
  || { echo "--no-run's error does not name the missing study: $err"; exit 1; }
[[ ! -e "$work/flash/fig7_random_sampling.h5" && ! -e "$work/again.md" ]] \
  || { echo "--no-run ran a study or wrote a page"; exit 1; }
echo "flash page built from $fixture"
