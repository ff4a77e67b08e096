"""Damaged result files never crash or hang mapex (issue: result files that
survive damage).

Makes a valid result file, then CASES damaged copies of it, each differing
from it in 1 to 8 bytes at pseudo-random offsets (seeded, so every run tries
the same files). Each copy goes through `mapex report` (and every tenth
through `mapex merge` and `mapex run --resume`), each with a timeout:

- report and merge exit 0 with the valid file's content, or 2 with one line
  "FILE: damaged at ..." (or another one-line input error); never a signal,
  another status or a hang;
- run --resume exits 0, and the file then holds every job of the experiment
  with the valid file's results.

Then FORMAT1_CASES (default 100) damaged copies of a format-1 file (FORMAT1, no checksums: read by
libhdf5 in a child process): exit 0 or 2 with one line, never a signal or a
hang. Then replays the kept regression inputs (tests/data/damaged_results/
*.h5: damaged files that crash or hang libhdf5 itself, found with h5dump
for format 2 and with the previous mapex for format 1) through report,
which must exit 2.

Usage: damaged_results.py MAPEX EXPERIMENT.yaml WORKDIR REGRESSION_DIR CASES FORMAT1
                          [FORMAT1_CASES]
"""
import glob
import os
import random
import shutil
import subprocess
import sys

TIMEOUT_SECONDS = 60


def run(args, cwd):
    try:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return None
    return p


def damage(data, seed):
    """A copy of `data` with 1-8 bytes changed at seeded offsets."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] ^= rng.randint(1, 255)
    return bytes(out)


def report_csv(mapex, path, cwd):
    p = run([mapex, "report", path, "--format", "csv"], cwd)
    return p


def check_refusal(p, what, path, failures):
    """Exit 0 is checked by the caller; anything else must be one line, exit 2."""
    if p is None:
        failures.append(f"{what} {path}: hung (more than {TIMEOUT_SECONDS} s)")
        return False
    if p.returncode == 0:
        return True
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or path not in lines[0]:
        failures.append(f"{what} {path}: exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}")
    return False


def main():
    mapex, experiment, work = sys.argv[1], sys.argv[2], sys.argv[3]
    regressions = sys.argv[4]
    cases = int(sys.argv[5])
    format1 = sys.argv[6]
    format1_cases = int(sys.argv[7]) if len(sys.argv) > 7 else 100
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    valid = os.path.join(work, "valid.h5")
    p = run([mapex, "run", experiment, "-o", valid, "--quiet"], work)
    assert p is not None and p.returncode == 0, p and p.stderr
    reference = report_csv(mapex, valid, work).stdout
    data = open(valid, "rb").read()
    # A rerun job takes new wall time; everything else is deterministic.
    def results(csv):
        rows = [line.split(",") for line in csv.strip().splitlines()]
        header = rows[0]
        drop = {header.index("wall_seconds")}
        return sorted(tuple(v for i, v in enumerate(r) if i not in drop) for r in rows[1:])

    failures = []
    counts = {"intact": 0, "damaged": 0, "resumed": 0}
    for case in range(cases):
        path = os.path.join(work, f"damaged_{case}.h5")
        open(path, "wb").write(damage(data, case))
        p = report_csv(mapex, path, work)
        if check_refusal(p, "report", path, failures):
            counts["intact"] += 1
            if p.stdout != reference:
                failures.append(f"report {path}: exit 0 but a different table")
        elif p is not None and p.returncode == 2:
            counts["damaged"] += 1
            if "damaged at" not in p.stderr and "not a mapex result file" not in p.stderr:
                failures.append(f"report {path}: {p.stderr.strip()!r} does not say where")
        if case % 10 == 0:
            merged = os.path.join(work, f"merged_{case}.h5")
            check_refusal(run([mapex, "merge", path, "-o", merged], work), "merge", path, failures)
            p = run([mapex, "run", experiment, "-o", path, "--resume", "--quiet"], work)
            if p is None or p.returncode != 0:
                failures.append(f"resume {path}: exit {p and p.returncode}, {p and p.stderr.strip()!r}")
            else:
                counts["resumed"] += 1
                after = report_csv(mapex, path, work)
                if after is None or after.returncode != 0 or results(after.stdout) != results(reference):
                    failures.append(f"resume {path}: the resumed file differs from a full run")
        if not failures:
            os.remove(path)

    old = open(format1, "rb").read()
    format1_refused = 0
    for case in range(format1_cases):
        path = os.path.join(work, f"damaged_format1_{case}.h5")
        open(path, "wb").write(damage(old, case))
        if not check_refusal(run([mapex, "report", path, "--format", "csv"], work), "report",
                             path, failures):
            format1_refused += 1
        if not failures:
            os.remove(path)

    for path in sorted(glob.glob(os.path.join(regressions, "*.h5"))):
        p = report_csv(mapex, path, work)
        check_refusal(p, "report", path, failures)
        if p is not None and p.returncode == 0:
            failures.append(f"report {path}: a regression input read as intact")

    print(f"{cases} damaged copies: {counts['intact']} read as intact (same table), "
          f"{counts['damaged']} refused with exit 2, {counts['resumed']} resumed; "
          f"{format1_cases} damaged format-1 copies, {format1_refused} refused; "
          f"{len(glob.glob(os.path.join(regressions, '*.h5')))} regression inputs replayed")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
