"""Reads mapex result files (README.md, Result files) with h5py, in both formats.

Format 2 (format_version 2): /jobs and /traces are groups with one dataset per
column; strings are read as str with h5py's .asstr(). Format 1 (no
format_version): /jobs and /traces are compound tables whose strings h5py
returns as bytes; they are decoded here, so both give the same frame.

    from mapex_results import read_jobs, read_traces, read_attributes
    jobs = read_jobs("results/quickstart.h5")   # a pandas DataFrame, str columns

Uses Debian's h5py and pandas (/usr/bin/python3).
"""
import h5py
import numpy as np
import pandas as pd


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _columns(group):
    order = _text(group.attrs["columns"]).split(",") if "columns" in group.attrs else list(group)
    out = {}
    for name in order:
        data = group[name]
        out[name] = data.asstr()[...] if h5py.check_string_dtype(data.dtype) else data[...]
    return out


def _table(f, name):
    """A frame of /jobs or /traces, whatever the format."""
    if name not in f:
        return pd.DataFrame()
    node = f[name]
    if isinstance(node, h5py.Group):
        return pd.DataFrame(_columns(node))
    rows = node[...]
    frame = pd.DataFrame({c: rows[c] for c in rows.dtype.names})
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = [_text(v) for v in frame[c]]
    return frame


def read_attributes(path):
    """The root attributes: str for text; numbers as numbers in format 2
    (format 1 stored them as text)."""
    with h5py.File(path, "r") as f:
        return {k: (_text(v) if not isinstance(v, np.generic) else v.item()) for k, v in f.attrs.items()}


def read_jobs(path):
    """/jobs as a DataFrame with str string columns, in file order."""
    with h5py.File(path, "r") as f:
        return _table(f, "jobs")


def read_traces(path):
    """/traces (job_id, evaluation, value) as a DataFrame."""
    with h5py.File(path, "r") as f:
        return _table(f, "traces")


def units(path):
    """{column: unit} of /jobs (format 2; empty for format 1)."""
    with h5py.File(path, "r") as f:
        jobs = f["jobs"]
        if not isinstance(jobs, h5py.Group):
            return {}
        return {k: _text(jobs[k].attrs["units"]) for k in jobs if "units" in jobs[k].attrs}
