#!/usr/bin/python3
"""Smoke test of scripts/maestro_dse_report: runs every MAESTRO experiment
(experiments/maestro/, the report's RUN_NAMES) with its search budget cut to a
few evaluations and its largest sweeps thinned (fewer_points), so the design
points, layers and styles the report looks up are there but the runs take
seconds, then the report on those files into a
temporary folder. The report must exit 0 and write its three pages, its
summary and its plot, each with its main sections. (The report was once
broken for a round without any test noticing.)

  maestro_dse_report_check.py MAPEX WORK_DIR ROOT"""
import os
import shutil
import subprocess
import sys

import yaml

mapex, work, root = sys.argv[1:4]
scripts = os.path.join(root, "scripts")
sys.path.insert(0, scripts)
import maestro_case_study_1 as cs1  # noqa: E402

EVALUATIONS = 8  # per job: enough for a mapping, few enough for seconds


def absolute(node, base):
    """The experiment with every relative `file` path made absolute, so the
    copy runs from another folder."""
    if isinstance(node, dict):
        return {k: (os.path.normpath(os.path.join(base, v))
                    if k == "file" and isinstance(v, str) and not os.path.isabs(v)
                    else absolute(v, base)) for k, v in node.items()}
    if isinstance(node, list):
        return [os.path.normpath(os.path.join(base, x))
                if isinstance(x, str) and x.endswith(".yaml") and not os.path.isabs(x)
                else absolute(x, base) for x in node]
    return node


def small_budget(experiment):
    """Cuts every search budget to EVALUATIONS and every victory condition
    to a few: the jobs stay the same, each one searches briefly."""
    experiment["budget"] = {"evaluations": EVALUATIONS}
    for s in experiment.get("searchers", []):
        if isinstance(s, dict):
            s.pop("budget", None)
            if "victory_condition" in s.get("params", {}):
                s["params"]["victory_condition"] = 2
    return experiment


def fewer_points(name, experiment):
    """Case study II's sweep with its largest buffers only and the PE counts
    under the caps (64-256; the others are skipped as over the caps anyway),
    every NoC bandwidth kept; case study I on VGG16 alone. The other
    experiments are small already."""
    if name == "case_study_2":
        for arch in experiment["architectures"]:
            product = arch["sweep"]["product"]
            for key in ("L1.size_bytes", "L2.size_bytes"):
                product[key] = product[key][-1:]
            product["PE_array.shape"] = [p for p in product["PE_array.shape"] if p <= 256]
    if name == "case_study_1":
        experiment["workloads"] = [w for w in experiment["workloads"] if "vgg16" in w["file"]]
    return experiment


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


shutil.rmtree(work, ignore_errors=True)
results, docs = os.path.join(work, "results"), os.path.join(work, "docs")
os.makedirs(results)
report = os.path.join(scripts, "maestro_dse_report")
names = subprocess.run(["/usr/bin/python3", "-c", "import importlib.machinery as m; "
                        f"r = m.SourceFileLoader('r', '{report}').load_module(); "
                        "print(' '.join(r.RUN_NAMES))"],
                       capture_output=True, text=True, check=True).stdout.split()
experiments = os.path.join(root, "experiments", "maestro")
for name in names:
    path = os.path.join(experiments, f"{name}.yaml")
    with open(path) as f:
        exp = fewer_points(name, small_budget(absolute(yaml.safe_load(f), experiments)))
    small = os.path.join(work, f"{name}.yaml")
    with open(small, "w") as f:
        yaml.safe_dump(exp, f)
    out = subprocess.run([mapex, "run", small, "-o", os.path.join(results, f"maestro_{name}.h5"),
                          "-j", "2", "-q"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"mapex run {name}: {out.stderr.strip()}")

# Case study I's fixed styles on VGG16 alone (the page's reuse factors are
# VGG16's), with MAESTRO's own network files when refdata is there.
with open(cs1.STYLES_FILE) as f:
    spec = yaml.safe_load(f)
spec["networks"] = [n for n in spec["networks"] if "vgg16" in str(n.get("workload", ""))]
cs1.run_fixed(spec, experiments, os.path.join(results, "maestro_case_study_1"), mapex)

out = subprocess.run(["/usr/bin/python3", report, "--no-run", "--results", results,
                      "--out-dir", docs], capture_output=True, text=True)
if out.returncode != 0:
    fail(f"maestro_dse_report exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
expected = {
    "maestro_dse.md": ["## Throughput- and energy-optimal designs",
                       "## NoC bandwidth and throughput", "## Fig. 4(d)",
                       "## Throughput optimum without the caps"],
    "maestro_case_study_1.md": ["## Adaptive mapping (fixed mappings)",
                                "## Which energy the paper reports",
                                "## Reuse factors of YR-P and KC-P in VGG16",
                                "## Searched mappings"],
    "maestro_summary.csv": ["figure,quantity,paper,mapex,reproduced,reason_class,note,readings"],
    "maestro_dse.png": [],
}
for page, needles in expected.items():
    path = os.path.join(docs, page)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        fail(f"maestro_dse_report wrote no {page}")
    if needles:
        with open(path) as f:
            text = f.read()
        for n in needles:
            if n not in text:
                fail(f"{page} lacks '{n}'")
print(f"maestro_dse_report wrote its pages from small runs in {work}")
