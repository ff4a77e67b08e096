"""Reads a mapex result file with h5py and checks its documented layout.

Usage: read_results.py RESULTS.h5 EXPECTED_JOBS
"""
import sys

import h5py


def main() -> int:
    path, expected = sys.argv[1], int(sys.argv[2])
    with h5py.File(path, "r") as f:
        for attr in ("experiment_yaml", "experiment_name", "mapex_version", "plugin_abi"):
            assert attr in f.attrs, f"missing attribute {attr}"
        jobs = f["jobs"][...]
        assert len(jobs) == expected, f"{len(jobs)} jobs, expected {expected}"
        names = jobs.dtype.names
        for column in ("job_id", "workload", "layer", "architecture", "searcher", "costmodel",
                       "status", "error", "latency_cycles", "energy_pj", "utilization",
                       "evaluations", "wall_seconds", "best_mapping"):
            assert column in names, f"missing column {column}"
        for row in jobs:
            status = row["status"].decode() if isinstance(row["status"], bytes) else row["status"]
            assert status == "ok", f"job {row['job_id']} has status {status}"
            assert row["latency_cycles"] > 0 and row["energy_pj"] > 0
            assert 0 < row["utilization"] <= 1
            mapping = row["best_mapping"]
            mapping = mapping.decode() if isinstance(mapping, bytes) else mapping
            assert "DRAM:" in mapping, mapping
    print(f"{path}: {expected} jobs read back with h5py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
