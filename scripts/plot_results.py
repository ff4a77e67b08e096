#!/usr/bin/python3
"""Plots of a mapex result file (README, "Plots").

    plot_results.py layers      RESULTS.h5 -o layers.png       per-layer latency and energy by searcher
    plot_results.py pareto      RESULTS.h5 -o pareto.png       latency-energy points, Pareto front per layer
    plot_results.py convergence RESULTS.h5 -o convergence.png  best-so-far vs evaluations, a panel per layer (needs traces: true)
    plot_results.py dse         RESULTS.h5 -o dse.png          area and power vs throughput, coloured by PEs

Uses Debian's h5py, pandas and matplotlib: run with /usr/bin/python3.
Exit status 2 with one line on bad input (missing file, no rows to plot).
"""

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mapex_results import read_jobs, read_traces  # noqa: E402  (both result-file formats)


def fail(message):
    print(f"plot_results.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        jobs = read_jobs(path)
        traces = read_traces(path)
    except (OSError, KeyError) as e:
        fail(f"{path}: cannot read as a mapex result file ({e})")
    if traces.empty:
        traces = pd.DataFrame(columns=["job_id", "evaluation", "value"])
    return jobs.sort_values("job_index"), traces


def ok_jobs(jobs, path):
    ok = jobs[jobs["status"] == "ok"]
    if ok.empty:
        fail(f"{path}: no job found a valid mapping; nothing to plot")
    return ok


def plot_layers(jobs, traces, args):
    ok = ok_jobs(jobs, args.results)
    arch = args.architecture or ok["architecture"].iloc[0]
    ok = ok[ok["architecture"] == arch]
    if ok.empty:
        fail(f"{args.results}: no job ran on architecture '{arch}'")
    ok = ok.assign(layer_name=ok["workload"] + "/" + ok["layer"],
                   searcher_model=ok["searcher"] + " (" + ok["costmodel"] + ")")
    layers = list(dict.fromkeys(ok["layer_name"]))
    groups = list(dict.fromkeys(ok["searcher_model"]))
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 1.2 * len(layers) * max(1, len(groups)) / 2), 7),
                             sharex=True)
    width = 0.8 / len(groups)
    x = np.arange(len(layers))
    for metric, ax, label in (("latency_cycles", axes[0], "latency (cycles)"),
                              ("energy_pj", axes[1], "energy (pJ)")):
        for i, g in enumerate(groups):
            sub = ok[ok["searcher_model"] == g].set_index("layer_name")[metric]
            ax.bar(x + i * width, [sub.get(layer, np.nan) for layer in layers], width, label=g)
        ax.set_ylabel(label)
        ax.set_yscale("log")
    axes[0].set_title(f"Per-layer results on {arch}")
    axes[0].legend(fontsize="small")
    axes[1].set_xticks(x + width * (len(groups) - 1) / 2)
    axes[1].set_xticklabels(layers, rotation=45, ha="right")
    return fig


