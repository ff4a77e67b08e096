#!/usr/bin/env python3
"""docs/results/kapla_pipelined.md from the files of
experiments/kapla/pipelined.sh: KAPLA's K against an exhaustive B on whole
networks with inter-layer pipelining, both in nn_dataflow's space and
model (KAPLA §VI-A Fig. 9 and Table IV's B and K, Table V). Energies and
segment counts come from the HDF5 result files' attributes (`mapex
schedule -o`), CPU times from the `<tag>_<solver>.time` files beside them
(user, system and wall seconds of each run; the median CPU time is taken).

The tables on this page are read back by scripts/kapla_fair_report.py for
the KAPLA rows of the results index (kapla_summary.csv)."""
import argparse
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mapex_results import read_attributes  # noqa: E402

# KAPLA §V's seven inference networks, as KAPLA's nn_dataflow networks list
# them (experiments/kapla/pipelined.sh).
NETWORKS = ["alexnet_towers", "kapla_mobilenet", "vgg16", "googlenet", "resnet50", "kapla_mlp",
            "kapla_gnmt"]
# KAPLA Table V: batch, nodes, PEs, REGF (B) -> overhead over B (%).
TABLE5 = [(64, 4, 8, 32, 4.4), (64, 4, 8, 64, 2.7), (64, 4, 8, 128, 1.5), (8, 4, 16, 32, 8.3),
          (1, 16, 8, 64, 6.7)]


# The .time files of the sweeps page's runs (all but K, B and R).
SWEEP_TIME = r"_(Rp[\d.]+|R[la][\d.]+(?:s\d+)?|Rg[\d.]+|Rf[\d.]+(?:s\d+)?|Kk\d+)\.time$"


def load(directory):
    """{(tag, solver): attributes with 'cpu' (median CPU seconds), 'runs'}."""
    runs = {}
    for name in sorted(os.listdir(directory)):
        m = re.fullmatch(r"(.+)_([KBR](?:np)?|Rp[\d.]+|R[la][\d.]+(?:s\d+)?|Rg[\d.]+|Rf[\d.]+(?:s\d+)?|Kk\d+)\.h5",
                         name)
        if not m:
            continue
        path = os.path.join(directory, name)
        a = {k: str(v) for k, v in read_attributes(path).items()}
        if a.get("kind") != "schedule":
            sys.exit(f"{path}: not a schedule result file (attribute kind is not 'schedule')")
        cpu = []
        with open(path[:-3] + ".time") as f:
            for line in f:
                parts = line.split()
                # /usr/bin/time prints "Command exited with non-zero status 1"
                # before its figures when there is no valid schedule.
                if len(parts) == 3 and all(re.fullmatch(r"[\d.]+", p) for p in parts):
                    cpu.append(float(parts[0]) + float(parts[1]))
        if not cpu:
            sys.exit(f"{path[:-3]}.time: no timed run")
        # /usr/bin/time counts hundredths of a second: a run shorter than
        # that reads 0, taken as half of one so that ratios stay defined.
        a["cpu"] = max(statistics.median(cpu), 0.005)
        a["spread"] = max(cpu) / min(cpu) - 1 if min(cpu) > 0 else 0
        a["runs"] = len(cpu)
        runs[(m.group(1), m.group(2))] = a
    return runs


def energy(a):
    return float(a["energy_pj"]) if a and a.get("valid") == "1" else None


def pct(x):
    return f"{100 * x:+.2f}%"


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def network_rows(runs, prefix, nets):
    """Table rows and, per network, K's and R's energy over B's and B's and
    R's CPU time over K's."""
    rows = []
    figs = {"k_over": [], "speed": [], "r_over": [], "r_speed": []}
    for net in nets:
        k, b = runs.get((f"{prefix}_{net}", "K")), runs.get((f"{prefix}_{net}", "B"))
        r = runs.get((f"{prefix}_{net}", "R"))
        if not k or not b:
            continue
        ek, eb = energy(k), energy(b)
        if ek is None or eb is None:
            why = (k if ek is None else b).get("invalid_reason", "")
            rows.append(f"| {net} | - | - | - | no valid schedule: {why} |" + " |" * 8)
            continue
        over, speed = ek / eb - 1, b["cpu"] / k["cpu"]
        figs["k_over"].append(over)
        figs["speed"].append(speed)
        r_cells = "- | - | - | -"
        if r and energy(r) is not None:
            r_over, r_speed = energy(r) / eb - 1, r["cpu"] / k["cpu"]
            figs["r_over"].append(r_over)
            figs["r_speed"].append(r_speed)
            r_cells = (f"{energy(r):.5g} | {pct(r_over)} | {r['cpu']:.2f} ({r['runs']}) | "
                       f"{r_speed:.1f}x")
        elif r:
            r_cells = f"no valid schedule: {r.get('invalid_reason', '')} | - | - | -"
        lbl = "layer by layer" if k.get("layer_by_layer_chosen") == "1" else "k_S chain"
        rows.append(f"| {net} | {eb:.5g} | {ek:.5g} | {pct(over)} | {b['segments']} / "
                    f"{k['segments']} | {lbl} | {b['cpu']:.2f} ({b['runs']}) | "
                    f"{k['cpu']:.3f} ({k['runs']}) | {speed:.0f}x | {r_cells} |")
    return rows, figs


# PRIME's three MLPs (§V's "an MLP [12]" does not say which): the one Fig. 9
# runs and the tags of the other two's runs.
MLP_VARIANTS = [("MLP-L", "inference_kapla_mlp"), ("MLP-M", "mlp_kapla_mlp_m"),
                ("MLP-S", "mlp_kapla_mlp_s")]


