#!/usr/bin/env python3
"""test-mpi-sweep.py: runs of several runs under mpirun, through tach-cli
(test-mpi.py tests one run's ranks; the helpers are mpi_util.py's).

With MPI (the build's mpi option found Open MPI and mpirun is here):
  - the data-parallel presets set the synchronisation knobs they cite, and
    alone a process says they do not apply;
  - sweep and explain run under mpirun, every rank the same runs in the
    same order, rank 0 alone printing and writing (sweep --vary ranks=1,2
    runs the ranks=1 points on rank 0 alone); explain's table and
    explain.csv split each step and share into the ranks' phases too
    (exposed communication, packing, imbalance), adding up;
  - run --scaling measures weak and strong scaling efficiency against one
    process and writes them to runs.csv (values checked to be numbers in
    range, never against a speed); --scaling-ranks 1,2,3 under -np 3 runs
    2 ranks on the first two (a communicator of theirs), the third sitting
    it out, and 3 on all, each count with its efficiencies; a count out of
    range is refused (exit 2).

Runs as root as CI does (OMPI_ALLOW_RUN_AS_ROOT*), on two cores.

Usage: test-mpi-sweep.py PATH/TO/tach-cli mpi|nompi
Exit status: 0 passed, 1 failed, 77 skipped (no mpirun, or no MPI).
"""
import csv
import os
import subprocess
import sys

sys.dont_write_bytecode = True
from mpi_util import (BASE, CLI, ENV, ONE_THREAD, alone, check, mismatch_wrapper,  # noqa: E402
                      mpirun, read_runs, run_tests, samples)


def test_presets(tmp):
    folder = os.path.join(tmp, "preset-horovod")
    p = mpirun(BASE + ["--workload", "bilstm", "--preset", "horovod-no-overlap", "--batch", "8",
                       "--steps", "4", "--csv", folder])
    check(p.returncode == 0, "preset horovod-no-overlap runs on 2 ranks: " + p.stderr[-300:])
    if p.returncode == 0:
        row = read_runs(folder)[0]
        check((row["grad-sync"], row["bucket-mb"], row["grad-compress"], row["feed"])
              == ("per-tensor", "64", "none", "resident"),
              "horovod-no-overlap: per-tensor, 64 MB, no compression, tuned's feed: %s"
              % [row[k] for k in ("grad-sync", "bucket-mb", "grad-compress", "feed")])
    p = alone(["--workload", "cnn", "--preset", "ddp", "--batch", "4", "--steps", "3"])
    check(p.returncode == 0 and "preset ddp" in p.stderr and "does not apply" in p.stderr,
          "alone, preset ddp runs and says its synchronisation does not apply: "
          + p.stderr.strip()[:300])
    p = subprocess.run([CLI, "presets"], env=ENV, capture_output=True, text=True, timeout=60)
    check(all(n in p.stdout for n in ("horovod-no-overlap", "horovod#889", "ddp", "bucket_cap_mb")),
          "tach-cli presets lists the data-parallel presets with their sources")
    check(p.stdout.count("between ranks only") == 28,
          "tach-cli presets marks the 7 data-parallel presets of each of the 4 workloads")
    check(p.stdout.count("alone it runs as tuned, accumulating 4 micro-batches a step") == 8,
          "tach-cli presets says ddp-accumulate and ddp-no-sync still accumulate alone")
    # A command that runs nothing still leaves MPI as a rank should: mpirun
    # -np 1 tach-cli presets is how tools/gpu-check.sh asks whether MPI
    # starts on a GPU host.
    p = mpirun(["presets"], np=1)
    check(p.returncode == 0, "mpirun -np 1 tach-cli presets exits 0 (got %d: %s)"
          % (p.returncode, p.stderr.strip()[-300:]))


EXPLAIN_PHASES = ("feed_ms", "compute_ms", "sync_ms", "host_ms", "comm_ms", "pack_ms",
                  "imbalance_ms")


