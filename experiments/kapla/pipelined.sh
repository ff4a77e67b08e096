#!/usr/bin/env bash
# KAPLA's K against an exhaustive B on whole networks with inter-layer
# pipelining, both in nn_dataflow's space and model (KAPLA §V-VI, Fig. 9,
# Table IV's B and K columns, Table V), each run written to an HDF5 result
# file (`mapex schedule -o`), then docs/results/kapla_pipelined.md and, for
# the Rp and Kk runs below, docs/results/kapla_sweeps.md
# (scripts/kapla_pipelined_report.py):
#   K  kapla's inter-layer solver (§IV-B: estimates, Pareto pruning, top-k_S
#      chains) with KAPLA's loop-blocking descent (§IV-C) in nn_dataflow's
#      per-layer space (`--intra-searcher nn_dataflow`, loop_blocking=kapla);
#   B  exhaustive at both levels: every valid allocation of every segment
#      (`--inter-layer exhaustive`, exact optimum chain) and nn_dataflow's
#      exhaustive loop blocking (loop_blocking=exhaustive);
#   R  KAPLA §V's random search (after Timeloop's): B's enumeration with
#      each candidate kept with probability 0.1 at each level (allocations
#      of multi-layer segments, partitions, loop blockings; segment slicing
#      is not sampled), the least §V finds valid schemes with.
# Both are scored by tensor_centric model=nn_dataflow, as KAPLA scores every
# scheme with nn_dataflow's simulator (§V), with KAPLA's training options
# (hybrid, batch and input-channel partitions). CPU time (user + system of
# the process) is the median of RUNS runs (default 3); a solver whose first
# run takes more than LONG CPU seconds (default 10) is run once, and the
# Table V runs, whose times no page reads, run once.
#   Knp, Bnp, Rnp  K, B and R with --no-filter-pinning, on the MLPs
#      (UNPINNED=0 skips them): nn_dataflow pins the filters of a segment
#      that holds the whole network (no_time_mux), which only the MLPs fit;
#   Rp<P> R with keep probability P at every level instead of 0.1 (R_SWEEP):
#      the paper states only a lower bound on R's probability ("no less
#      than 0.1"), so how much of B's space R visits is an assumption that
#      moves both its energy and its time;
#   Rg<P> R with keep probability P drawing, per pass, the gap to the next
#      kept loop blocking instead of one draw per blocking (R_GAP,
#      keep_draw=gap): each blocking is still kept with probability P, but
#      the ones between are passed over unvisited, so R's time follows what
#      it evaluates, as §V's "evaluates candidates ... with a given
#      probability" reads when enumeration costs nothing; a seed keeps
#      other blockings than R's;
#   Rf<P> KAPLA's released random searcher (tsinghua-ideal/kapla,
#      nn_dataflow/searcher/random_searcher.py) on B's space: each
#      factorisation of a pass's loops kept with probability P and, under a
#      kept one, each pair of loop orders with P (keep_per=factorization,
#      about P^2 of the blockings), partitions and multi-layer allocations
#      with R_FACT_PARTITION (its code: 0.04 for partitions and for a
#      segment's pipelining constraints), and one candidate kept, drawn
#      uniformly, where a level's draws keep none (keep_at_least_one,
#      --allocation-keep-one; its util.random_collect); its code has
#      P = 0.1 (R_FACT). Rf<P>s<SEED> with the other seeds of R_FACT_SEEDS;
#   Ra<P> R drawn per memory level (as Rl<P>) with one candidate kept,
#      drawn uniformly, where a level's draws keep none (partitions, a
#      pass's REGF tiles, the GBUF choices under a kept tile, the DRAM
#      orders under those, and a segment's allocations), the rule of
#      KAPLA's released code (util.random_collect) that makes §V's
#      "no less than 0.1 ... to guarantee finding valid schemes" hold: Rl
#      at 0.1 leaves some network unscheduled on most seeds. R_LEVEL_ONE
#      (default 0.1) and R_LEVEL_ONE_SEEDS (runs Ra<P>s<SEED>, default 2
#      to 10);
#   Kk<N> K with k_S = N instead of 4 (KS_SWEEP, Fig. 11).
# Environment: NETWORKS, SOLVERS (of K, B and R, those run on NETWORKS,
# default all three), RUNS, LONG, THREADS, MAX_SEGMENT (segments of at
# most this many layers, default 4), TABLE5 (1: GoogLeNet on Table V's
# chips), SEGMENT_SWEEP (networks also run with segments of up to 5 layers),
# R_SWEEP (R's other keep probabilities, default 0.01 0.03 0.3; 0.3 only on
# R_WIDE_NETWORKS, default alexnet_towers vgg16 kapla_mlp, as it takes
# minutes per network), KS_SWEEP (K's other k_S, default 1 2 8), R_LEVEL
# (keep probabilities of R drawn per memory level, runs Rl<P>, default 0.1)
# and R_LEVEL_SEEDS (its other seeds, runs Rl<P>s<SEED>, default 2 to 10:
# the paper's R is one run, so one draw of the seed); R
# per memory level walks only the tiles it keeps, so its time too follows
# what it evaluates; R_GAP (keep probabilities of Rg<P>, default 0.1);
# R_FACT (factorisation and loop-order probabilities of Rf<P>, default
# 0.1), R_FACT_PARTITION (its partition and allocation probability,
# default 0.04) and R_FACT_SEEDS (the other seeds of the first of R_FACT,
# runs Rf<P>s<SEED>, default 2 to 10).
# MLP_VARIANTS (default kapla_mlp_m kapla_mlp_s): PRIME's other two MLPs,
# run with K, B and R beside kapla_mlp (MLP-L), as §V does not say which of
# the three "an MLP [12]" is.
# --reuse keeps result files already written.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mapex="${MAPEX:-$root/build/bin/mapex}"
out="${OUT:-$root/results/kapla_pipelined}"
# The seven inference networks of KAPLA §V, each as KAPLA's nn_dataflow
# networks list it: AlexNet as towers instead of channel groups, MobileNet
# (v1, depthwise convolutions as KAPLA's DepthwiseConvolutionLayer) and the
# LSTM (GNMT's four cells, element-wise layers as nn_dataflow's
# EltwiseLayer) from experiments/kapla/workloads.
networks="${NETWORKS:-alexnet_towers kapla_mobilenet vgg16 googlenet resnet50 kapla_mlp kapla_gnmt}"
solvers="${SOLVERS:-K B R}"
runs="${RUNS:-3}"
long="${LONG:-10}"
threads="${THREADS:-2}"
max_segment="${MAX_SEGMENT:-4}"
table5="${TABLE5:-1}"
segment_sweep="${SEGMENT_SWEEP:-kapla_mlp vgg16}"
r_sweep="${R_SWEEP-0.01 0.03 0.3}"
r_wide_networks="${R_WIDE_NETWORKS-alexnet_towers vgg16 kapla_mlp}"
ks_sweep="${KS_SWEEP-1 2 8}"
r_level="${R_LEVEL-0.1}"
r_level_seeds="${R_LEVEL_SEEDS-2 3 4 5 6 7 8 9 10}"
r_gap="${R_GAP-0.1}"
r_fact="${R_FACT-0.1}"
r_fact_partition="${R_FACT_PARTITION:-0.04}"
r_fact_seeds="${R_FACT_SEEDS-2 3 4 5 6 7 8 9 10}"
mlp_variants="${MLP_VARIANTS-kapla_mlp_m kapla_mlp_s}"
unpinned="${UNPINNED-1}"
r_level_one="${R_LEVEL_ONE-0.1}"
r_level_one_seeds="${R_LEVEL_ONE_SEEDS-2 3 4 5 6 7 8 9 10}"
reuse=0
[[ "${1:-}" == "--reuse" ]] && reuse=1
[[ -x "$mapex" ]] || { echo "mapex is not built (build/bin/mapex)" >&2; exit 1; }
mkdir -p "$out/workloads" "$out/archs" "$root/docs/results"