def mlp_section(runs):
    """K and R over B on each of PRIME's MLPs, and the means over the seven
    networks of Fig. 9 with that MLP in MLP-L's place."""
    rows = []
    base_k = {n: energy(runs[(f"inference_{n}", "K")]) / energy(runs[(f"inference_{n}", "B")]) - 1
              for n in NETWORKS if n != "kapla_mlp"
              and all(energy(runs.get((f"inference_{n}", s))) is not None for s in "KB")}
    base_r = {n: energy(runs[(f"inference_{n}", "R")]) / energy(runs[(f"inference_{n}", "B")]) - 1
              for n in base_k if energy(runs.get((f"inference_{n}", "R"))) is not None}
    for name, tag in MLP_VARIANTS:
        k, b, r = (runs.get((tag, s)) for s in ("K", "B", "R"))
        if not (k and b) or energy(k) is None or energy(b) is None:
            continue
        k_over = energy(k) / energy(b) - 1
        r_over = energy(r) / energy(b) - 1 if r and energy(r) is not None else None
        ks = list(base_k.values()) + [k_over]
        rs = list(base_r.values()) + ([r_over] if r_over is not None else [])
        rows.append(f"| {name} | {energy(b):.5g} | {energy(k):.5g} | {pct(k_over)} | "
                    f"{pct(r_over) if r_over is not None else 'no valid schedule'} | "
                    f"{pct(statistics.mean(ks))} ({len(ks)}) | {pct(statistics.mean(rs))} "
                    f"({len(rs)}) |")
    if len(rows) < 2:
        return []
    return ["## Which MLP", "",
            "§V's \"an MLP [12]\" cites PRIME, which defines three: MLP-S (784-500-250-10), "
            "MLP-M (784-1000-500-250-10) and MLP-L (784-1500-1000-500-10), all three in KAPLA's "
            "nn_dataflow networks. Fig. 9 above runs MLP-L (`kapla_mlp`); the other two "
            "(`experiments/kapla/workloads/kapla_mlp_m.yaml`, `kapla_mlp_s.yaml`, runs "
            "`mlp_*`) with the same K, B and R, and the means over the networks of Fig. 9 with "
            "each in MLP-L's place (networks counted in brackets):", "",
            "| MLP | B energy (pJ) | K energy (pJ) | K over B | R over B | K over B, mean | "
            "R over B, mean |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"] + rows + [""]


# Runs with `--no-filter-pinning` (solvers Knp, Bnp, Rnp of pipelined.sh).
UNPINNED = {"K": "Knp", "B": "Bnp", "R": "Rnp"}


