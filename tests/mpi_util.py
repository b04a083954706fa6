"""mpi_util.py: what the tests of data-parallel ranks under mpirun share
(test-mpi.py, test-mpi-sweep.py, test-mpi-trace.py, test-mpi-shard-all.py):
the command line they are given, the environment mpirun runs in, the
checks' record, mpirun and tach-cli alone, and readers of the results
(samples.csv, runs.csv, the trace, --progress lines).

Every test is given: PATH/TO/tach-cli mpi|nompi [...].
Runs as root as CI does (OMPI_ALLOW_RUN_AS_ROOT*), on two cores.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLI = sys.argv[1]
HAVE_MPI = sys.argv[2] == "mpi"
ONE_THREAD = ["--device", "cpu", "--threads", "1", "--warmup", "2"]
GPT_SMALL = ["--layers", "1", "--heads", "2", "--embed", "16", "--context", "16"]
BASE = ["run"] + ONE_THREAD
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", LC_ALL="C.UTF-8")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def progress_fields(line):
    """A --progress line's fields (tach-progress.h), read as the window
    reads them: from the last line begun on it, and only a whole one (every
    word key=value, end=1 last); None for any other line."""
    at = line.rfind("tach-progress ")
    if at < 0:
        return None
    words = line[at:].split()[1:]
    if not words or words[-1] != "end=1" or any("=" not in w for w in words):
        return None
    return dict(w.split("=", 1) for w in words)


def mpirun(args, np=2, timeout=120, wrapper=None):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
    if wrapper is not None:
        cmd += wrapper
    return subprocess.run(cmd + [CLI] + args, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def alone(args, timeout=120):
    """tach-cli run in one process, on one thread, without mpirun."""
    return subprocess.run([CLI] + BASE + args, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def write_script(tmp, name, text):
    """An executable shell script @name in @tmp; its path."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def mismatch_wrapper(tmp):
    """A wrapper that starts rank 1 with --batch 16 and the others with 8."""
    return write_script(tmp, "mismatch.sh",
                        '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then'
                        ' exec "$@" --batch 16; else exec "$@" --batch 8; fi\n')


def samples(folder):
    with open(os.path.join(folder, "samples.csv"), newline="") as f:
        return list(csv.DictReader(f))


def read_runs(folder):
    with open(os.path.join(folder, "runs.csv"), newline="") as f:
        return list(csv.DictReader(f))


def losses_by_step(rows):
    by = {}
    for r in rows:
        by.setdefault(int(r["step"]), []).append(float(r["loss"]))
    return by


def losses(folder):
    """Each (step, rank)'s loss in @folder's samples.csv."""
    return {(int(r["step"]), r["rank"]): float(r["loss"]) for r in samples(folder)}


def load_trace(path):
    with open(path) as f:
        trace = json.load(f)
    return trace["traceEvents"]


def check_tracks(events, what):
    """Monotone timestamps on every track, and slices that never overlap
    on one track (Perfetto would nest them)."""
    last = {}
    monotone = True
    for e in events:
        if e["ph"] == "M":
            continue
        key = (e["pid"], e["tid"], e["ph"], e["name"] if e["ph"] == "C" else "")
        if e["ts"] < last.get(key, 0.0):
            monotone = False
        last[key] = e["ts"]
    # From 0: a rank whose first step began before rank 0's is not at
    # negative times (the trace starts at its earliest event).
    check(monotone, what + ": timestamps from 0, monotone on every track")
    ends = {}
    apart = True
    for e in events:
        if e["ph"] != "X" or e["tid"] < 2:
            continue
        key = (e["pid"], e["tid"])
        if e["ts"] < ends.get(key, -1.0) - 1e-3:
            apart = False
        ends[key] = e["ts"] + e["dur"]
    check(apart, what + ": the collectives of one track never overlap")


def run_tests(with_mpi, without_mpi=None, prefix="tach-mpi-"):
    """Runs with_mpi(tmp) (or without_mpi(tmp) in a build without MPI,
    else skips) in a temporary folder; the exit status: 0 passed, 1
    failed, 77 skipped."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        if not HAVE_MPI:
            if without_mpi is None:
                print("skip: this Tach was built without MPI")
                return 77
            without_mpi(tmp)
        elif shutil.which("mpirun") is None:
            print("skip: no mpirun (apt-get install openmpi-bin)")
            return 77
        else:
            with_mpi(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failed" % len(failures))
        return 1
    print("all passed")
    return 0
