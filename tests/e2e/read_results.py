"""Reads a mapex result file with h5py and checks its documented layout.

Usage: read_results.py RESULTS.h5 EXPECTED_JOBS

Format 2 (README.md, Result files): string columns come back from h5py as
str (through .asstr()), numeric root attributes as numbers, units as
attributes of the columns, the searcher's parameters and budget per row.
Format 1 files are read through scripts/mapex_results.py as well.
"""
import json
import os
import sys

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from mapex_results import read_attributes, read_jobs, units  # noqa: E402


def check_format2(path, jobs):
    attributes = read_attributes(path)
    assert attributes["format_version"] == 2, attributes["format_version"]
    assert isinstance(attributes["plugin_abi"], int), repr(attributes["plugin_abi"])
    assert isinstance(attributes["experiment_name"], str)
    with h5py.File(path, "r") as f:
        # Straight h5py, no helper: a string column read with .asstr() is str.
        assert isinstance(f["jobs/workload"].asstr()[0], str)
        assert f["jobs"].attrs["columns"].split(",")[0] == "job_index"
    u = units(path)
    for column, unit in (("latency_cycles", "cycles"), ("energy_pj", "pJ"), ("edp", "pJ*cycles"),
                         ("wall_seconds", "s")):
        assert u.get(column) == unit, (column, u.get(column))
    for row in jobs.to_dict("records"):
        assert isinstance(row["job_id"], str) and isinstance(row["best_mapping"], str)
        assert isinstance(json.loads(row["searcher_params"]), dict), row["searcher_params"]
        assert row["searcher_plugin"], row
        assert row["max_evaluations"] > 0 or row["max_seconds"] > 0, row


def main() -> int:
    path, expected = sys.argv[1], int(sys.argv[2])
    attributes = read_attributes(path)
    for attr in ("experiment_yaml", "experiment_name", "mapex_version", "plugin_abi"):
        assert attr in attributes, f"missing attribute {attr}"
    jobs = read_jobs(path)
    assert len(jobs) == expected, f"{len(jobs)} jobs, expected {expected}"
    for column in ("job_id", "workload", "layer", "architecture", "searcher", "costmodel",
                   "status", "error", "latency_cycles", "energy_pj", "utilization",
                   "evaluations", "wall_seconds", "best_mapping"):
        assert column in jobs.columns, f"missing column {column}"
    for row in jobs.to_dict("records"):
        assert row["status"] == "ok", f"job {row['job_id']} has status {row['status']}"
        assert row["latency_cycles"] > 0 and row["energy_pj"] > 0
        assert 0 < row["utilization"] <= 1
        assert "DRAM:" in row["best_mapping"], row["best_mapping"]
    if "format_version" in attributes:
        check_format2(path, jobs)
    print(f"{path}: {expected} jobs read back with h5py "
          f"(format {attributes.get('format_version', 1)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
