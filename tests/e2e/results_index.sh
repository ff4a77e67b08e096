#!/usr/bin/env bash
# The results index from summary tables: rows, gaps and totals come from the
# CSVs; a malformed summary is refused with its file and line (exit 2).
set -euo pipefail
script=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cat >"$work/flash_summary.csv" <<'CSV'
figure,quantity,paper,mapex,reproduced,reason_class,note
Table 5,tiled runtime,0.13 ms,0.133 ms,yes,none,
Fig. 8,NVDLA runtime vs the others,81.0% lower,0.0% lower,no,assumption,"NoC sweep, see page"
§5.4,energy against NVDLA,73.6% more,24.2% less,no,model,
CSV
/usr/bin/python3 "$script" --docs "$work"
index="$work/README.md"
cat "$index"
grep -q '^| Table 5 | tiled runtime | 0.13 ms | 0.133 ms | +2% | yes |' "$index" \
  || { echo "Table 5 row missing or wrong gap"; exit 1; }
grep -q '^| Fig. 8 | NVDLA runtime vs the others | 81.0% lower | 0.0% lower | -81.0 pt | no | an assumption' "$index" \
  || { echo "Fig. 8 row missing or wrong gap"; exit 1; }
grep -q '^| §5.4 | energy against NVDLA | 73.6% more | 24.2% less | -97.8 pt | no | a model difference' "$index" \
  || { echo "opposite directions not signed"; exit 1; }
grep -q '3 headline numbers\*\*: 1 reproduced, 0 partly, 2 not; of the gaps, 1 from an unstated assumption, 1 from a model difference' "$index" \
  || { echo "totals wrong"; exit 1; }
grep -q 'papers without a summary yet: marvel, kapla, maestro' "$index" || { echo "missing list"; exit 1; }
# Bad input: an unknown reason class names the file and line.
printf 'figure,quantity,paper,mapex,reproduced,reason_class,note\nX,q,1,2,yes,luck,\n' \
  >"$work/kapla_summary.csv"
set +e
err=$(/usr/bin/python3 "$script" --docs "$work" 2>&1 >/dev/null)
status=$?
set -e
[[ $status == 2 ]] || { echo "expected exit 2, got $status"; exit 1; }
grep -q "kapla_summary.csv:2: reason_class must be one of" <<<"$err" || { echo "bad message: $err"; exit 1; }