# workload NAME BATCH: a copy of the network with the batch set (inference).
workload() {
  local name="$1" batch="$2" src="$root/experiments/workloads/$1.yaml" file
  [[ -f "$src" ]] || src="$root/experiments/kapla/workloads/$name.yaml"
  file="$out/workloads/${name}_b${batch}.yaml"
  sed -e '/^batch: /d' -e '/^training: /d' "$src" |
    sed "s/^network: .*/&\nbatch: $batch\ntraining: false/" >"$file"
  echo "$file"
}

# random_args P: R keeping each candidate with probability P at every
# sampled level (multi-layer allocations, partitions, loop blockings).
random_args() {
  echo "--inter-layer exhaustive --allocation-probability $1 \
--intra-param loop_blocking=exhaustive --intra-param keep_probability=$1"
}

# level_random_args P: R as random_args P, but drawing a loop blocking once
# per memory level (REGF tile, GBUF tile and order, DRAM order) instead of
# once per blocking (keep_per=memory_level).
level_random_args() {
  echo "$(random_args "$1") --intra-param keep_per=memory_level"
}

# level_one_random_args P: R as level_random_args P, keeping one candidate
# where a level's draws keep none (allocations included).
level_one_random_args() {
  echo "$(level_random_args "$1") --allocation-keep-one --intra-param keep_at_least_one=true"
}

# gap_random_args P: R as random_args P, but drawing the gap to the next
# kept loop blocking (keep_draw=gap) instead of one draw per blocking.
gap_random_args() {
  echo "$(random_args "$1") --intra-param keep_draw=gap"
}

