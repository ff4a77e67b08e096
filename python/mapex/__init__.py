"""mapex from Python (README, "Python").

Load a workload, an architecture and a mapping; evaluate a mapping under any
cost model; search with any searcher and budget; count a mapspace exactly;
run an experiment file; read a result file as a pandas DataFrame.

Every call runs the same host code as the `mapex` command line (the compiled
half, `_mapex`, reads the files and calls the CLI's command functions in
process), so plugins are found as the CLI finds them (this build's plugin
folder, then MAPEX_PLUGIN_PATH) and bad input raises `mapex.InputError`
carrying the CLI's one-line message (file:line:column, key, what was
expected). Other failures raise `mapex.Error`; arguments of the wrong type
raise TypeError.
"""

import json
import os
import tempfile
import warnings

_PLUGIN_DIR = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "lib", "mapex", "plugins"))


def _add_build_plugins():
    # The CLI looks beside its binary first, then in MAPEX_PLUGIN_PATH; the
    # module's binary is Python, so the build's plugin folder goes first in
    # the path instead.
    if not os.path.isdir(_PLUGIN_DIR):
        return
    current = os.environ.get("MAPEX_PLUGIN_PATH", "")
    if _PLUGIN_DIR not in current.split(":"):
        os.environ["MAPEX_PLUGIN_PATH"] = _PLUGIN_DIR + (":" + current if current else "")


_add_build_plugins()

from . import _mapex  # noqa: E402
from ._mapex import Error, InputError, __version__  # noqa: E402,F401

__all__ = ["Error", "InputError", "Workload", "Architecture", "Mapping", "load_workload",
           "load_architecture", "load_mapping", "evaluate", "search", "count_mapspace",
           "run_experiment", "read_results", "plugins", "import_onnx"]


def _path(value, what):
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{what}: expected a path (str or os.PathLike), got {type(value).__name__}")


def _expect(value, types, what, expected):
    allowed = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise TypeError(f"{what}: expected {expected}, got {type(value).__name__}")
    return value


class Workload:
    """A workload file (network or single operator), read and checked."""

    def __init__(self, path):
        self.path = _path(path, "workload")
        self._net = _mapex.load_network(self.path)

    @property
    def name(self):
        return self._net.name

    @property
    def layers(self):
        """One dict a layer: name, kind, macs, dims, inputs."""
        return self._net.layers

    def __repr__(self):
        return f"<mapex.Workload {self.name!r}: {len(self._net)} layers from {self.path}>"


class Architecture:
    """An architecture file, read and checked."""

    def __init__(self, path):
        self.path = _path(path, "architecture")
        self._arch = _mapex.load_architecture(self.path)

    @property
    def name(self):
        return self._arch.name

    @property
    def levels(self):
        return self._arch.levels

    def __repr__(self):
        return f"<mapex.Architecture {self.name!r} from {self.path}>"


class Mapping:
    """A mapping file of one layer of a workload on an architecture."""

    def __init__(self, path, workload, architecture, layer=None):
        self.path = _path(path, "mapping")
        self.workload = _workload(workload)
        self.architecture = _architecture(architecture)
        self.layer = _layer(layer)
        self.yaml = _mapex.mapping_yaml(self.path, self.workload._net,
                                        self.architecture._arch, self.layer or "")

    def __repr__(self):
        return f"<mapex.Mapping of {self.layer or self.workload.name!r} from {self.path}>"


def load_workload(path):
    return Workload(path)


def load_architecture(path):
    return Architecture(path)


def load_mapping(path, workload, architecture, layer=None):
    return Mapping(path, workload, architecture, layer)


def _workload(value):
    return value if isinstance(value, Workload) else Workload(_path(value, "workload"))


def _architecture(value):
    return value if isinstance(value, Architecture) else Architecture(
        _path(value, "architecture"))


def _layer(layer):
    return None if layer is None else _expect(layer, str, "layer", "a layer name (str)")


def _params(flag, params):
    if params is None:
        return []
    _expect(params, dict, flag, "a dict of parameter names to values")
    args = []
    for key, value in params.items():
        _expect(key, str, flag, "parameter names as str")
        args += [f"--{flag}", f"{key}={value}"]
    return args


def _run(args):
    """Runs a mapex command in process; its warnings (a plugin that failed
    to load, an ONNX node not mapped) become Python warnings."""
    status, out, err = _mapex.cli([str(a) for a in args])
    for line in err.splitlines():
        if line.startswith("mapex: warning: "):
            warnings.warn(line[len("mapex: warning: "):], stacklevel=3)
    return status, out, err


