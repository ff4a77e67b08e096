"""Format-1 result files carry no checksums (issue 18): what their rows must
satisfy is checked when they are read, and reading one warns.

Copies FORMAT1 (a kept format-1 file, 4 jobs) and changes one value in each
copy with h5py, as damage that libhdf5 reads without complaint would:
a NaN or negative metric, a string that is not UTF-8, a repeated job id, an
unknown status, a pareto flag of 7, a trace that goes backwards. `mapex
report` must exit 2 with one line naming the file and the row. The intact
file reads with exit 0, its table on stdout and one warning line on stderr
that names `mapex merge`; a merge of it reads without the warning.

Usage: format1_checks.py MAPEX FORMAT1 WORKDIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np


def report(mapex, path):
    return subprocess.run([mapex, "report", path, "--format", "csv"], capture_output=True,
                          text=True, errors="replace", timeout=60)


def set_job(path, column, value, row=0):
    with h5py.File(path, "r+") as f:
        jobs = f["jobs"][...]
        jobs[row][column] = value
        f["jobs"][...] = jobs


def backwards_trace(path):
    with h5py.File(path, "r+") as f:
        traces = f["traces"][...]
        first = traces[0]["job_id"]
        rows = [i for i in range(len(traces)) if traces[i]["job_id"] == first]
        traces[rows[1]]["evaluation"] = traces[rows[0]]["evaluation"] - 1 \
            if traces[rows[0]]["evaluation"] > 0 else 0
        traces[rows[0]]["evaluation"] = traces[rows[1]]["evaluation"] + 5
        f["traces"][...] = traces


def main():
    mapex, format1, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    intact = os.path.join(work, "intact.h5")
    shutil.copy(format1, intact)
    p = report(mapex, intact)
    warning = p.stderr.strip().splitlines()
    if p.returncode != 0 or len(warning) != 1 or "no checksums" not in warning[0] \
            or "mapex merge" not in warning[0] or "job_id" not in p.stdout:
        failures.append(f"intact: exit {p.returncode}, stderr {p.stderr!r}")
    merged = os.path.join(work, "merged.h5")
    m = subprocess.run([mapex, "merge", intact, "-o", merged], capture_output=True, text=True)
    p = report(mapex, merged)
    if m.returncode != 0 or p.returncode != 0 or p.stderr.strip():
        failures.append(f"merged: merge exit {m.returncode}, report exit {p.returncode}, "
                        f"stderr {p.stderr!r}")

    with h5py.File(format1, "r") as f:
        second_id = f["jobs"][1]["job_id"]
    cases = {
        "nan": lambda path: set_job(path, "latency_cycles", np.nan),
        "negative": lambda path: set_job(path, "energy_pj", -1.0),
        "infinite": lambda path: set_job(path, "edp", np.inf, row=2),
        "not_utf8": lambda path: set_job(path, "layer", b"\xff\xfe"),
        "repeated_id": lambda path: set_job(path, "job_id", second_id),
        "bad_id": lambda path: set_job(path, "job_id", b"not-a-job-id-at-all"),
        "status": lambda path: set_job(path, "status", b"oj"),
        "flag": lambda path: set_job(path, "pareto", 7),
        "trace": backwards_trace,
    }
    for name, change in cases.items():
        path = os.path.join(work, f"{name}.h5")
        shutil.copy(format1, path)
        change(path)
        p = report(mapex, path)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or path not in lines[0] \
                or "damaged (format 1, no checksums)" not in lines[0]:
            failures.append(f"{name}: exit {p.returncode}, stderr {p.stderr.strip()!r}")
        else:
            print(f"{name}: {lines[0]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