# fact_random_args P: KAPLA's released random searcher on B's space:
# factorisations and, under a kept one, loop-order pairs kept with
# probability P, partitions and multi-layer allocations with
# R_FACT_PARTITION, one kept where a level's draws keep none.
fact_random_args() {
  echo "--inter-layer exhaustive --allocation-probability $r_fact_partition \
--allocation-keep-one --intra-param loop_blocking=exhaustive \
--intra-param keep_probability=$1 --intra-param keep_per=factorization \
--intra-param partition_probability=$r_fact_partition --intra-param keep_at_least_one=true"
}

solver_args() {
  case "$1" in
    *np) echo "$(solver_args "${1%np}") --no-filter-pinning" ;;
    K) echo "--intra-param loop_blocking=kapla" ;;
    Kk[0-9]*) echo "--intra-param loop_blocking=kapla --k-s ${1#Kk}" ;;
    B) echo "--inter-layer exhaustive --intra-param loop_blocking=exhaustive" ;;
    R) random_args 0.1 ;;
    Rp[0-9.]*) random_args "${1#Rp}" ;;
    Rl[0-9.]*s[0-9]*) level_random_args "$(sed 's/^Rl//; s/s.*//' <<<"$1")" && echo "--seed ${1##*s}" ;;
    Rl[0-9.]*) level_random_args "${1#Rl}" ;;
    Ra[0-9.]*s[0-9]*) level_one_random_args "$(sed 's/^Ra//; s/s.*//' <<<"$1")" && echo "--seed ${1##*s}" ;;
    Ra[0-9.]*) level_one_random_args "${1#Ra}" ;;
    Rg[0-9.]*) gap_random_args "${1#Rg}" ;;
    Rf[0-9.]*s[0-9]*) fact_random_args "$(sed 's/^Rf//; s/s.*//' <<<"$1")" && echo "--seed ${1##*s}" ;;
    Rf[0-9.]*) fact_random_args "${1#Rf}" ;;
    *) echo "unknown solver '$1' (K Kk<N> B R Rp<P> Rl<P> Rl<P>s<SEED> Ra<P> Ra<P>s<SEED> Rg<P> Rf<P> Rf<P>s<SEED>)" >&2
       exit 2 ;;
  esac
}

# run TAG WORKLOAD ARCH SOLVER SEGMENT [N]: N runs (default RUNS; one when
# long), the CPU and wall seconds of each in TAG_SOLVER.time, the last
# run's file kept.
run() {
  local tag="$1" wl="$2" arch="$3" solver="$4" seg="$5" n="${6:-$runs}" h5="$out/$1_$4.h5" r
  [[ $reuse == 1 && -s "$h5" ]] && return 0
  echo "$tag $solver" >&2
  : >"$out/${tag}_$solver.time"
  for ((r = 0; r < n; ++r)); do
    rm -f "$h5"
    # Exit 1 (no valid schedule) is a result: the file records why.
    # shellcheck disable=SC2046
    /usr/bin/time -a -o "$out/${tag}_$solver.time" -f "%U %S %e" \
      "$mapex" schedule --workload "$wl" --arch "$arch" -j "$threads" \
      --costmodel tensor_centric --costmodel-param model=nn_dataflow \
      --intra-searcher nn_dataflow --intra-param hybrid_partition=true \
      --intra-param batch_partition=true --intra-param ifmaps_partition=true \
      --max-segment-layers "$seg" $(solver_args "$solver") \
      -o "$h5" >"$out/${tag}_$solver.txt" || [[ $? == 1 ]]
    if awk -v l="$long" 'END { exit !($1 + $2 > l) }' "$out/${tag}_$solver.time"; then break; fi
  done
}

arch="$root/experiments/architectures/kapla_multinode.yaml"
for net in $networks; do
  wl="$(workload "$net" 64)"
  for solver in $solvers; do run "inference_${net}" "$wl" "$arch" "$solver" "$max_segment"; done
done

# Which MLP: PRIME's MLP-M and MLP-S with the solvers of Fig. 9.
for net in $mlp_variants; do
  wl="$(workload "$net" 64)"
  for solver in $solvers; do run "mlp_${net}" "$wl" "$arch" "$solver" "$max_segment"; done
done

# Filter pinning (nn_dataflow's no_time_mux, on by default): K, B and R on
# the three MLPs, the only networks of Fig. 9 one segment holds, without it
# (solvers Knp, Bnp, Rnp: --no-filter-pinning).
if [[ "$unpinned" == 1 ]]; then
  for net in kapla_mlp $mlp_variants; do
    tag="mlp_$net"
    [[ $net == kapla_mlp ]] && tag="inference_$net"
    for solver in K B R; do
      run "$tag" "$out/workloads/${net}_b64.yaml" "$arch" "${solver}np" "$max_segment"
    done
  done