def _cli(args):
    """Runs a mapex command; raises InputError (exit 2) or Error (other)."""
    status, out, err = _run(args)
    if status == 2:
        raise InputError(_message(err))
    if status != 0:
        raise Error(_message(err) or f"mapex {args[0]} exited with status {status}")
    return out


def _cli_json(args):
    """A command with --format json. Exit 1 with a JSON answer (an invalid
    mapping, no valid mapping found, an empty mapspace) is an answer, not
    an error."""
    status, out, err = _run(list(args) + ["--format", "json"])
    if status == 2:
        raise InputError(_message(err))
    try:
        return json.loads(out)
    except ValueError:
        raise Error(_message(err) or f"mapex {args[0]} exited with status {status}") from None


def _message(err):
    lines = [line for line in err.splitlines() if line.startswith("mapex: error: ")]
    text = lines[-1] if lines else err.strip()
    return text[len("mapex: error: "):] if text.startswith("mapex: error: ") else text


def _common(workload, architecture, layer):
    w, a = _workload(workload), _architecture(architecture)
    args = ["--workload", w.path, "--arch", a.path]
    if layer is not None:
        args += ["--layer", _layer(layer)]
    return args


def evaluate(workload, architecture, mapping, costmodel="roofline", params=None, layer=None):
    """Metrics of one mapping under a cost model, as a dict (the CLI's
    `evaluate --format json` metrics: latency_cycles, energy_pj, ...,
    `valid` False with `invalid_reason` for a mapping that breaks a limit)."""
    if isinstance(mapping, Mapping):
        layer = mapping.layer if layer is None else layer
        mapping = mapping.path
    args = ["evaluate"] + _common(workload, architecture, layer)
    args += ["--mapping", _path(mapping, "mapping"),
             "--costmodel", _expect(costmodel, str, "costmodel", "a plugin name (str)")]
    args += _params("param", params)
    return _cli_json(args)["metrics"]


def search(workload, architecture, searcher, layer=None, params=None, costmodel="roofline",
           costmodel_params=None, objective="latency", seed=1, max_evaluations=0,
           max_seconds=0.0, threads=0, constraints=None):
    """Runs one searcher on one layer; returns the CLI's `search --format
    json` result as a dict (metrics, mapping, mapping_yaml, evaluations,
    wall_seconds, complete, stop_reason, ...)."""
    args = ["search"] + _common(workload, architecture, layer)
    args += ["--searcher", _expect(searcher, str, "searcher", "a plugin name (str)"),
             "--costmodel", _expect(costmodel, str, "costmodel", "a plugin name (str)"),
             "--objective", _expect(objective, str, "objective", "latency, energy or edp"),
             "--seed", _expect(seed, int, "seed", "an int"),
             "--max-evaluations", _expect(max_evaluations, int, "max_evaluations", "an int"),
             "--max-seconds", _expect(max_seconds, (int, float), "max_seconds", "a number"),
             "-j", _expect(threads, int, "threads", "an int")]
    args += _params("param", params) + _params("costmodel-param", costmodel_params)
    if constraints is not None:
        args += ["--constraints", _path(constraints, "constraints")]
    return _cli_json(args)


def count_mapspace(workload, architecture, layer=None, constraints=None, style=None,
                   valid=True):
    """The exact number of mappings of the layer (a Python int): those that
    fit the buffers when `valid`, else every mapping the constraints allow."""
    args = ["mapspace"] + _common(workload, architecture, layer)
    if constraints is not None:
        args += ["--constraints", _path(constraints, "constraints")]
    if style is not None:
        args += ["--style", _expect(style, str, "style", "a mapping style (str)")]
    if not valid:
        args.append("--no-valid-count")
    result = _cli_json(args)
    return int(result["valid"] if valid and result.get("valid") is not None else result["size"])


def run_experiment(path, output=None, threads=0, force=False):
    """Runs an experiment file (as `mapex run`) and returns its jobs as a
    DataFrame (read_results). `output` defaults to a new temporary folder;
    the frame's attrs['path'] names the file."""
    path = _path(path, "experiment")
    if output is None:
        output = os.path.join(tempfile.mkdtemp(prefix="mapex-"), "results.h5")
    args = ["run", path, "-o", _path(output, "output"), "--quiet",
            "-j", _expect(threads, int, "threads", "an int")]
    if force:
        args.append("--force")
    status, _, err = _run(args)
    if status == 2:
        raise InputError(_message(err))
    if status not in (0, 1) or not os.path.exists(output):  # 1: a job failed, its row says why
        raise Error(_message(err) or f"mapex run exited with status {status}")
    return read_results(output)


