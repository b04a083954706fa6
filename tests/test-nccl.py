#!/usr/bin/env python3
"""test-nccl.py: data-parallel ranks on GPUs, through NCCL, via tach-cli.

  test-nccl.py PATH/TO/tach-cli mpi|nompi cuda|nocuda nccl|nonccl 1|2

Mode 1 (one GPU at least): one rank under mpirun goes through NCCL (the
communicator made over MPI, every all-reduce NCCL's):
  - each grad-sync (per-tensor, fused, overlap) and grad-compress fp16 end
    well, and the run notes NCCL, "rank 0 of 1" and its device;
  - the three grad-sync values give the same losses (speed, not math),
    and equal to one process without mpirun to fp32 rounding;
  - the samples carry the exposed communication from CUDA events;
  - --trace under overlap has a track per bucket and the bytes in flight;
  - more ranks on the machine than GPUs are refused with a message that
    says one GPU per rank (non-zero exit).
  A build without NCCL's header refuses ranks on a GPU with a message
  saying how to build with NCCL.
Mode 2 (two GPUs at least): two ranks, one GPU each:
  - at batch B, the losses of one process at batch 2B, to relative 1e-4
    over 20 steps;
  - per-tensor, fused and overlap give the same bits (two ranks: every sum
    is a + b), and the runs' own check finds every rank's parameters
    identical; fp16 compression changes them;
  - --trace has one process per rank, a track per bucket on each.

Exit status: 0 passed, 1 failed, 77 skipped: no CUDA backend, no GPU (or,
in mode 2, fewer than two), no MPI or no mpirun.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLI, HAVE_MPI, HAVE_CUDA, HAVE_NCCL, MODE = sys.argv[1:6]
HAVE_MPI = HAVE_MPI == "mpi"
HAVE_CUDA = HAVE_CUDA == "cuda"
HAVE_NCCL = HAVE_NCCL == "nccl"
NEED = int(MODE)
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", LC_ALL="C.UTF-8")
# Two buckets under overlap at bucket-mb 1 (3.2 MB of LSTM weights and the rest).
BASE = ["run", "--device", "cuda", "--workload", "bilstm", "--hidden", "200", "--warmup", "2",
        "--bucket-mb", "1"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def count_gpus():
    p = subprocess.run([CLI, "devices"], env=ENV, capture_output=True, text=True, timeout=120)
    return sum(1 for line in p.stdout.splitlines() if line.startswith("cuda:"))


def mpirun(args, np, timeout=300):
    return subprocess.run(["mpirun", "--oversubscribe", "-np", str(np), CLI] + args, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def alone(args, timeout=300):
    return subprocess.run([CLI] + args, env=ENV, capture_output=True, text=True, timeout=timeout)


def losses(folder):
    """The loss of each step: the mean over the ranks' rows."""
    by = {}
    with open(os.path.join(folder, "samples.csv"), newline="") as f:
        for r in csv.DictReader(f):
            by.setdefault(int(r["step"]), []).append(float(r["loss"]))
    return [sum(v) / len(v) for _, v in sorted(by.items())]


def rows(folder):
    with open(os.path.join(folder, "samples.csv"), newline="") as f:
        return list(csv.DictReader(f))


def worst_relative(a, b):
    return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)) if a and b else 1.0


