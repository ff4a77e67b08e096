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
# The readings of what an S2 access is: mdc's own count (words) on the page's
# table gives the same Fig. 9 drop as the page's S2 energy, the readings that
# Table 5's energies leave possible reach the Fig. 9 and §5.4 rows, and the
# ones 2x or more off on a Table 5 row do not.
grep -qF "### How S2 accesses are counted" <<<"$page" || { echo "no S2 counting section"; exit 1; }
drop=$(grep -o "the S2 energy drops [0-9.]*%" <<<"$page" | grep -o "[0-9.]*%")
words=$(grep "^| words read and written" <<<"$page" | awk -F' [|] ' '{print $3}')
[[ -n "$drop" && "$drop" == "$words" ]] \
  || { echo "words count's Fig. 9 drop '$words' is not the page's S2 energy drop '$drop'"; exit 1; }
fig9=$(grep "^Fig. 9,\"energy drop" "$summary")
grep -qE "S2 counted: C read and written per K step=[0-9.]+%" <<<"$fig9" \
  || { echo "no S2 counting reading on Fig. 9's energy row: $fig9"; exit 1; }
for arch in flash_edge flash_cloud; do
  row=$(grep "^§5.4,\"flexible vs fixed loop order, runtime / energy ($arch)\"" "$summary")
  grep -qE "S2 counted: per cluster reached=[0-9.]+% / [0-9.]+%" <<<"$row" \
    || { echo "no per-cluster reading on §5.4's $arch row: $row"; exit 1; }
done
per_pe=$(grep "^| a multicast word counted once per PE" <<<"$page" | awk -F' [|] ' '{print $2}')
if awk -v f="${per_pe%x}" 'BEGIN { exit !(f >= 2) }'; then
  ! grep -q "S2 counted: per PE reached=" "$summary" \
    || { echo "a counting 2x off on Table 5 (${per_pe}) gave readings"; exit 1; }
fi
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
