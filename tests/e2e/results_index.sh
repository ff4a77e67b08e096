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
rm "$work/kapla_summary.csv"
# The verdict on each row from the optional readings column (an older
# summary without it, flash's above, stays readable): 25% or 3 points;
# a reading within tolerance reaches it; readings on both sides bracket it;
# opposite direction words flip a reading's sign; each " / " number is
# judged on its own and the row takes the weakest; a label may hold "=".
cat >"$work/maestro_summary.csv" <<'CSV'
figure,quantity,paper,mapex,reproduced,reason_class,note,readings
A,ratio in,10x,12.4x,yes,none,,
B,ratio reached,10x,20x,partly,assumption,,small tile=7.6x; big tile=30x
C,ratio bracketed,10x,20x,partly,assumption,,small tile=7.4x; big tile=30x
D,ratio one side,10x,20x,partly,assumption,,small tile=12.6x; big tile=30x
E,share points,50.0%,46.9%,partly,assumption,,
F,share flipped,40% more,30% less,no,assumption,,x=38% less; y=45% more
G,two numbers,50% / 20%,10% / 19%,no,assumption,,a=40% / 0%; b=45% / 1%
H,weakest of two,50% / 20%,10% / 10%,no,assumption,,a=48% / 0%; b=60% / 30%
I,qualitative,not bound,1.2x,partly,assumption,,
J,bound met,differ < 11%,0.3%,yes,none,,
K,bound reached,differ < 11%,48%,partly,assumption,,a=13.5%; b=2000%
L,bound missed,differ < 11%,48%,no,assumption,,a=14.5%; b=30%
M,label with =,10x,20x,partly,assumption,,p=0.01 per level=8.2x; p=0.02 per tile=30x
CSV
/usr/bin/python3 "$script" --docs "$work"
row_verdict() {  # the verdict column (10th cell) of the row of figure $1
  awk -F' \\| ' -v f="| $1" '$1 == f { print $9 }' "$index"
}
check_verdict() {
  local got
  got=$(row_verdict "$1")
  [[ $got == "$2" ]] || { echo "row $1: expected verdict '$2', got '$got'"; exit 1; }
}
check_verdict A "within tolerance"
check_verdict B "reached by a run"
check_verdict C "bracketed by runs"
check_verdict D "not explained"
check_verdict E "not explained"
check_verdict F "bracketed by runs"
check_verdict G "not explained"
check_verdict H "bracketed by runs"
check_verdict I "no number to judge"
check_verdict J "within tolerance"
check_verdict K "reached by a run"
check_verdict L "not explained"
# A label may hold "=": the value follows the last one (8.2x reaches 10x;
# read from the first, 0.01 and 0.02 would not).
check_verdict M "reached by a run"
grep -q '^| B | ratio reached | 10x | 20x | +100% | partly | an assumption the paper leaves unstated | small tile=7.6x; big tile=30x | reached by a run |' "$index" \
  || { echo "readings not shown"; exit 1; }
grep -q '\*\*Verdicts\*\* .*: 3 within tolerance, 3 reached by a run, 3 bracketed by runs, 6 not explained, 1 no number to judge\.' "$index" \
  || { echo "verdict totals wrong"; exit 1; }
# A reading without a number is refused with its file and line.
printf 'figure,quantity,paper,mapex,reproduced,reason_class,note,readings\nX,q,1,2,no,assumption,,wide=none\n' \
  >"$work/maestro_summary.csv"
set +e
err=$(/usr/bin/python3 "$script" --docs "$work" 2>&1 >/dev/null)
status=$?
set -e
[[ $status == 2 ]] || { echo "expected exit 2 on a bad reading, got $status"; exit 1; }
grep -q "maestro_summary.csv:2: readings: expected label=value with a number, got 'wide=none'" <<<"$err" \
  || { echo "bad message: $err"; exit 1; }
rm "$work/maestro_summary.csv"
# scripts/results_all's measurements become the index's regeneration-time
# section: per step, the run, and the CPU total over 2 cores (600 + 300 s of
# CPU: at least 7.5 minutes).
cat >"$work/regeneration_times.csv" <<'CSV'
step,elapsed_s,cpu_s,date,load_start,load_end
marvel,700.4,600.0,2026-01-01T10:00Z,1.5,2.0
flash,400.0,300.0,2026-01-01T10:00Z,1.5,2.0
all (marvel+flash; 2 at a time),750.2,900.0,2026-01-01T10:00Z,1.5,2.0
CSV
/usr/bin/python3 "$script" --docs "$work"
grep -q '^| marvel | 700 | 600 | 2026-01-01T10:00Z | 1.5 to 2.0 |' "$index" || { echo "step row missing"; exit 1; }
grep -q '^| all (marvel+flash; 2 at a time) | 750 | 900 |' "$index" || { echo "run row missing"; exit 1; }
grep -q 'steps together: 900 s of CPU, so at least 7.5 minutes on 2 cores (target 30 minutes)' "$index" \
  || { echo "CPU total wrong"; exit 1; }
grep -q 'the longest step, marvel, 600 s of CPU (67%)' "$index" || { echo "longest step wrong"; exit 1; }
# The parts of a step with more than one, each with its own times; a step
# of one part has no rows there.
cat >"$work/regeneration_parts.csv" <<'CSV'
step,part,elapsed_s,cpu_s,date
marvel,scripts/a && b,300.0,250.0,2026-01-01T10:00Z
marvel,"SOLVERS=K scripts/b, c",400.4,350.0,2026-01-01T10:00Z
flash,scripts/flash_report,400.0,300.0,2026-01-01T10:00Z
CSV
/usr/bin/python3 "$script" --docs "$work"
grep -q '^| marvel | `SOLVERS=K scripts/b, c` | 400 | 350 | 2026-01-01T10:00Z |' "$index" \
  || { echo "part row missing"; exit 1; }
if grep -q '^| flash | `scripts/flash_report`' "$index"; then echo "single part listed"; exit 1; fi
printf 'step,part,elapsed_s,cpu_s,date\nmarvel,x,1,slow,d\n' >"$work/regeneration_parts.csv"
set +e
err=$(/usr/bin/python3 "$script" --docs "$work" 2>&1 >/dev/null)
status=$?
set -e
[[ $status == 2 ]] || { echo "expected exit 2 on a bad parts file, got $status"; exit 1; }
grep -q "regeneration_parts.csv:2: cpu_s must be a number, got 'slow'" <<<"$err" || { echo "bad message: $err"; exit 1; }
rm "$work/regeneration_parts.csv"
# scripts/results_all's other steps are named as not measured.
grep -q 'Not measured here yet: .*kapla' "$index" || { echo "unmeasured steps not named"; exit 1; }
# A malformed measurement is refused with its file and line.
printf 'step,elapsed_s,cpu_s,date,load_start,load_end\nmarvel,fast,1,d,1,1\n' >"$work/regeneration_times.csv"
set +e
err=$(/usr/bin/python3 "$script" --docs "$work" 2>&1 >/dev/null)
status=$?
set -e
[[ $status == 2 ]] || { echo "expected exit 2 on a bad times file, got $status"; exit 1; }
grep -q "regeneration_times.csv:2: elapsed_s must be a number, got 'fast'" <<<"$err" || { echo "bad message: $err"; exit 1; }