def pinning_section(runs):
    """K and R over B on each MLP with and without filter pinning, and the
    means over the networks of Fig. 9 with the MLP unpinned: the run that
    shows what pinning moves."""
    rows = []
    means = {}
    for name, tag in MLP_VARIANTS:
        pinned = {s: energy(runs.get((tag, s))) for s in "KBR"}
        plain = {s: energy(runs.get((tag, u))) for s, u in UNPINNED.items()}
        if None in (pinned["K"], pinned["B"], plain["K"], plain["B"]):
            continue
        cells = []
        for e in (pinned, plain):
            cells += [f"{e['B']:.5g}", pct(e["K"] / e["B"] - 1),
                      pct(e["R"] / e["B"] - 1) if e["R"] is not None else "no valid schedule"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
        if name == "MLP-L":
            means = plain
    if not rows:
        return []
    out = ["## Filter pinning", "",
           "nn_dataflow pins a layer's filters in its GBUFs when its pipeline segment holds the "
           "whole network and the blocking keeps them whole there (`no_time_mux`, "
           "searchers/kapla/README.md): the weights are loaded once, not per run. Of the "
           "networks of Fig. 9 only the MLPs fit in one segment of 4 layers. The same runs with "
           "`--no-filter-pinning` (runs `Knp`, `Bnp`, `Rnp`):", "",
           "| MLP | B energy (pJ), pinned | K over B | R over B | B energy (pJ), not pinned | "
           "K over B | R over B |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"] + rows
    others = [n for n in NETWORKS if n != "kapla_mlp"]
    if means and means["R"] is not None:
        ks, rs = [], []
        for n in others:
            e = {s: energy(runs.get((f"inference_{n}", s))) for s in "KBR"}
            if e["K"] is not None and e["B"] is not None:
                ks.append(e["K"] / e["B"] - 1)
                if e["R"] is not None:
                    rs.append(e["R"] / e["B"] - 1)
        ks.append(means["K"] / means["B"] - 1)
        rs.append(means["R"] / means["B"] - 1)
        out += ["", f"With MLP-L not pinned, the means over Fig. 9's networks are K "
                f"{pct(statistics.mean(ks))} ({len(ks)} networks) and R "
                f"{pct(statistics.mean(rs))} ({len(rs)}) over B: a scheduler that pins finds "
                "on the MLP a schedule whose weights never leave the chip, and R, sampling "
                "allocations, partitions and blockings, mostly misses it (§VI-A: \"the "
                "performances of ML-based and random-based methods are poor on MLP\")."]
    return out + [""]


def probability_of(solver):
    """R's keep probability from its solver name (R is 0.1)."""
    return 0.1 if solver == "R" else float(solver[2:])


def solver_of(runs, family, p):
    """The solver name of `family` ("Rp": one draw per candidate, R at 0.1;
    "Rl": one draw per memory level) at keep probability p."""
    if family == "Rp" and p == 0.1:
        return "R"
    return next(s for (t, s) in runs if s.startswith(family) and probability_of(s) == p)


def in_family(solver, family):
    return solver.startswith(family) or (family == "Rp" and solver == "R")


def scheduled_networks(runs, solver):
    """The inference networks on which `solver`, K and B all ran and K and B
    found a schedule: (network, R run, K run, B run)."""
    for net in NETWORKS:
        tag = f"inference_{net}"
        r, k, b = runs.get((tag, solver)), runs.get((tag, "K")), runs.get((tag, "B"))
        if r and k and b and energy(b) is not None and energy(k) is not None:
            yield net, r, k, b


def random_tables(runs, family):
    """Per network and per probability, R of `family` against B and K:
    (per-network rows, summary rows)."""
    probs = sorted({probability_of(s) for (t, s) in runs
                    if t.startswith("inference_") and in_family(s, family)})
    rows, summary = [], []
    for p in probs:
        solver = solver_of(runs, family, p)
        over, r_k, b_r, failed, ran = [], [], [], [], 0
        for net, r, k, b in scheduled_networks(runs, solver):
            ran += 1
            r_k.append(r["cpu"] / k["cpu"])
            if energy(r) is None:
                failed.append(net)
                rows.append(f"| {p:g} | {net} | no valid schedule | - | {r['cpu']:.2f} "
                            f"({r['runs']}) | {r['cpu'] / k['cpu']:.1f}x | - |")
                continue
            over.append(energy(r) / energy(b) - 1)
            b_r.append(b["cpu"] / r["cpu"])
            rows.append(f"| {p:g} | {net} | {energy(r):.5g} | {pct(over[-1])} | {r['cpu']:.2f} "
                        f"({r['runs']}) | {r_k[-1]:.1f}x | {b_r[-1]:.0f}x |")
        if not ran:
            continue
        if over:
            summary.append(f"| {p:g} | {len(over)} of {ran} | {pct(statistics.mean(over))} | "
                           f"{pct(max(over))} | {statistics.mean(r_k):.1f}x | "
                           f"{statistics.mean(b_r):.0f}x | {', '.join(failed) or '-'} |")
        else:
            summary.append(f"| {p:g} | 0 of {ran} | - | - | {statistics.mean(r_k):.1f}x | - | "
                           f"{', '.join(failed)} |")
    return rows, summary


NETWORK_HEADER = ["| p | network | R energy (pJ) | R over B | R CPU s (runs) | R / K CPU | "
                  "B / R CPU |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
SUMMARY_HEADER = ["| p | valid schedules | R over B, mean | worst | R / K CPU, mean | "
                  "B / R CPU, mean | no valid schedule |",
                  "| ---: | --- | ---: | ---: | ---: | ---: | --- |"]


def random_sweep(runs):
    """KAPLA §V gives R's probability only as a lower bound ("no less than
    0.1 at each level"): R at other keep probabilities, against B and K."""
    rows, summary = random_tables(runs, "Rp")
    if len(summary) < 2:
        return []
    out = ["## R's keep probability, per network", "",
           "KAPLA §V states only a lower bound for R's probability (\"no less than 0.1 at each "
           "level to guarantee finding valid schemes\"), and R's time and energy depend on how "
           "much of B's space it keeps. R with each candidate kept with probability p at every "
           "sampled level (runs `Rp<p>`; p = 0.1 is R above), same seed; a network whose "
           "sampled space leaves some layer without a valid scheme has no schedule:", ""]
    out += NETWORK_HEADER + rows
    out += ["", "## R by keep probability", "",
            "Means over the networks R schedules; R / K over every run, those that find no "
            "schedule too:", ""] + SUMMARY_HEADER + summary
    # Where the paper's R / K of 1.5x falls on this R's time scale: the mean
    # R / K of every run at each probability, valid or not.
    means = [(float(row.split("|")[1]), float(row.split("|")[5].strip().rstrip("x")))
             for row in summary if row.split("|")[5].strip() != "-"]
    below = [(p, m) for p, m in means if m <= 1.5]
    above = [(p, m) for p, m in means if m > 1.5]
    if below and above:
        out += ["", f"The paper's R / K of 1.5x lies between p = {below[-1][0]:g} (R / K "
                f"{below[-1][1]:.1f}x) and p = {above[0][0]:g} ({above[0][1]:.1f}x) here."]
    out += ["", "Paper, inference (§VI-A): R 59% over B, K 1.5x faster than R; with K 174x "
            "faster than B, R would run at about B / 116. Training (Table IV): B / R from 1.6x "
            "(LSTM) to 123x (GoogLeNet), R / K from 4.6x to 74x.", ""]
    return out


def seeded_runs(runs, family):
    """{(p, seed): solver} of the runs of `family` ("Rl": R drawn per memory
    level; "Rf": KAPLA's released R), `<family><p>` at the default seed 1
    and `<family><p>s<seed>`."""
    out = {}
    for (t, solver) in runs:
        m = re.fullmatch(family + r"([\d.]+)(?:s(\d+))?", solver)
        if t.startswith("inference_") and m:
            out[(float(m.group(1)), int(m.group(2) or 1))] = solver
    return out


def level_runs(runs):
    """{(p, seed): solver} of the runs of R drawn per memory level."""
    return seeded_runs(runs, "Rl")


def seeded_tables(runs, family):
    """Per network and seed, R of `family` against B and K: (per-network
    rows, per-seed summary rows, lines on the pooled figures), or None."""
    solvers = seeded_runs(runs, family)
    if not solvers:
        return None
    rows, summary, pooled, complete = [], [], {}, {}
    for (p, seed), solver in sorted(solvers.items()):
        over, r_k, failed, ran = [], [], [], 0
        for net, r, k, b in scheduled_networks(runs, solver):
            ran += 1
            r_k.append(r["cpu"] / k["cpu"])
            cells = f"| {p:g} | {seed} | {net} |"
            if energy(r) is None:
                failed.append(net)
                rows.append(f"{cells} no valid schedule | - | {r['cpu']:.2f} ({r['runs']}) | "
                            f"{r_k[-1]:.1f}x |")
                continue
            over.append(energy(r) / energy(b) - 1)
            pooled.setdefault(p, []).append(over[-1])
            rows.append(f"{cells} {energy(r):.5g} | {pct(over[-1])} | {r['cpu']:.2f} "
                        f"({r['runs']}) | {r_k[-1]:.1f}x |")
        if ran and over and not failed:
            complete.setdefault(p, []).append((statistics.mean(over), seed))
        if ran:
            summary.append(f"| {p:g} | {seed} | {len(over)} of {ran} | "
                           f"{pct(statistics.mean(over)) if over else '-'} | "
                           f"{pct(max(over)) if over else '-'} | {statistics.mean(r_k):.1f}x | "
                           f"{', '.join(failed) or '-'} |")
    pooled_lines = [f"Over every seed at p = {p:g}: mean {pct(statistics.mean(v))} over B, "
                    f"{len(v)} valid schedules (network and seed), from {pct(min(v))} to "
                    f"{pct(max(v))}." for p, v in sorted(pooled.items())]
    # The paper's R is one run: each seed that schedules every network is
    # one draw of the figure it reports.
    pooled_lines += [f"Seeds that schedule every network at p = {p:g} ({len(v)} of "
                     f"{sum(1 for q, _ in solvers if q == p)}): their means run from "
                     f"{pct(min(v)[0])} (seed {min(v)[1]}) to {pct(max(v)[0])} (seed {max(v)[1]}), "
                     f"median {pct(statistics.median(m for m, _ in v))}."
                     for p, v in sorted(complete.items())]
    invalid = sum(1 for row in rows if "no valid schedule" in row)
    if invalid:
        pooled_lines.append(f"{invalid} of {len(rows)} runs find no valid schedule (a layer whose "
                            "kept candidates leave it no scheme that fits): at this p the seed "
                            "decides whether R schedules a network at all (§V finds 0.1 the least "
                            "probability that still finds valid schemes); the means are over the "
                            "schedules found.")
    return rows, summary, pooled_lines


SEEDED_HEADER = ["| p | seed | network | R energy (pJ) | R over B | R CPU s (runs) | R / K CPU |",
                 "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
SEEDED_SUMMARY_HEADER = ["| p | seed | valid schedules | R over B, mean | worst | "
                         "R / K CPU, mean | no valid schedule |",
                         "| ---: | ---: | --- | ---: | ---: | ---: | --- |"]


def level_sweep(runs):
    """R drawing a loop blocking once per memory level (`keep_per=
    memory_level`) instead of once per blocking: what "each level" of §V
    means in nn_dataflow's blocking tree, which the paper leaves unstated."""
    tables = seeded_tables(runs, "Rl")
    if not tables:
        return []
    rows, summary, pooled_lines = tables
    return (["## R drawing once per memory level", "",
             "§V's R \"evaluates candidates at each level with a given probability\"; R above "
             "treats a whole loop blocking (its tiles at every memory level and its two loop "
             "orders) as one candidate. Taking the memory levels of the blocking as the levels "
             "instead (runs `Rl<p>`, `--intra-param keep_per=memory_level`; `Rl<p>s<seed>` with "
             "`--seed`, run once): the REGF tile is kept with probability p, the GBUF tile and "
             "its loop order under a kept REGF tile with p, the DRAM loop order under those "
             "with p, so about p^3 of B's blockings are scored and a tile left out drops every "
             "blocking under it; allocations and partitions as in R.", "",
             "Neither reading is the one of §V's source. Timeloop's random mapper [39] "
             "(NVlabs/timeloop, src/search/random.cpp) has no keep probability: it draws each "
             "mapping whole, a uniform index in each dimension of its mapspace (the "
             "factorisation of every loop over all levels, the loop permutations of all levels, "
             "the spatial split), and enumerates the bypass choices under it. KAPLA's released "
             "random searcher (tsinghua-ideal/kapla, nn_dataflow/searcher/random_searcher.py) "
             "keeps each layer-pipelining constraint of a segment and each partition with "
             "probability 0.04, each factorisation of the loops over the blocking levels with "
             "0.1 and, under a kept one, each tuple of loop orders with 0.1 (about p^2 of the "
             "blockings; in kapla_searcher.py, into which it was merged, the orders are all "
             "enumerated), and where a draw keeps none it keeps one "
             "at random (util.random_collect), so no level is left empty; the PE mapping is not "
             "sampled. R drawn that way is run below (KAPLA's released R). Per network:", ""]
            + SEEDED_HEADER + rows +
            ["", "## R per memory level, by keep probability and seed", "",
             "Means over the networks R schedules; R / K over every run:", ""] +
            SEEDED_SUMMARY_HEADER + summary + [""] + pooled_lines +
            ["", "Paper, inference (§VI-A): R 59% over B (mean over its seven networks).", ""])


def released_sweep(runs):
    """KAPLA's released random searcher (runs `Rf<p>`): factorisations and
    loop-order pairs drawn apart, partitions and allocations at 0.04, one
    candidate kept where a draw keeps none. The definition of R in the
    authors' code, not an assumption about §V's text."""
    tables = seeded_tables(runs, "Rf")
    if not tables:
        return []
    rows, summary, pooled_lines = tables
    # The partition and allocation probability the runs were made with.
    probs = sorted({a.get("allocation_probability", "?") for (t, s), a in runs.items()
                    if t.startswith("inference_") and re.fullmatch(r"Rf[\d.]+(?:s\d+)?", s)})
    return (["## KAPLA's released R, per network", "",
             "R as the authors' released code defines it: KAPLA's random searcher "
             "(tsinghua-ideal/kapla, nn_dataflow/searcher/random_searcher.py, in the commit that "
             "added it; later merged into kapla_searcher.py) keeps each pipelining constraint "
             "of a segment and each partition of a layer with probability 0.04, each "
             "factorisation of the loops over the blocking levels with 0.1 and, under a kept "
             "one, each tuple of loop orders with 0.1, and where a draw keeps none of its "
             "candidates it keeps one at random (util.random_collect). Here on B's space (runs "
             "`Rf<p>`, `Rf<p>s<seed>` with `--seed`, run once): "
             f"`--allocation-probability {' / '.join(probs)} --allocation-keep-one` (a "
             "segment's allocations stand for its pipelining constraints: they are what B "
             "enumerates per segment) and `--intra-param keep_per=factorization "
             f"partition_probability={' / '.join(probs)} keep_at_least_one=true "
             "keep_probability=<p>`: one draw per factorisation, one per loop-order pair "
             "under a kept one (about p^2 of B's blockings), one candidate kept, drawn "
             "uniformly from a hash of the seed and the level, where a level's draws keep "
             "none. Differences that remain: the orders drawn are the pairs nn_dataflow's "
             "skip_conv keeps (B's enumeration), where the released code draws every tuple "
             "of its own tensor-centric loops; each draw is a hash of the seed and the "
             "candidate's place, so a layer searched again on another band of the same "
             "shape keeps the same candidates, where the released code draws afresh at "
             "every call. Per network:", ""] + SEEDED_HEADER + rows +
            ["", "## KAPLA's released R, by seed", "",
             "Means over the networks R schedules; R / K over every run:", ""] +
            SEEDED_SUMMARY_HEADER + summary + [""] + pooled_lines +
            ["", "Paper, inference (§VI-A): R 59% over B (mean over its seven networks).", ""])


def level_one_sweep(runs):
    """R drawn per memory level with one candidate kept where a level's
    draws keep none (runs `Ra<p>`): the released code's rule, under which
    §V's claim that p = 0.1 finds valid schemes holds, on the per-memory-
    level reading of "each level"."""
    tables = seeded_tables(runs, "Ra")
    if not tables:
        return []
    rows, summary, pooled_lines = tables
    # Networks on which R per memory level (without the rule) ran at some
    # seed but scheduled at none.
    scheduled = {}
    for solver in seeded_runs(runs, "Rl").values():
        for net, r, _, _ in scheduled_networks(runs, solver):
            scheduled.setdefault(net, []).append(energy(r) is not None)
    unscheduled = [n for n in NETWORKS if n in scheduled and not any(scheduled[n])]
    why = (f"R per memory level above schedules {', '.join(unscheduled)} on none of its seeds: "
           "its draws leave some layer without a scheme that fits (an element-wise or "
           "depthwise layer has few partitions and small loop spaces, so p^3 of them is often "
           "nothing), while §V finds valid schemes at p = 0.1 on every network. "
           if unscheduled else "")
    return (["## R per memory level keeping one where a level keeps none", "",
             why + "KAPLA's released code keeps one candidate, drawn uniformly, where a level's "
             "draws keep none (util.random_collect). R per memory level with that rule (runs "
             "`Ra<p>`, `--allocation-keep-one --intra-param keep_at_least_one=true` on top of "
             "`Rl<p>`'s options; `Ra<p>s<seed>` with `--seed`, run once): a segment's "
             "allocations, a layer's partitions, a pass's REGF tiles, the GBUF tiles and "
             "orders under a kept tile and the DRAM orders under those each keep one where "
             "their draws keep none. It only adds candidates to `Rl<p>`'s draws. Per network:",
             ""] + SEEDED_HEADER + rows +
            ["", "## R per memory level keeping one, by seed", "",
             "Means over the networks R schedules; R / K over every run:", ""] +
            SEEDED_SUMMARY_HEADER + summary + [""] + pooled_lines +
            ["", "Paper, inference (§VI-A): R 59% over B (mean over its seven networks).", ""])


def gap_sweep(runs):
    """R drawing the gap to the next kept loop blocking (`keep_draw=gap`):
    each blocking still kept with probability p, the ones between passed
    over unvisited, so that R's time follows what it evaluates."""
    solvers = sorted({s for (t, s) in runs if t.startswith("inference_")
                      and re.fullmatch(r"Rg[\d.]+", s)}, key=lambda s: float(s[2:]))
    if not solvers:
        return []
    rows, summary = [], []
    for solver in solvers:
        p = float(solver[2:])
        over, r_k, r_r, failed, ran = [], [], [], [], 0
        for net, r, k, b in scheduled_networks(runs, solver):
            ran += 1
            r_k.append(r["cpu"] / k["cpu"])
            # R with one draw per blocking at the same p, when it ran.
            each = next((a for (t, s), a in runs.items() if t == f"inference_{net}"
                         and in_family(s, "Rp") and probability_of(s) == p), None)
            if each:
                r_r.append(each["cpu"] / r["cpu"])
            cells = f"| {p:g} | {net} |"
            speedup = f"{r_r[-1]:.1f}x" if each else "-"
            if energy(r) is None:
                failed.append(net)
                rows.append(f"{cells} no valid schedule | - | {r['cpu']:.2f} ({r['runs']}) | "
                            f"{r_k[-1]:.1f}x | {speedup} |")
                continue
            over.append(energy(r) / energy(b) - 1)
            rows.append(f"{cells} {energy(r):.5g} | {pct(over[-1])} | {r['cpu']:.2f} "
                        f"({r['runs']}) | {r_k[-1]:.1f}x | {speedup} |")
        if ran:
            each_over_this = f"{statistics.mean(r_r):.1f}x" if r_r else "-"
            summary.append(f"| {p:g} | {len(over)} of {ran} | "
                           f"{pct(statistics.mean(over)) if over else '-'} | "
                           f"{pct(max(over)) if over else '-'} | {statistics.mean(r_k):.1f}x | "
                           f"{each_over_this} | {', '.join(failed) or '-'} |")
    return (["## R drawing the gaps between kept blockings", "",
             "R above decides each loop blocking by a hash of its place, so it visits every "
             "blocking of B's enumeration in the partitions it keeps to score about p of them; "
             "on alexnet_towers at p = 0.1 (callgrind, one thread) visiting and drawing take "
             "79% of R's instructions and scoring 6.7%. "
             "§V's R \"evaluates candidates ... with a given probability\": with runs `Rg<p>` "
             "(`--intra-param keep_draw=gap`) R draws, per processing pass, the gap to the next "
             "kept blocking (geometric with p, from a hash of the seed, the pass and the last "
             "kept place) and passes over the blockings between unvisited, so its time follows "
             "what it evaluates. Each blocking is still kept with probability p, independently, "
             "but a seed keeps other blockings than R's; allocations and partitions as in R. "
             "(R per memory level above walks only the tiles it keeps, the same blockings as "
             "before, so its time too follows what it evaluates.)", "",
             "| p | network | R energy (pJ) | R over B | R CPU s (runs) | R / K CPU | "
             "R (one draw each) / this R CPU |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"] + rows +
            ["", "Means over the networks R schedules; R / K over every run:", "",
             "| p | valid schedules | R over B, mean | worst | R / K CPU, mean | "
             "R (one draw each) / this R CPU, mean | no valid schedule |",
             "| ---: | --- | ---: | ---: | ---: | ---: | --- |"] + summary +
            ["", "Paper, inference (§VI-A): R 59% over B, K 1.5x faster than R.", ""])


def ks_sweep(runs):
    """Fig. 11: K with k_S = 1, 2, 4 (K above) and 8, in the space and model
    of Fig. 9."""
    ks = sorted({int(s[2:]) for (t, s) in runs if s.startswith("Kk")} | {4})
    if len(ks) < 2:
        return []
    solver = lambda k: "K" if k == 4 else f"Kk{k}"
    top = ks[-1]
    out = ["## Fig. 11: k_S in nn_dataflow's space", "",
           f"K with k_S = {', '.join(map(str, ks))} (runs `Kk<k_S>`, k_S = 4 is K above) on the "
           f"networks of Fig. 9: energy relative to k_S = {top}, CPU seconds (median).", "",
           "| network | " + " | ".join(f"k_S={k} energy | k_S={k} CPU s" for k in ks) +
           f" | k_S={top} over B |", "| --- |" + " ---: | ---: |" * len(ks) + " ---: |"]
    sums = {k: 0.0 for k in ks}
    worst = []
    for net in NETWORKS:
        tag = f"inference_{net}"
        got = {k: runs.get((tag, solver(k))) for k in ks}
        b = runs.get((tag, "B"))
        if any(a is None or energy(a) is None for a in got.values()):
            continue
        ref = energy(got[top])
        for k in ks:
            sums[k] += got[k]["cpu"]
        worst.append(energy(got[ks[0]]) / ref - 1)
        cells = " | ".join(f"{energy(got[k]) / ref:.4f} | {got[k]['cpu']:.3f}" for k in ks)
        vs_b = pct(ref / energy(b) - 1) if b and energy(b) is not None else "-"
        out.append(f"| {net} | {cells} | {vs_b} |")
    if worst:
        out += ["", f"Summed over {len(worst)} networks: k_S = {top} takes "
                f"{sums[top] / max(sums[ks[0]], 1e-9):.2f}x the CPU time of k_S = {ks[0]}; "
                f"k_S = {ks[0]}'s energy is at most {pct(max(worst))} over k_S = {top}'s "
                f"(mean {pct(statistics.mean(worst))}).", ""]
    return out


HEADER = ["| network | B energy (pJ) | K energy (pJ) | K over B | segments B / K | K's schedule | "
          "B CPU s (runs) | K CPU s (runs) | B / K CPU | R energy (pJ) | R over B | "
          "R CPU s (runs) | R / K CPU |",
          "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dir", help="directory of <tag>_<K|B>.h5 files and their .time files")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--long", type=float, default=10,
                   help="pipelined.sh's LONG: CPU seconds above which a solver runs once")
    p.add_argument("--sweeps", action="store_true",
                   help="write the sweeps page (R's keep probability, K's k_S) instead")
    args = p.parse_args()
    runs = load(args.dir)
    if not runs:
        sys.exit(f"{args.dir}: no <tag>_<K|B>.h5 result files")
    if args.sweeps:
        write(args.output, sweeps_page(args.dir, runs))
        return
    cpu, wall = run_minutes(args.dir, lambda name: not re.search(SWEEP_TIME, name))

    lines = ["# KAPLA against exhaustive search on whole networks, with inter-layer pipelining",
             "",
             "Generated by `experiments/kapla/pipelined.sh` (`mapex schedule -o`, one HDF5 file "
             "per run, CPU times beside them) with `scripts/kapla_pipelined_report.py`; do not "
             "edit by hand. Regenerate with", "",
             "```", "ninja -C build mapex kapla nn_dataflow tensor_centric && "
             "experiments/kapla/pipelined.sh", "```", "",
             f"(the runs took {cpu:.0f} CPU minutes, {wall:.0f} min of wall time, on "
             "this 2-core machine shared with other builds).", "",
             "KAPLA scores every scheme, its own and the baselines', with nn_dataflow's "
             "simulator (§V). Here both solvers schedule whole inference networks on KAPLA's "
             "multi-node chip (16x16 nodes of 8x8 PEs, batch 64), segments of up to 4 layers "
             "pipelined over bands of node rows (mapex's inter-layer space, "
             "searchers/kapla/README.md), each layer in nn_dataflow's per-layer space with "
             "KAPLA's training options (hybrid, batch and input-channel partitions, GBUF "
             "sharing, no bypass; the `nn_dataflow` searcher), scored by tensor_centric "
             "`model=nn_dataflow`:", "",
             "- **B**: exhaustive at both levels: every allocation of every segment that passes "
             "validity pruning, solved in detail, and the exact optimum chain "
             "(`--inter-layer exhaustive`); each solve chooses its loop blocking exhaustively, "
             "as nn_dataflow does (`loop_blocking=exhaustive`);",
             "- **K**: KAPLA: lower-bound estimates, Pareto pruning and the top k_S = 4 chains "
             "(§IV-B, plus mapex's layer-by-layer chain), each solve by KAPLA's bottom-up cost "
             "descending over the same blockings (§IV-C, `loop_blocking=kapla`);",
             "- **R**: KAPLA §V's random search (after Timeloop's): B's enumeration with each "
             "candidate kept with probability 0.1 at each level: allocations of multi-layer "
             "segments (`--allocation-probability 0.1`; segment slicing is not sampled), "
             "partitions and loop blockings (`keep_probability=0.1`), seeded (`--seed`, default 1, "
             "reaches both levels); R at other probabilities and K at other k_S are on "
             "[kapla_sweeps.md](kapla_sweeps.md).", "",
             "They share the inter-layer space, the partition enumeration and the model, not a "
             "search decision. The seven networks of §V, each as KAPLA's nn_dataflow "
             "networks list it: AlexNet with its channel groups as two towers of layers "
             "(`experiments/kapla/workloads/alexnet_towers.yaml`); MobileNet v1 "
             "(`kapla_mobilenet.yaml`), its depthwise convolutions scored as KAPLA's "
             "DepthwiseConvolutionLayer; the LSTM as GNMT's four cells of 1000 "
             "(`kapla_gnmt.yaml`, nn_dataflow's lstm_gnmt), its element-wise layers as "
             "nn_dataflow's EltwiseLayer; VGG16, GoogLeNet, ResNet-50 and the MLP "
             "(`experiments/workloads`). The "
             "edge chip (Fig. 10) has one node, so every segment is one layer and the "
             "whole-network schedule is the per-layer one of [kapla_fair.md](kapla_fair.md). "
             "The training graphs (Figs. 7-8) have gradient layers the model takes only "
             "rewritten; they are compared per layer in [kapla_fair.md](kapla_fair.md).", "",
             "CPU time is user plus system time of the whole `mapex schedule` process (on "
             "`THREADS` threads, one or two), the median of the runs counted in brackets; a "
             f"solver whose first run takes more than {args.long:g} CPU seconds runs once, and "
             "the Table V runs, whose times no page reads, run once" + spread_text(runs) + ".",
             ""]

    lines += ["## Fig. 9 and Table IV: inference, multi-node chip, batch 64", ""] + HEADER
    rows, figs = network_rows(runs, "inference", NETWORKS)
    lines += rows + [""]
    if figs["k_over"]:
        overs, speeds = figs["k_over"], figs["speed"]
        lines.append(f"Mean over {len(overs)} networks: K {pct(statistics.mean(overs))} over B "
                     f"(paper: 7.7%), worst {pct(max(overs))}; B / K CPU time: mean "
                     f"{statistics.mean(speeds):.0f}x, geometric mean {geomean(speeds):.0f}x "
                     f"(paper: 174x for inference, 518x for training, Table IV).")
        fallback = [r.split(" | ")[0].lstrip("| ") for r in rows if "| layer by layer |" in r]
        if fallback:
            lines.append(f"On {', '.join(fallback)} K keeps its layer-by-layer chain (mapex's "
                         "addition, searchers/kapla/README.md): its k_S pipelined chains score "
                         "worse in detail than their estimates, or some layer of them has no "
                         "scheme on its band whose nn_dataflow blocking the canonical mapping "
                         "can carry (`--no-layer-by-layer` shows which), while B, solving "
                         "every allocation, finds the pipelined segments that pay.")
        if figs["r_over"]:
            lines.append(f"R: mean {pct(statistics.mean(figs['r_over']))} over B (paper: 59% "
                         f"for inference), R / K CPU time mean "
                         f"{statistics.mean(figs['r_speed']):.1f}x (paper: K is 1.5x faster "
                         "than R for inference, §VI-A).")
        lines += released_line(runs)
        lines.append("")
    lines += ["The paper's S (exhaustive search on KAPLA's own directives) is B here: K's "
              "blockings and the inter-layer schemes are those of B's space, so exhaustive "
              "search over what K searches is B. Exhaustive search over mapex's own mapspace "
              "(the `kapla` searcher's space) finishes only on small layers "
              "([kapla.md](kapla.md)).", ""]
    lines += mlp_section(runs)
    lines += pinning_section(runs)

    sweep = sorted({t[len("seg5_"):] for (t, _) in runs if t.startswith("seg5_")})
    if sweep:
        lines += ["## How far B's inter-layer search reaches", "",
                  "The paper does not state how many layers B (nn_dataflow's inter-layer "
                  "search) pipelines at most; KAPLA's inference options give nn_dataflow "
                  "`--layer-pipeline-max-degree 5` (refdata/nn_dataflow/mlp_m_b64_inference.cmd). "
                  "The same networks with segments of up to 5 layers for both solvers (runs "
                  "`seg5_*`):", "",
                  "| network | longest segment | K over B | B CPU s | K CPU s | B / K CPU |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for net in sweep:
            for tag, seg in ((f"inference_{net}", 4), (f"seg5_{net}", 5)):
                k, b = runs.get((tag, "K")), runs.get((tag, "B"))
                if not k or not b or energy(k) is None or energy(b) is None:
                    continue
                lines.append(f"| {net} | {seg} | {pct(energy(k) / energy(b) - 1)} | "
                             f"{b['cpu']:.2f} | {k['cpu']:.3f} | {b['cpu'] / k['cpu']:.0f}x |")
        lines.append("")

    t5 = []
    for batch, nodes, pes, regf, paper in TABLE5:
        tag = f"table5_b{batch}_n{nodes}_p{pes}_r{regf}"
        k, b = runs.get((tag, "K")), runs.get((tag, "B"))
        if not k or not b:
            continue
        ek, eb = energy(k), energy(b)
        cells = f"| {batch} | {nodes} x {nodes} | {pes} x {pes} | 32 KB | {regf} B |"
        if ek is None or eb is None:
            why = (k if ek is None else b).get("invalid_reason", "")
            t5.append(f"{cells} - | - | no valid schedule: {why} | {paper}% |")
        else:
            t5.append(f"{cells} {eb:.4g} | {ek:.4g} | {pct(ek / eb - 1)} | {paper}% |")
    if t5:
        lines += ["## Table V: GoogLeNet inference on other hardware", "",
                  "The multi-node chip with the node array, PE array, REGF and batch of each row "
                  "of KAPLA's Table V; K against B as above.", "",
                  "| batch | nodes | PEs | GBUF | REGF | B energy (pJ) | K energy (pJ) | K over B | "
                  "paper |", "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"] + t5
        lines.append("")

    write(args.output, lines)


def released_line(runs):
    """One line on KAPLA's released R (runs `Rf<p>`, kapla_sweeps.md): its
    mean over B per seed that schedules every network."""
    solvers = seeded_runs(runs, "Rf")
    if not solvers:
        return []
    p = min(q for q, _ in solvers)
    means = {}
    for (q, seed), solver in sorted(solvers.items()):
        got = list(scheduled_networks(runs, solver))
        if q != p or not got or any(energy(r) is None for _, r, _, _ in got):
            continue
        means[seed] = statistics.mean(energy(r) / energy(b) - 1 for _, r, _, b in got)
    if not means:
        return [f"KAPLA's released R (runs `Rf{p:g}`, [kapla_sweeps.md](kapla_sweeps.md)) "
                "schedules every network at no seed."]
    lo, hi = min(means, key=means.get), max(means, key=means.get)
    first = f"{pct(means[1])} at seed 1, " if 1 in means else ""
    part = " / ".join(sorted({a.get("allocation_probability", "?") for (t, s), a in runs.items()
                              if s in solvers.values()}))
    return [f"KAPLA's released R, the authors' code's definition (runs `Rf{p:g}` and "
            f"`Rf{p:g}s<seed>`, [kapla_sweeps.md](kapla_sweeps.md): factorisations and loop "
            f"orders kept with {p:g}, partitions and allocations with {part}, one kept where a "
            f"draw keeps none): {first}over the {len(means)} seeds that schedule every network "
            f"from {pct(means[lo])} (seed {lo}) to {pct(means[hi])} (seed {hi}), mean "
            f"{pct(statistics.mean(means.values()))} over B (paper: 59%)."]


def spread_text(runs):
    """The largest spread (max / min - 1) of the CPU times of the solvers
    timed more than once, with its run: what a single run may be off by."""
    worst = max(((a["spread"], t, s) for (t, s), a in runs.items() if a["runs"] > 1 and
                 a["cpu"] > 1), default=None)
    if not worst:
        return ""
    return (f"; of the solvers timed more than once and above a CPU second, the widest "
            f"spread of their runs is {100 * worst[0]:.0f}% ({worst[1]} {worst[2]})")


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print(path)


def run_minutes(directory, counted):
    """CPU and wall minutes of the timed runs whose .time file `counted`
    accepts."""
    timed = [[float(x) for x in line.split()] for name in os.listdir(directory)
             if name.endswith(".time") and counted(name)
             for line in open(os.path.join(directory, name))
             if re.fullmatch(r"[\d.]+ [\d.]+ [\d.]+", line.strip())]
    return sum(t[0] + t[1] for t in timed) / 60, sum(t[2] for t in timed) / 60


def sweeps_page(directory, runs):
    """KAPLA §V's R at other keep probabilities and §VI-B's k_S (Fig. 11),
    against the B and K of kapla_pipelined.md."""
    cpu, wall = run_minutes(directory, lambda name: re.search(SWEEP_TIME, name))
    return (["# KAPLA's R and k_S: how the unstated parameters move Fig. 9 and Fig. 11", "",
             "Generated by `experiments/kapla/pipelined.sh` (runs `Rp<p>`, `Rl<p>`, `Ra<p>`, "
             "`Rf<p>`, `Rg<p>` and `Kk<k_S>` beside "
             "the K, B and R of [kapla_pipelined.md](kapla_pipelined.md), same space, model, "
             "chip and networks) with `scripts/kapla_pipelined_report.py --sweeps`; do not edit "
             "by hand. Regenerate with", "",
             "```", "ninja -C build mapex kapla nn_dataflow tensor_centric && "
             "experiments/kapla/pipelined.sh", "```", "",
             "(or only these runs and the K, B and R they are compared with: "
             "`TABLE5=0 SEGMENT_SWEEP=' ' experiments/kapla/pipelined.sh`; "
             f"the sweep runs took {cpu:.0f} CPU minutes, {wall:.0f} min of wall time, on this "
             "2-core machine shared with other builds). CPU time is user plus system time of "
             "the `mapex schedule` process, the median of the runs counted in brackets (a run "
             "whose first run takes more than `LONG` CPU seconds, default 10, runs once).", ""]
            + missing_networks(runs) + random_sweep(runs) + level_sweep(runs)
            + level_one_sweep(runs) + released_sweep(runs) + gap_sweep(runs) + ks_sweep(runs))


def missing_networks(runs):
    """A line naming the networks of Fig. 9 without the K, B and R runs the
    sweeps are compared with."""
    missing = [n for n in NETWORKS
               if any((f"inference_{n}", s) not in runs for s in ("K", "B", "R"))]
    return ([f"Not in these runs (no K, B and R to compare with in this regeneration): "
             f"{', '.join(missing)}.", ""] if missing else [])


if __name__ == "__main__":
    main()