def import_onnx(model, output, batch=None):
    """`mapex import onnx`: writes the network YAML and returns it loaded."""
    args = ["import", "onnx", _path(model, "model"), "-o", _path(output, "output")]
    if batch is not None:
        args += ["--batch", _expect(batch, int, "batch", "a positive int")]
    _cli(args)
    return Workload(output)


def plugins():
    """The `mapex plugins` table as a list of dicts (name, kind, version,
    abi, path)."""
    out = _cli(["plugins"])
    rows = [line.strip("| ").split(" | ") for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| name")]
    return [dict(zip(["name", "kind", "version", "abi", "path"], r)) for r in rows]


def read_results(path):
    """The jobs table of a result file as a pandas DataFrame: strings as
    str, one row a job, and the searcher's parameters of each row in a
    `searcher_params` column (a dict). File attributes are in df.attrs."""
    import h5py
    import pandas as pd

    path = _path(path, "results")
    if not os.path.exists(path):
        raise InputError(f"{path}: result file does not exist")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not a result file ({e}); expected an HDF5 file "
                         f"written by mapex run") from None
    with f:
        if "jobs" not in f:
            raise InputError(f"{path}: no /jobs table; expected a file written by mapex run")
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        jobs = f["jobs"]
        if isinstance(jobs, h5py.Group):
            # Format 2 (README, Result files): one dataset per column,
            # strings read as str through .asstr().
            names = (_text(jobs.attrs["columns"]).split(",") if "columns" in jobs.attrs
                     else list(jobs))
            table = {n: (jobs[n].asstr()[...] if h5py.check_string_dtype(jobs[n].dtype)
                         else jobs[n][...]) for n in names}
        else:
            table = jobs[...]
        frame = _jobs_frame(table, attrs, pd)
    frame.attrs.update(attrs)
    frame.attrs["path"] = path
    return frame


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _jobs_frame(table, attrs, pd):
    """Rows of /jobs as a DataFrame. The one place that knows the layout:
    string columns are decoded when h5py returns bytes (format 1), and each
    row's searcher parameters come from per-row columns when the file has
    them (`searcher_params` as JSON or k=v text, or `param.*` columns), else
    from the experiment the file holds (the searcher's label names them)."""
    if not isinstance(table, dict):  # format 1: a compound table
        table = {name: table[name] for name in table.dtype.names}
    frame = pd.DataFrame(table)
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(_text)
    if "searcher_params" in frame.columns:
        frame["searcher_params"] = frame["searcher_params"].map(_parse_params)
        return frame
    per_row = [c for c in frame.columns if c.startswith("param.")]
    if per_row:
        frame["searcher_params"] = [
            {c[len("param."):]: row[c] for c in per_row if row[c] not in ("", None)}
            for _, row in frame[per_row].iterrows()]
        return frame
    by_label = _params_by_label(attrs.get("experiment_yaml", ""))
    frame["searcher_params"] = frame["searcher"].map(lambda label: dict(by_label.get(label, {})))
    return frame


def _parse_params(text):
    if isinstance(text, dict):
        return text
    text = (text or "").strip()
    if not text:
        return {}
    if text.startswith("{"):
        return json.loads(text)
    return dict(item.split("=", 1) for item in text.replace(";", ",").split(",") if "=" in item)


def _params_by_label(experiment_yaml):
    """label -> parameters of each searcher of the experiment; a swept
    label `name[k=v,...]` adds its point's values."""
    import yaml

    try:
        spec = yaml.safe_load(experiment_yaml) or {}
    except yaml.YAMLError:
        return {}
    out = {}
    for use in spec.get("searchers", []) if isinstance(spec, dict) else []:
        if isinstance(use, str):
            out[use] = {}
        elif isinstance(use, dict):
            label = use.get("label") or use.get("plugin", "")
            out[label] = {k: str(v) for k, v in (use.get("params") or {}).items()}
    return _LabelParams(out)


class _LabelParams(dict):
    def get(self, label, default=None):
        if label in self:
            return self[label]
        base, _, point = label.partition("[")
        if base in self and point.endswith("]"):
            params = dict(self[base])
            for key, value in _parse_params(point[:-1]).items():
                if not key.startswith("budget."):
                    params[key[len("params."):] if key.startswith("params.") else key] = value
            return params
        return default