def plot_pareto(jobs, traces, args):
    ok = ok_jobs(jobs, args.results)
    latency = np.where(ok["latency_seconds"] > 0, ok["latency_seconds"], ok["latency_cycles"])
    unit = "s" if (ok["latency_seconds"] > 0).all() else "cycles"
    ok = ok.assign(latency=latency, group=ok["layer"] + " / " + ok["searcher"])
    styles = series_styles(ok["group"])
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, g in ok.groupby("group", sort=False):
        colour, marker = styles[name]
        ax.scatter(g["latency"], g["energy_pj"], s=14, alpha=0.5, color=colour, marker=marker,
                   label=name)
        front = g[g["pareto"] == 1].sort_values("latency")
        ax.plot(front["latency"], front["energy_pj"], "-", color=colour)
        ax.plot(front["latency"], front["energy_pj"], "*", color=colour, markersize=10)
    ax.set_xlabel(f"latency ({unit})")
    ax.set_ylabel("energy (pJ)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("Latency-energy points; stars: Pareto set of each layer and searcher")
    ax.legend(fontsize="small")
    return fig


def series_styles(names):
    """A colour and marker per series name, distinct for up to 70 series
    (ten colours, then the same colours with the next marker), so series
    past the tenth do not repeat an earlier one's look."""
    colours = plt.get_cmap("tab10").colors
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    return {name: (colours[i % len(colours)], markers[(i // len(colours)) % len(markers)])
            for i, name in enumerate(dict.fromkeys(names))}


def plot_convergence(jobs, traces, args):
    if traces.empty:
        fail(f"{args.results}: no traces stored; run the experiment with 'traces: true'")
    ok = ok_jobs(jobs, args.results)
    ok = ok[ok["job_id"].isin(set(traces["job_id"]))]
    if ok.empty:
        fail(f"{args.results}: no valid job has a trace")
    layers = list(dict.fromkeys(ok["workload"] + "/" + ok["layer"]))
    if args.layer:
        layers = [name for name in layers if name.split("/", 1)[1] == args.layer]
        if not layers:
            fail(f"{args.results}: no traced job of layer '{args.layer}'")
    shown = layers[:args.max_layers]
    ok = ok.assign(layer_name=ok["workload"] + "/" + ok["layer"],
                   series=ok["searcher"] + " (" + ok["costmodel"] + ") on " + ok["architecture"])
    styles = series_styles(ok[ok["layer_name"].isin(shown)]["series"])
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax, layer in zip(axes.flat, shown):
        for _, job in ok[ok["layer_name"] == layer].iterrows():
            t = traces[traces["job_id"] == job["job_id"]].sort_values("evaluation")
            # Extend the last best value to the job's final evaluation count,
            # so a search that stopped improving early still shows its length.
            xs = list(t["evaluation"]) + [max(job["evaluations"], t["evaluation"].iloc[-1])]
            ys = list(t["value"]) + [t["value"].iloc[-1]]
            colour, marker = styles[job["series"]]
            ax.step(xs, ys, where="post", color=colour, label=job["series"])
            ax.plot(xs[-1], ys[-1], marker=marker, color=colour)
        # Both axes logarithmic: improvements come fast at first and the
        # tail differs by percents, which a linear axis flattens away.
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(layer, fontsize="small")
        ax.set_xlabel("evaluations")
        ax.set_ylabel(f"best {ok['objective'].iloc[0]} so far")
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color=c, marker=m, label=name) for name, (c, m) in styles.items()]
    more = f" (first {len(shown)} of {len(layers)} layers)" if len(shown) < len(layers) else ""
    fig.suptitle(f"Search convergence{more}")
    fig.tight_layout()
    # The legend to the right of the panels (savefig's tight box keeps it):
    # series names carry sweep labels and would cover the panels.
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="x-small")
    return fig


def plot_dse(jobs, traces, args):
    ok = ok_jobs(jobs, args.results)
    points = ok.drop_duplicates(subset=["architecture"])
    if len(points) < 2 or "area_mm2" not in ok or (ok["area_mm2"] <= 0).all():
        fail(f"{args.results}: {len(points)} design point(s) with an area; a design-space plot "
             "needs a hardware sweep (an experiment with 'sweep:' over architectures)")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, metric, label in ((axes[0], "area_mm2", "area (mm$^2$)"),
                              (axes[1], "power_mw", "power (mW)")):
        points = ax.scatter(ok[metric], ok["throughput_gmacs"], c=ok["num_pes"], cmap="viridis",
                            norm=matplotlib.colors.LogNorm(), s=18)
        front = ok[ok["pareto"] == 1]
        ax.scatter(front[metric], front["throughput_gmacs"], marker="*", s=120,
                   facecolors="none", edgecolors="red", label="Pareto set")
        ax.set_xlabel(label)
        ax.set_ylabel("throughput (GMAC/s)")
        ax.legend(fontsize="small")
    fig.colorbar(points, ax=axes, label="PEs")
    fig.suptitle("Design space (MAESTRO case study II style)")
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["layers", "pareto", "convergence", "dse"])
    parser.add_argument("results")
    parser.add_argument("-o", "--output", required=True, help="PNG file to write")
    parser.add_argument("--architecture", help="layers: the architecture (default: the first)")
    parser.add_argument("--layer", help="convergence: only this layer (default: every layer)")
    parser.add_argument("--max-layers", type=int, default=12,
                        help="convergence: panels at most, one per layer")
    args = parser.parse_args()
    jobs, traces = load(args.results)
    plot = {"layers": plot_layers, "pareto": plot_pareto, "convergence": plot_convergence,
            "dse": plot_dse}[args.kind]
    fig = plot(jobs, traces, args)
    try:
        fig.savefig(args.output, dpi=120, bbox_inches="tight")
    except OSError as e:
        fail(f"{args.output}: cannot write ({e.strerror})")


if __name__ == "__main__":
    main()
