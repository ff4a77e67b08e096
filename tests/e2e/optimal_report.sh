#!/usr/bin/env bash
# Smoke test of scripts/optimal_report.py (docs/results/optimal.md): a small
# run shaped like experiments/optimal/ (the optimal searcher beside another
# one, a short time budget, two FLASH Table 3 GEMMs on the Edge chip), then
# the page from its result file; the report must exit 0 and write the page
# with its sections.
set -euo pipefail
mapex="$1" root="$2" work="$3" report="$4"
rm -rf "$work" && mkdir -p "$work"
cat > "$work/exp.yaml" <<YAML
name: optimal_smoke
seed: 1
objective: energy
budget: {evaluations: 0, seconds: 0.2}
mapspace: {factors_only: true, max_parallel_dims: 7}
workloads:
  - file: $root/experiments/workloads/flash_table3.yaml
    layers: [III, IV]
architectures: [$root/experiments/architectures/flash_edge.yaml]
searchers:
  - plugin: optimal
  - plugin: random
    budget: {evaluations: 50}
costmodels: [mdc]
YAML
"$mapex" run "$work/exp.yaml" -o "$work/r.h5" --quiet >/dev/null
/usr/bin/python3 "$report" "$work/r.h5" -o "$work/optimal.md" >/dev/null
page=$(cat "$work/optimal.md")
for needle in "## Proofs" "## Distance from the optimum" "## Per layer" "| III |"; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
echo "optimal page built from $work/r.h5"