def trace_tracks(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    tracks = {(e["pid"], e["args"]["name"]) for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    counters = {e["pid"] for e in events if e["ph"] == "C" and e["name"] == "bytes in flight"}
    return tracks, counters


def run_modes(tmp, np):
    """Each grad-sync on @np ranks at batch 8 for 20 steps (overlap with a
    trace, tmp/ranks-NP.json): {sync: (losses, stdout, folder)}, or None
    when a run failed."""
    runs = {}
    for sync in ("per-tensor", "fused", "overlap"):
        folder = os.path.join(tmp, "%d-%s" % (np, sync))
        args = BASE + ["--batch", "8", "--steps", "20", "--grad-sync", sync, "--csv", folder]
        if sync == "overlap":
            args += ["--trace", os.path.join(tmp, "ranks-%d.json" % np)]
        p = mpirun(args, np)
        check(p.returncode == 0, "%d rank(s), %s: ends well (parameters identical): %s"
              % (np, sync, p.stderr.strip()[-400:]))
        if p.returncode != 0:
            return None
        runs[sync] = (losses(folder), p.stdout, folder)
    return runs


def test_one(tmp, gpus):
    runs = run_modes(tmp, 1)
    if runs is None:
        return
    for sync, (_, out, folder) in runs.items():
        check("NCCL" in out and "rank 0 of 1" in out,
              "1 rank, %s: the run notes NCCL and its rank: %s"
              % (sync, [l for l in out.splitlines() if "algorithms" in l]))
        measured = [r for r in rows(folder) if r["warmup"] == "0"]
        comm = [float(r["comm_ms"]) for r in measured if r["comm_ms"] != ""]
        check(len(comm) > 0 and all(c >= 0 for c in comm),
              "1 rank, %s: exposed communication from the device's events (%d steps)"
              % (sync, len(comm)))
    runs = {sync: run[0] for sync, run in runs.items()}
    check(runs["per-tensor"] == runs["fused"] == runs["overlap"],
          "1 rank: per-tensor, fused and overlap give the same losses")
    folder = os.path.join(tmp, "plain")
    p = alone(BASE + ["--batch", "8", "--steps", "20", "--csv", folder])
    check(p.returncode == 0, "one process without mpirun ends well: " + p.stderr.strip()[-300:])
    if p.returncode == 0:
        d = worst_relative(runs["overlap"], losses(folder))
        check(d < 1e-5, "1 rank through NCCL: the losses of one process (worst relative %.2g)" % d)
    p = mpirun(BASE + ["--batch", "8", "--steps", "10", "--grad-compress", "fp16"], 1)
    check(p.returncode == 0, "1 rank, fp16 on the wire: ends well: " + p.stderr.strip()[-300:])
    tracks, counters = trace_tracks(os.path.join(tmp, "ranks-1.json"))
    check({(0, "all-reduce, bucket 0"), (0, "all-reduce, bucket 1")} <= tracks and 0 in counters,
          "1 rank: --trace has a track per bucket and the bytes in flight: %s" % sorted(tracks))
    p = mpirun(BASE + ["--batch", "8", "--steps", "4"], gpus + 1)
    out = p.stdout + p.stderr
    check(p.returncode != 0 and "each rank needs one of its own" in out,
          "%d ranks on %d GPUs: refused, one GPU per rank (exit %d): %s"
          % (gpus + 1, gpus, p.returncode, out.strip()[-300:]))


def test_two(tmp):
    folder = os.path.join(tmp, "alone")
    p = alone(BASE + ["--batch", "16", "--steps", "20", "--csv", folder])
    check(p.returncode == 0, "one process at 2B ends well: " + p.stderr.strip()[-300:])
    if p.returncode != 0:
        return
    ref = losses(folder)
    runs = run_modes(tmp, 2)
    if runs is None:
        return
    runs = {sync: run[0] for sync, run in runs.items()}
    for sync, got in runs.items():
        d = worst_relative(got, ref)
        check(d < 1e-4, "2 ranks at B, %s: the losses of one process at 2B (worst relative %.2g)"
              % (sync, d))
    check(runs["per-tensor"] == runs["fused"] == runs["overlap"],
          "2 ranks: per-tensor, fused and overlap give the same bits")
    folder = os.path.join(tmp, "two-fp16")
    p = mpirun(BASE + ["--batch", "8", "--steps", "20", "--grad-compress", "fp16",
                       "--csv", folder], 2)
    check(p.returncode == 0 and losses(folder) != runs["overlap"],
          "2 ranks: fp16 on the wire changes the losses")
    tracks, counters = trace_tracks(os.path.join(tmp, "ranks-2.json"))
    check(all((r, "all-reduce, bucket %d" % b) in tracks for r in (0, 1) for b in (0, 1))
          and counters == {0, 1},
          "2 ranks: --trace has each rank's bucket tracks and bytes in flight: %s" % sorted(tracks))


def main():
    if not HAVE_CUDA:
        print("skip: this build has no CUDA backend (meson setup -Dcuda=enabled)")
        return 77
    gpus = count_gpus()
    if gpus < NEED:
        print("skip: %d GPU(s) here, this test needs %d" % (gpus, NEED))
        return 77
    if not HAVE_MPI or shutil.which("mpirun") is None:
        print("skip: ranks need MPI: a build with Open MPI (libopenmpi-dev) and mpirun")
        return 77
    tmp = tempfile.mkdtemp(prefix="tach-nccl-")
    try:
        if not HAVE_NCCL:
            p = mpirun(BASE + ["--batch", "8", "--steps", "4"], 1)
            out = p.stdout + p.stderr
            check(p.returncode != 0 and "need NCCL" in out and "nccl.h" in out,
                  "without NCCL: ranks on a GPU refused, saying how to build with it: "
                  + out.strip()[-300:])
        elif NEED == 1:
            test_one(tmp, gpus)
        else:
            test_two(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failed" % len(failures))
        return 1
    return 0


sys.exit(main())
