#!/usr/bin/env bash
# The K-vs-B page (docs/results/kapla_fair.md) and the KAPLA summary table
# from the driver's CSV: the driver on the smallest network and the
# reference runs, then the report; the page must carry each figure's table
# with the paper's number beside the mean, the reference runs, and the
# summary its columns and a row per figure covered.
set -euo pipefail
driver="$1" report="$2" work="$3"
rm -rf "$work" && mkdir -p "$work/docs"
"$driver" --runs 1 --networks kapla_mlp --scenarios inference,edge,reference -o "$work/k_vs_b.csv" \
  2>/dev/null
/usr/bin/python3 "$report" "$work/k_vs_b.csv" --runs 1 -o "$work/kapla_fair.md" \
  --summary "$work/summary.csv" --docs "$work/docs" >/dev/null
page=$(cat "$work/kapla_fair.md")
for needle in "## Fig. 9: inference, multi-node chip, batch 64, goal energy" \
    "## Fig. 10: inference, edge chip" "| kapla_mlp | 4 (0) | 0 |" "(paper: 7.7%)" \
    "(paper: 1.9% (worst 10%, ResNet))" "| mn_ex_fc_784_1000_b64 | 6.40481e+08 | 6.40481e+08 | 1.000000 |" \
    "| sm4_ex_pool_512_e14_r3_b4 | 2.19608e+08 | 2.19608e+08 | 1.000000 |"; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
summary=$(cat "$work/summary.csv")
for needle in "figure,quantity,paper,mapex,reproduced,reason_class,note,readings" \
    "Fig. 9,energy overhead of K over B (inference),7.7%," \
    "Fig. 9,scheduling speed-up K over B (inference),174x" "Fig. 10,energy overhead of K over B (edge),"; do
  grep -qF "$needle" <<<"$summary" || { echo "missing '$needle' in:"; echo "$summary"; exit 1; }
done
echo "page and summary built from $work/k_vs_b.csv"
