#!/usr/bin/env bash
# Runs a tiny KAPLA comparison (kapla, exhaustive, uniform random and the
# per-level random search R on the same space and the tensor_centric model)
# and builds the report page from its HDF5 file: the page must carry the
# per-layer rows, the overhead against exhaustive search, the paper's
# numbers beside ours (by chip: an edge chip gets Fig. 10's 1.9% and no
# speed-up), a column per R probability, and "none kept" for an R whose
# probability cut every mapping.
set -euo pipefail
mapex="$1" data="$2" work="$3" report="$4"
rm -rf "$work" && mkdir -p "$work"
sed 's/^name: .*/name: tiny_edge/' "$data/tiny_arch.yaml" >"$work/tiny_edge.yaml"
cat > "$work/exp.yaml" <<YAML
name: kapla_inference_tiny
seed: 1
objective: energy
workloads:
  - file: $data/tiny_net.yaml
    layers: [fc]
architectures: [$data/tiny_arch.yaml, $work/tiny_edge.yaml]
searchers:
  - kapla
  - exhaustive
  - plugin: random
    budget: {evaluations: 50}
  - plugin: random
    label: R
    sweep: {product: {params.level_probability: [1, 1e-9]}}
costmodels: [tensor_centric]
YAML
"$mapex" run "$work/exp.yaml" -o "$work/r.h5" --quiet >/dev/null
/usr/bin/python3 "$report" "$work/r.h5" -o "$work/kapla.md" >/dev/null
page=$(cat "$work/kapla.md")
for needle in "| tiny/fc |" "mean overhead vs exhaustive" \
    "| energy overhead vs exhaustive, inference (tiny) | 7.7% (Fig. 9) vs B | +0.00% vs S |" \
    "| energy overhead vs exhaustive, inference (tiny_edge) | 1.9% (Fig. 10) vs B |" \
    "| scheduling speed-up vs exhaustive, inference (tiny_edge) | none given vs B |" \
    "| random | R p=1 | R p=1e-9 | kapla vs S |" "| none kept |" "vs R p=1: mean" \
    "vs R p=1e-9: no layer to compare (1 layer with no mapping kept)" \
    "| R p=1 energy overhead vs exhaustive, inference (tiny) | - | mean +0.00%, worst +0.0% |"; do
  grep -qF "$needle" <<<"$page" || { echo "missing '$needle' in:"; echo "$page"; exit 1; }
done
echo "report built from $work/r.h5"
