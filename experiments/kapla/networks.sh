#!/usr/bin/env bash
# KAPLA §VI-A and §VI-B on whole networks with `mapex schedule`, each run
# written to an HDF5 result file (`-o`), then docs/results/kapla_networks.md
# from those files (scripts/kapla_networks_report.py): Fig. 7 (training,
# multi-node chip, batch 64), Fig. 9 (inference, multi-node chip, batch 64),
# Fig. 10 (inference, edge chip, batch 1) and Table IV (scheduling time) for
# up to three solvers on the same inter-layer space, intra-layer mapspace
# and tensor_centric model:
#   K  kapla: estimates, Pareto pruning, top-k_S chains (default k_S = 4);
#   X  exhaustive inter-layer search (every valid allocation of every
#      segment solved, exact optimum chain) with KAPLA's intra-layer
#      solver: what the inter-layer pruning and estimates lose. It shares
#      K's intra-layer solver, so it is no independent baseline, and takes
#      about ten times K's time: scripts/results_all does not run it (K
#      against nn_dataflow's exhaustive B, which shares nothing with K, is
#      experiments/kapla/pipelined.sh and scripts/kapla_fair, Table V too);
#   R  random: allocations kept with probability 0.1 (§V), each
#      intra-layer solve by uniform random search with 2,000 samples.
# Exhaustive intra-layer search (the paper's S) does not finish on these
# layers here (10^9-10^10 mappings each, many solves per layer); it is
# compared per layer in docs/results/kapla.md and on a small chain in the
# tests.
# Environment: NETWORKS (names in experiments/workloads/), SCENARIOS
# (training inference edge), SOLVERS (K X R), THREADS. Without --reuse the
# result files of earlier runs are removed first (a solver not run again
# would otherwise stay on the page); --reuse keeps them and adds the runs
# missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mapex="${MAPEX:-$root/build/bin/mapex}"
out="${OUT:-$root/results/kapla_networks}"
networks="${NETWORKS:-alexnet mobilenetv2 vgg16 googlenet resnet50 kapla_mlp kapla_lstm}"
scenarios="${SCENARIOS:-training inference edge}"
solvers="${SOLVERS:-K X R}"
threads="${THREADS:-2}"
reuse=0
[[ "${1:-}" == "--reuse" ]] && reuse=1
[[ -x "$mapex" ]] || { echo "mapex is not built (build/bin/mapex)" >&2; exit 1; }
mkdir -p "$out/workloads" "$root/docs/results"
[[ $reuse == 1 ]] || rm -f "$out"/*_[KXR].h5 "$out"/*_[KXR].txt

# workload NAME BATCH TRAINING: a copy of the network with the batch (and
# the training graph) set, as §VI-A evaluates them.
workload() {
  local name="$1" batch="$2" training="$3" file
  file="$out/workloads/${name}_b${batch}$([[ $training == true ]] && echo _training).yaml"
  sed -e '/^batch: /d' -e '/^training: /d' "$root/experiments/workloads/$name.yaml" |
    sed "s/^network: .*/&\nbatch: $batch\ntraining: $training/" >"$file"
  echo "$file"
}

solver_args() {
  case "$1" in
    K) ;;
    X) echo "--inter-layer exhaustive" ;;
    R) echo "--inter-layer exhaustive --allocation-probability 0.1 --intra-searcher random \
--intra-max-evaluations 2000" ;;
    *) echo "unknown solver '$1' (K X R)" >&2; exit 2 ;;
  esac
}

# run TAG WORKLOAD ARCH SOLVER
run() {
  local tag="$1" wl="$2" arch="$3" solver="$4" h5="$out/$1_$4.h5"
  [[ $reuse == 1 && -s "$h5" ]] && return 0
  echo "$tag $solver" >&2
  # shellcheck disable=SC2046
  # Exit 1 (no valid schedule) is a result: the file records why.
  "$mapex" schedule --workload "$wl" --arch "$arch" -j "$threads" $(solver_args "$solver") \
    -o "$h5" >"$out/$1_$4.txt" || [[ $? == 1 ]]
}

for solver in $solvers; do
  [[ "$solver" =~ ^[KXR]$ ]] || { echo "unknown solver '$solver' (K X R)" >&2; exit 2; }
done
for scenario in $scenarios; do
  case "$scenario" in
    training) batch=64 training=true arch="$root/experiments/architectures/kapla_multinode.yaml" ;;
    inference) batch=64 training=false arch="$root/experiments/architectures/kapla_multinode.yaml" ;;
    edge) batch=1 training=false arch="$root/experiments/architectures/kapla_edge.yaml" ;;
    *) echo "unknown scenario '$scenario' (training inference edge)" >&2; exit 2 ;;
  esac
  for net in $networks; do
    wl="$(workload "$net" "$batch" "$training")"
    for solver in $solvers; do run "${scenario}_${net}" "$wl" "$arch" "$solver"; done
  done
done

exec /usr/bin/python3 "$root/scripts/kapla_networks_report.py" "$out" -o "$root/docs/results/kapla_networks.md"
