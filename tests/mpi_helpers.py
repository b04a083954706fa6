"""mpi_helpers.py: what the tests that run tach-cli under mpirun share:
the environment (as root, as CI runs them; Open MPI's shared-memory copies
without a single-copy mechanism), mpirun itself, the checks' record, and
readers for the folders (--csv) and traces (--trace) a run writes.
Standard library only."""
import csv
import json
import os
import shutil
import subprocess

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", LC_ALL="C.UTF-8")
# One compute thread a rank, two warm-up steps: what the 2-core machine
# runs two ranks of.
ONE_THREAD = ["--device", "cpu", "--threads", "1", "--warmup", "2"]
GPT_SMALL = ["--layers", "1", "--heads", "2", "--embed", "16", "--context", "16"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def skip_reason(have_mpi):
    """Why a test under mpirun has nothing to run here (it exits 77), or
    None."""
    if not have_mpi:
        return "skip: this Tach was built without MPI"
    if shutil.which("mpirun") is None:
        return "skip: no mpirun (apt-get install openmpi-bin)"
    return None


def mpirun(cli, args, np=2, timeout=180):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), cli] + args
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)


def samples(folder):
    with open(os.path.join(folder, "samples.csv"), newline="") as f:
        return list(csv.DictReader(f))


def read_runs(folder):
    with open(os.path.join(folder, "runs.csv"), newline="") as f:
        return list(csv.DictReader(f))


def load_trace(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def losses(folder):
    """Each (step, rank)'s loss."""
    return {(int(r["step"]), r["rank"]): float(r["loss"]) for r in samples(folder)}


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