fi

# R's keep probability (KAPLA §V gives only its lower bound, 0.1) and K's
# k_S (§VI-B, Fig. 11) on the same networks.
for net in $networks; do
  wl="$out/workloads/${net}_b64.yaml"
  for p in $r_sweep; do
    if awk -v p="$p" 'BEGIN { exit !(p > 0.1) }' && [[ " $r_wide_networks " != *" $net "* ]]; then
      continue
    fi
    run "inference_${net}" "$wl" "$arch" "Rp$p" "$max_segment"
  done
  for k in $ks_sweep; do run "inference_${net}" "$wl" "$arch" "Kk$k" "$max_segment"; done
done

# R drawing a loop blocking once per memory level instead of once per
# blocking (what "each level" of §V means is unstated), at R_LEVEL's
# probabilities, and at the first of them with the other seeds of
# R_LEVEL_SEEDS (one run each: only their energy is compared).
for net in $networks; do
  wl="$out/workloads/${net}_b64.yaml"
  for p in $r_level; do run "inference_${net}" "$wl" "$arch" "Rl$p" "$max_segment"; done
  for sd in $r_level_seeds; do
    run "inference_${net}" "$wl" "$arch" "Rl${r_level%% *}s$sd" "$max_segment" 1
  done
done

# R drawn per memory level keeping one candidate where a level keeps none,
# at R_LEVEL_ONE's probabilities and, at the first, the seeds of
# R_LEVEL_ONE_SEEDS (one run each).
for net in $networks; do
  wl="$out/workloads/${net}_b64.yaml"
  for p in $r_level_one; do run "inference_${net}" "$wl" "$arch" "Ra$p" "$max_segment"; done
  for sd in $r_level_one_seeds; do
    run "inference_${net}" "$wl" "$arch" "Ra${r_level_one%% *}s$sd" "$max_segment" 1
  done
done

# R drawing the gaps between kept loop blockings (the blockings between
# never visited) at R_GAP's probabilities.
for net in $networks; do
  wl="$out/workloads/${net}_b64.yaml"
  for p in $r_gap; do run "inference_${net}" "$wl" "$arch" "Rg$p" "$max_segment"; done
done

# KAPLA's released random searcher (factorisations and loop-order pairs
# drawn apart, partitions and allocations at R_FACT_PARTITION, one kept
# where a draw keeps none) at R_FACT's probabilities, and at the first of
# them with the other seeds of R_FACT_SEEDS (one run each).
for net in $networks; do
  wl="$out/workloads/${net}_b64.yaml"
  for p in $r_fact; do run "inference_${net}" "$wl" "$arch" "Rf$p" "$max_segment"; done
  for sd in $r_fact_seeds; do
    run "inference_${net}" "$wl" "$arch" "Rf${r_fact%% *}s$sd" "$max_segment" 1
  done
done

# Segments of up to 5 layers, the pipelining degree KAPLA's inference options
# give nn_dataflow (--layer-pipeline-max-degree 5; the paper does not state
# it): how the speed-up and the overhead move with the size of B's
# inter-layer space.
for net in $segment_sweep; do
  wl="$(workload "$net" 64)"
  for solver in K B; do run "seg5_${net}" "$wl" "$arch" "$solver" 5; done
done

# Table V: GoogLeNet inference on the multi-node chip with the node array,
# PE array, REGF and batch of each of its rows.
if [[ "$table5" == 1 ]]; then
  while read -r batch nodes pes regf; do
    a="$out/archs/kapla_n${nodes}_p${pes}_r${regf}.yaml"
    sed -e "s/^name: .*/name: kapla_n${nodes}x${nodes}_p${pes}x${pes}_r${regf}/" \
        -e "0,/size_bytes: 64/s//size_bytes: $regf/" \
        -e "s/shape: \[8, 8\]/shape: [$pes, $pes]/;t" \
        -e "s/shape: \[16, 16\]/shape: [$nodes, $nodes]/" "$arch" >"$a"
    wl="$(workload googlenet "$batch")"
    for solver in K B; do
      run "table5_b${batch}_n${nodes}_p${pes}_r${regf}" "$wl" "$a" "$solver" "$max_segment" 1
    done
  done <<'ROWS'
64 4 8 32
64 4 8 64
64 4 8 128
8 4 16 32
1 16 8 64
ROWS
fi

/usr/bin/python3 "$root/scripts/kapla_pipelined_report.py" "$out" --long "$long" \
  -o "$root/docs/results/kapla_pipelined.md"
exec /usr/bin/python3 "$root/scripts/kapla_pipelined_report.py" "$out" --sweeps \
  -o "$root/docs/results/kapla_sweeps.md"