def check_explain_phases(folder):
    """explain.csv under mpirun: A's and B's rows carry the ranks' phases,
    and every row's seven phases add up to its step (A, B) or share (a
    knob)."""
    with open(os.path.join(folder, "explain.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    ok = len(rows) == 4
    worst = 0.0
    for r in rows:
        total = float(r["share_ms"] if r["row"] == "knob" else r["step_ms"])
        if any(r[k] == "" for k in EXPLAIN_PHASES):
            ok = False
            continue
        worst = max(worst, abs(sum(float(r[k]) for k in EXPLAIN_PHASES) - total)
                    / max(1.0, abs(total)))
    ok = ok and worst < 1e-6
    ends = [r for r in rows if r["row"] in ("from", "to")]
    ok = ok and len(ends) == 2 and all(float(r["comm_ms"]) > 0 for r in ends)
    check(ok, "explain.csv under mpirun: comm_ms, pack_ms and imbalance_ms on every row, A's and"
          " B's exposed communication above 0, the phases adding up (worst %.2g): %s"
          % (worst, [(r["row"], r["comm_ms"], r["pack_ms"], r["imbalance_ms"]) for r in rows]))


def test_sweep_explain(tmp):
    folder = os.path.join(tmp, "sweep")
    p = mpirun(["sweep"] + ONE_THREAD + ["--workload", "bilstm", "--presets",
                                         "horovod-no-overlap,tuned", "--batch", "8", "--steps",
                                         "6", "--rounds", "2", "--budget", "0", "--csv", folder],
               timeout=300)
    check(p.returncode == 0, "sweep --presets under mpirun: " + p.stderr[-300:])
    if p.returncode == 0:
        rows = read_runs(folder)
        check(len(rows) == 4 and {r["ranks"] for r in rows} == {"2"},
              "sweep under mpirun: 2 presets x 2 rounds, each on 2 ranks (%d rows)" % len(rows))
        check(p.stdout.count("horovod-no-overlap") >= 1 and p.stdout.count("tuned") >= 1,
              "sweep under mpirun: rank 0 prints the table")
    folder = os.path.join(tmp, "sweep-ranks")
    p = mpirun(["sweep"] + ONE_THREAD + ["--workload", "lstm-lm", "--presets", "tuned", "--vary",
                                         "ranks=1,2", "--batch", "8", "--steps", "6", "--rounds",
                                         "1", "--budget", "0", "--csv", folder], timeout=300)
    check(p.returncode == 0, "sweep --vary ranks=1,2 under mpirun: " + p.stderr[-300:])
    if p.returncode == 0:
        rows = read_runs(folder)
        check(sorted(r["ranks"] for r in rows) == ["1", "2"],
              "sweep --vary ranks=1,2: rank 0 alone, then both: %s" % [r["ranks"] for r in rows])
    folder = os.path.join(tmp, "explain")
    p = mpirun(["explain"] + ONE_THREAD + ["--workload", "bilstm", "--from", "horovod-no-overlap",
                                           "--to", "tuned", "--batch", "8", "--steps", "8",
                                           "--rounds", "3", "--budget", "0", "--csv", folder],
               timeout=400)
    check(p.returncode == 0, "explain horovod-no-overlap -> tuned under mpirun: " + p.stderr[-300:])
    if p.returncode == 0:
        check("Gradient sync" in p.stdout and "Bucket size" in p.stdout,
              "explain attributes the gap to grad-sync and bucket-mb: " + p.stdout[-600:])
        rows = read_runs(folder)
        check(len(rows) == 12 and {r["ranks"] for r in rows} == {"2"},
              "explain under mpirun: 4 configurations x 3 rounds on 2 ranks (%d rows)" % len(rows))
        head = [l for l in p.stdout.splitlines() if "ms/step" in l]
        check(len(head) == 1 and all(w in head[0].split() for w in ("comm", "pack", "imbalance")),
              "explain under mpirun: the table has the ranks' phases: %s" % head)
        check_explain_phases(folder)
    p = mpirun(["sweep", "--device", "cpu", "--workload", "bilstm", "--presets", "tuned",
                "--steps", "4"],
               wrapper=[mismatch_wrapper(tmp)])
    check(p.returncode != 0 and "rank 1 runs with --batch 16" in p.stdout + p.stderr,
          "sweep under mpirun: mismatched settings refused, naming the knob")


def test_scaling(tmp):
    folder = os.path.join(tmp, "scaling")
    p = mpirun(BASE + ["--workload", "bilstm", "--batch", "8", "--steps", "8", "--scaling",
                       "--rounds", "2", "--csv", folder], timeout=300)
    check(p.returncode == 0, "run --scaling under mpirun: " + p.stderr[-300:])
    if p.returncode == 0:
        rows = read_runs(folder)
        by = sorted((r["ranks"], r["batch"]) for r in rows)
        check(by == [("1", "16"), ("1", "16"), ("1", "8"), ("1", "8"), ("2", "8"), ("2", "8")],
              "--scaling: 2 rounds of 2 ranks at 8, one process at 8 and at 16: %s" % by)
        ranked = [r for r in rows if r["ranks"] == "2"]
        ok = True
        for r in ranked:
            for k in ("weak_scaling", "strong_scaling"):
                v, lo, hi = (float(r[k]), float(r[k + "_lo"] or "nan"), float(r[k + "_hi"] or "nan"))
                ok = ok and 0 < v < 10 and (not lo == lo or lo <= v <= hi)
        check(ok and len(ranked) == 2, "--scaling: weak and strong efficiency in runs.csv, each"
              " within its interval: %s" % [(r["weak_scaling"], r["strong_scaling"]) for r in ranked])
        check("scaling      weak" in p.stdout, "--scaling: the summary says the efficiencies")
    p = subprocess.run([CLI] + BASE + ["--workload", "bilstm", "--steps", "2", "--scaling"],
                       env=ENV, capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "mpirun -np N" in p.stderr,
          "--scaling alone: exit 2, saying to start it under mpirun: " + p.stderr.strip()[:200])


def test_scaling_ranks(tmp):
    """--scaling-ranks 1,2,3 under mpirun -np 3: 2 ranks run on the first two
    (a communicator of theirs) while the third sits it out, 3 on all; each
    count with its strong baseline and its efficiencies."""
    folder = os.path.join(tmp, "scaling-ranks")
    p = mpirun(BASE + ["--workload", "bilstm", "--batch", "8", "--steps", "6",
                       "--scaling-ranks", "1,2,3", "--rounds", "1", "--csv", folder],
               np=3, timeout=300)
    check(p.returncode == 0, "run --scaling-ranks 1,2,3 under mpirun -np 3: " + p.stderr[-300:])
    if p.returncode == 0:
        rows = read_runs(folder)
        by = sorted((int(r["ranks"]), int(r["batch"])) for r in rows)
        check(by == [(1, 8), (1, 16), (1, 24), (2, 8), (3, 8)],
              "--scaling-ranks: 2 and 3 ranks at 8, one process at 8, 16 and 24: %s" % by)
        ids = {r["run_id"]: r["ranks"] for r in rows}
        seen = {}
        for s in samples(folder):
            seen.setdefault(ids[s["run_id"]], set()).add(s["rank"])
        check(seen.get("2") == {"0", "1"} and seen.get("3") == {"0", "1", "2"},
              "--scaling-ranks: the 2-rank run's rows are ranks 0 and 1's, the 3-rank run's all"
              " three's: %s" % seen)
        ok = all(0 < float(r[k]) < 10 for r in rows if r["ranks"] != "1"
                 for k in ("weak_scaling", "strong_scaling"))
        check(ok, "--scaling-ranks: weak and strong efficiency on the 2- and 3-rank rows")
    for bad in ("5", "1"):
        p = mpirun(BASE + ["--workload", "bilstm", "--steps", "2", "--scaling-ranks", bad])
        check(p.returncode == 2 and "--scaling-ranks" in p.stderr,
              "--scaling-ranks %s under -np 2: exit 2, naming the option: %s"
              % (bad, p.stderr.strip()[:200]))


def with_mpi(tmp):
    test_presets(tmp)
    test_sweep_explain(tmp)
    test_scaling(tmp)
    test_scaling_ranks(tmp)


sys.exit(run_tests(with_mpi, prefix="tach-mpi-sweep-"))
