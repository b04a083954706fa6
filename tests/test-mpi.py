#!/usr/bin/env python3
"""test-mpi.py: data-parallel ranks under mpirun, through tach-cli.

With MPI (the build's mpi option found Open MPI and mpirun is here):
  - 2 ranks at batch B give, step by step, the losses of one process at
    batch 2B (the mean of the ranks' losses, each its shard's), to
    relative 1e-4 over 20 steps, for the bilstm, the lstm-lm and the cnn
    (whose dropout masks each rank draws as its shard of the global
    batch's);
  - grad-sync per-tensor, fused and overlap, bucket-mb 1 and 25, and
    grad-progress poll and thread (a progress thread testing the buckets
    in flight) give the same bits (with two ranks every all-reduce sums
    the same two numbers); the runs end by checking that every rank's
    parameters are bit-identical (a mismatch fails the run);
  - every rank's rows reach rank 0's samples.csv, and each step's phases
    (feed, compute, sync, host, exposed communication, packing, imbalance)
    add up to its time;
  - gradient accumulation: 2 ranks at batch B, 4 micro-batches a step,
    give the losses of one process at batch 8B (relative 1e-4) for every
    workload, under accumulate-sync every and last (which agree to 1e-5;
    the runs end by checking the ranks' parameters equal), and the trace
    shows 4 all-reduces a step under every, 1 under last (no_sync);
  - sharding: shard=grads (ZeRO-2: gradients reduce-scattered, each rank
    updating its shard with its shard of Adam's state, parameters
    all-gathered) gives the losses of shard=none, step by step and rank by
    rank, within relative 1e-6 (with two ranks each reduce-scatter sums
    the same two numbers as the all-reduce: the bits are expected equal,
    the bound allows MPI another order), for bilstm (overlap, per-tensor,
    fused, accumulate-sync=last), lstm-lm (its frozen embedding whole on
    every rank), gpt (a small shape, and on 3 ranks per tensor, most
    buckets padded) and the cnn (SGD); runs.csv's held_* columns: rank 0
    holds the same parameters, 1/N of shard=none's optimiser state (within
    a tenth of it), the gradients whole plus their shard, its peak what it
    holds; the summary's held line, the algorithms line's reduce-scatters
    and all-gathers (and padding); the trace (--trace) a reduce-scatter
    and an all-gather per bucket, rank and step, no all-reduce, the
    all-gathers a track each; shard with grad-compress and with
    accumulate-sync=every refused (exit 2) naming the fix (shard=all:
    test-mpi-shard-all.py); alone,
    shard=grads runs and says it does not apply;
  - ranks started with different settings are refused (exit 2) with a
    message that names the knob;
  - a rank that fails on its own after the up-front checks tells the
    others as it ends: the job ends in seconds, not at the first step's
    120 s deadline;
  - a rank killed (SIGKILL) or stopped (SIGSTOP) mid-run is reported by
    rank 0 within the 8 s wait limit plus its slowest step (and 3 s), the
    run ending non-zero, rank 0's rows kept, the stopped rank named;
  - --trace writes Chrome Trace Event JSON with one process per rank and
    monotone timestamps on every track; the all-reduces on their own
    track (per-tensor), or one track per bucket (overlap), each slice
    apart from the next, and a counter of the bytes in flight per rank;
  - --progress: every rank writes its progress lines on mpirun's stdout
    (tach-progress.h), the last at the last step, with phases that add up
    to at most the step;
  - the reducer's device path (NCCL's on a GPU) on a test double of an
    asynchronous device, one rank, and two ranks on its one device
    refused: test-grad-device, run under mpirun.
Without MPI: a tach-cli that finds itself one of two ranks (the launcher's
variables) refuses with exit 2 and a message saying how to build with MPI.

Runs as root as CI does (OMPI_ALLOW_RUN_AS_ROOT*), on two cores; the
helpers are mpi_util.py's, the runs of several runs test-mpi-sweep.py's.

Usage: test-mpi.py PATH/TO/tach-cli mpi|nompi [PATH/TO/test-grad-device]
Exit status: 0 passed, 1 failed, 77 skipped (no mpirun).
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
from mpi_util import (BASE, CLI, ENV, GPT_SMALL, alone, check, check_tracks,  # noqa: E402
                      load_trace, losses_by_step, mismatch_wrapper, mpirun, progress_fields,
                      read_runs, run_tests, samples, write_script)

GRAD_DEVICE = sys.argv[3] if len(sys.argv) > 3 else None


def test_without_mpi(tmp):
    env = dict(ENV, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="0")
    p = subprocess.run([CLI] + BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "2"],
                       env=env, capture_output=True, text=True, timeout=60)
    check(p.returncode == 2, "without MPI: one of 2 ranks exits 2 (got %d)" % p.returncode)
    check("without MPI" in p.stderr and "-Dmpi=enabled" in p.stderr,
          "without MPI: the message says how to build with MPI: " + p.stderr.strip()[:200])


def test_equivalence(tmp, workload, batch, extra=()):
    one = os.path.join(tmp, workload + "-one")
    two = os.path.join(tmp, workload + "-two")
    p = subprocess.run([CLI] + BASE + ["--workload", workload, "--batch", str(2 * batch),
                                       "--steps", "20", "--csv", one] + list(extra),
                       env=ENV, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, workload + ": one process at batch %d runs" % (2 * batch))
    p = mpirun(BASE + ["--workload", workload, "--batch", str(batch), "--steps", "20",
                       "--csv", two] + list(extra))
    check(p.returncode == 0, workload + ": 2 ranks at batch %d run: %s" % (batch, p.stderr[-300:]))
    if p.returncode != 0:
        return
    a = losses_by_step(samples(one))
    b = losses_by_step(samples(two))
    check(sorted(a) == sorted(b) == list(range(20)), workload + ": 20 steps each")
    check(all(len(b[s]) == 2 for s in b), workload + ": a row per rank and step")
    worst = max(abs(sum(b[s]) / 2 - a[s][0]) / abs(a[s][0]) for s in a)
    check(worst < 1e-4, workload + ": 2 ranks' mean loss = one process's, worst relative %.2g"
          % worst)
    runs = read_runs(two)
    check(len(runs) == 1 and runs[0]["ranks"] == "2", workload + ": runs.csv says ranks 2")


def test_modes(tmp):
    seen = {}
    for mode in (["--grad-sync", "per-tensor"], ["--grad-sync", "fused"],
                 ["--grad-sync", "overlap", "--bucket-mb", "1"],
                 ["--grad-sync", "overlap", "--bucket-mb", "25"],
                 ["--grad-sync", "overlap", "--bucket-mb", "1", "--grad-progress", "thread"]):
        folder = os.path.join(tmp, "mode-" + "-".join(m.strip("-") for m in mode))
        p = mpirun(BASE + ["--workload", "lstm-lm", "--batch", "8", "--steps", "10",
                           "--csv", folder] + mode)
        check(p.returncode == 0, " ".join(mode) + " runs (parameters checked equal on every"
              " rank): " + p.stderr[-300:])
        if p.returncode != 0:
            continue
        rows = samples(folder)
        seen[" ".join(mode)] = [(r["step"], r["rank"], r["loss"]) for r in rows]
        # Phases add up to the step (the CSV's figures are rounded to
        # 0.05%, so allow that much of each).
        worst = 0.0
        for r in rows:
            parts = sum(float(r[k]) for k in ("feed_ms", "compute_ms", "sync_ms", "host_ms",
                                              "comm_ms", "pack_ms", "imbalance_ms"))
            worst = max(worst, abs(parts - float(r["step_ms"])) / float(r["step_ms"]))
        check(worst < 0.01, " ".join(mode) + ": phases add up to each step (worst %.2g)"
              % worst)
        check({r["rank"] for r in rows} == {"0", "1"}, " ".join(mode) + ": both ranks' rows")
    values = list(seen.values())
    check(len(values) == 5 and all(v == values[0] for v in values),
          "grad-sync, bucket-mb and grad-progress give the same losses, bit for bit")


def test_accumulate(tmp, workload, batch, extra=()):
    one = os.path.join(tmp, workload + "-acc-one")
    p = subprocess.run([CLI] + BASE + ["--workload", workload, "--batch", str(8 * batch),
                                       "--steps", "6", "--csv", one] + list(extra),
                       env=ENV, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, workload + ": one process at batch %d runs" % (8 * batch))
    a = losses_by_step(samples(one)) if p.returncode == 0 else {}
    seen = {}
    for sync in ("every", "last"):
        folder = os.path.join(tmp, workload + "-acc-" + sync)
        trace = os.path.join(tmp, workload + "-acc-" + sync + ".json")
        p = mpirun(BASE + ["--workload", workload, "--batch", str(batch), "--steps", "6",
                           "--accumulate", "4", "--accumulate-sync", sync, "--grad-sync",
                           "fused", "--csv", folder, "--trace", trace] + list(extra))
        what = "%s: 2 ranks x 4 micro-batches of %d, accumulate-sync=%s" % (workload, batch, sync)
        check(p.returncode == 0, what + " runs (the ranks' parameters checked equal): "
              + p.stderr[-300:])
        if p.returncode != 0 or not a:
            continue
        b = seen[sync] = losses_by_step(samples(folder))
        check(sorted(b) == sorted(a) == list(range(6)), what + ": a sample per update")
        worst = max(abs(sum(b[s]) / 2 - a[s][0]) / abs(a[s][0]) for s in a)
        check(worst < 1e-4, what + ": the ranks' mean loss = one process's at batch %d, worst"
              " relative %.2g" % (8 * batch, worst))
        per_step = {}
        for e in load_trace(trace):
            # The flights (tracks 2 on), not the phase of waiting for them.
            if e["ph"] == "X" and e["tid"] >= 2 and e["name"].startswith("all-reduce"):
                key = (e["pid"], e["args"]["step"])
                per_step[key] = per_step.get(key, 0) + 1
        want = 4 if sync == "every" else 1
        check(len(per_step) == 12 and set(per_step.values()) == {want},
              what + ": %d all-reduce(s) a step on each rank: %s" % (want, per_step))
    if len(seen) == 2:
        e, l_ = seen["every"], seen["last"]
        worst = max(abs(x - y) / abs(x) for s in e for x, y in zip(e[s], l_[s]))
        check(worst < 1e-5, workload + ": accumulate-sync every and last give the same losses,"
              " worst relative %.2g" % worst)


def shard_losses(folder):
    return {(int(r["step"]), r["rank"]): float(r["loss"]) for r in samples(folder)}


def shard_pair(tmp, tag, workload, batch, extra, np=2):
    """Runs shard=none and shard=grads alike; returns their folders and
    stdout, or None where one failed."""
    out = {}
    for shard in ("none", "grads"):
        folder = os.path.join(tmp, "%s-%s" % (tag, shard))
        trace = ["--trace", folder + ".json"] if shard == "grads" else []
        p = mpirun(BASE + ["--workload", workload, "--batch", str(batch), "--steps", "6",
                           "--shard", shard, "--csv", folder] + trace + extra, np=np, timeout=180)
        check(p.returncode == 0, "%s: shard=%s runs on %d ranks (parameters checked equal"
              " on every rank): %s" % (tag, shard, np, p.stderr[-300:]))
        if p.returncode != 0:
            return None
        out[shard] = (folder, p.stdout)
    return out


def check_shard_trace(events, tag, np=2):
    """The trace of a shard=grads run: per rank and step as many
    reduce-scatters as all-gathers (one a bucket) and no all-reduce, the
    all-gathers a track each, named so."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    per = {}
    tracks = {}
    for e in events:
        if e["ph"] == "X" and e["tid"] >= 2:
            kind = e["name"].split()[0]
            key = (e["pid"], e["args"]["step"])
            per.setdefault(key, {}).setdefault(kind, 0)
            per[key][kind] += 1
            tracks.setdefault(kind, set()).add((e["pid"], e["tid"]))
    counts = {k: (v.get("reduce-scatter", 0), v.get("all-gather", 0), v.get("all-reduce", 0))
              for k, v in per.items()}
    check(len(counts) == 6 * np
          and all(rs == ag > 0 and ar == 0 for rs, ag, ar in counts.values()),
          tag + ": the trace has a reduce-scatter and an all-gather per bucket, rank and step,"
          " no all-reduce: %s" % sorted(set(counts.values())))
    gathers = tracks.get("all-gather", set())
    check(gathers and len(gathers) == np * max(c[1] for c in counts.values())
          and all(names.get(t, "").startswith("all-gather, bucket") for t in gathers)
          and all(names.get(t, "").startswith("reduce-scatter")
                  for t in tracks.get("reduce-scatter", set())),
          tag + ": the all-gathers on a track each, the reduce-scatters on their own: %s"
          % sorted(set(names.values())))
    check_tracks(events, tag + " trace")


def test_shard(tmp, tag, workload, batch, extra=(), adam=True, np=2):
    pair = shard_pair(tmp, tag, workload, batch, list(extra), np)
    if pair is None:
        return
    a, b = shard_losses(pair["none"][0]), shard_losses(pair["grads"][0])
    check(sorted(a) == sorted(b) and len(a) == 6 * np,
          tag + ": 6 steps on each of %d ranks, both" % np)
    worst = max(abs(a[k] - b[k]) / max(abs(a[k]), 1e-30) for k in a)
    check(worst <= 1e-6, tag + ": shard=grads gives shard=none's losses, worst relative %.2g"
          % worst)
    none, grads = read_runs(pair["none"][0])[0], read_runs(pair["grads"][0])[0]
    held = {k: (float(none[k]), float(grads[k]))
            for k in ("held_param_bytes", "held_grad_bytes", "held_state_bytes",
                      "held_peak_bytes")}
    check(held["held_param_bytes"][0] == held["held_param_bytes"][1] > 0,
          tag + ": every rank still holds every parameter: %s" % (held["held_param_bytes"],))
    n, g = held["held_state_bytes"]
    if adam:
        check(n > 0 and 0.9 / np <= g / n <= 1.1 / np,
              tag + ": shard=grads holds %.3f of shard=none's optimiser state (%d of %d bytes)"
              % (g / n if n else float("nan"), g, n))
    else:
        check(n == g == 0, tag + ": SGD holds no optimiser state either way")
    gn, gg = held["held_grad_bytes"]
    check(gn < gg <= gn * (1 + 1.1 / np),
          tag + ": the gradients stay whole, plus their shard (%d against %d bytes)" % (gg, gn))
    check(all(abs(sum(held[k][i] for k in ("held_param_bytes", "held_grad_bytes",
                                           "held_state_bytes")) - held["held_peak_bytes"][i]) < 1
              for i in (0, 1)),
          tag + ": the peak is what is held, everything allocated at set-up")
    out = pair["grads"][1]
    check("  held         parameters" in out, tag + ": the summary prints what a rank holds")
    check("reduce-scatter" in out and "all-gather" in out,
          tag + ": the algorithms line names the reduce-scatters and all-gathers")
    check_shard_trace(load_trace(pair["grads"][0] + ".json"), tag, np)
    return out
    return grads


def test_shard_refusals(tmp):
    cases = [
        (["--shard", "grads", "--grad-compress", "bf16"], "grad-compress", "shard with grad-compress"),
        (["--shard", "grads", "--accumulate", "4", "--accumulate-sync", "every"],
         "--accumulate-sync last", "shard with accumulate-sync=every"),
    ]
    for args, words, what in cases:
        p = mpirun(BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "3"] + args,
                   timeout=60)
        said = [line for line in p.stderr.splitlines() if line.startswith("tach-cli: ")
                and "note:" not in line]
        check(p.returncode == 2 and words in p.stderr,
              what + ": refused, exit 2, saying '%s' (got %d: %s)"
              % (words, p.returncode, said[0] if said else p.stderr.strip()[-300:]))
    p = alone(["--workload", "bilstm", "--batch", "4", "--steps", "3", "--shard", "grads"],
              timeout=60)
    check(p.returncode == 0 and "shard" in p.stderr and "only between ranks" in p.stderr,
          "alone, shard=grads runs as shard=none and says why it does not apply: "
          + p.stderr.strip()[:300])


def test_mismatch(tmp):
    wrapper = mismatch_wrapper(tmp)
    p = mpirun(BASE + ["--workload", "bilstm", "--steps", "4"], wrapper=[wrapper])
    out = p.stdout + p.stderr
    check(p.returncode != 0, "mismatched settings: non-zero exit")
    check("rank 1 runs with --batch 16, rank 0 with --batch 8" in out,
          "mismatched settings: the message names the knob: " + out.strip()[:200])


# Rank 0 waits this long on a rank past step 0 before it names it
# (tach-ranks.c, timeout_later_s).
WAIT_LIMIT_S = 8.0


def test_lost_rank(tmp, signal_name):
    """Rank 1 is sent SIG<signal_name> once its progress lines show it past
    step 1 (so rank 0 waits on it with the later steps' limit, however long
    set-up took on a loaded machine).  The time measured runs from the
    signal to the line of rank 0's that reports the lost rank, on this
    script's clock, and not to mpirun's exit: tearing the job down takes
    seconds more on a loaded machine and an ASan build, which says nothing
    about the engine.  Its bound is the wait limit, plus the slowest step
    rank 0 reported (the step it was in when the rank went) plus 3 s for
    the line to come through mpirun (a killed rank is told by mpirun's
    SIGTERM, 3 s after the loss here): a load slows the steps, which the
    bound follows, and not the limit, which is rank 0's clock; a run that
    hangs, or waits longer than the limit, fails."""
    wrapper = os.path.join(tmp, "lose.sh")
    pid_file = os.path.join(tmp, "rank1.pid")
    if os.path.exists(pid_file):
        os.remove(pid_file)
    write_script(tmp, "lose.sh", '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then'
                 ' echo $$ > "%s"; fi\nexec "$@"\n' % pid_file)
    folder = os.path.join(tmp, "lost-" + signal_name)
    report = "rank 1 did not reach step" if signal_name == "STOP" else "mpirun is ending the job"
    cmd = ["mpirun", "--oversubscribe", "-np", "2", wrapper, CLI] + BASE + [
        "--workload", "bilstm", "--batch", "8", "--steps", "10000000", "--progress",
        "--csv", folder]
    # The progress lines are read from stdout alone: mpirun hands on its
    # ranks' stdout and stderr as it reads them, and merged into one pipe
    # the two cut each other's lines.  stderr, where the lost rank is
    # reported, is read on a thread of its own, each line with its time.
    # Open MPI ends the job a lost rank leaves by SIGCONT, then SIGTERM a
    # second later and SIGKILL a second after that: rank 0's rows must be
    # written in that second, a 0.4 s listen for rank 1 included, which a
    # loaded machine's stall can take (1.4-1.9 s after the kill, the SIGKILL
    # 0.6 s later, on 2 cores with one busy).  3 s, still short of the wait
    # limit, so that mpirun's SIGTERM still tells rank 0 of a killed rank.
    env = dict(ENV, OMPI_MCA_odls_base_sigkill_timeout="3")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    # The run would take hours: one that never reports the loss is ended here.
    watchdog = threading.Timer(240.0, p.kill)
    watchdog.start()
    lines = []
    errors = []

    def read_errors():
        for line in p.stderr:
            errors.append((time.monotonic(), line))

    reader = threading.Thread(target=read_errors)
    reader.start()
    lost = None
    slowest_s = 0.0
    try:
        for line in p.stdout:
            fields = progress_fields(line)
            if fields is None:
                lines.append(line)
                continue
            if fields["rank"] == "0" and fields["step_ms"] != "nan":
                slowest_s = max(slowest_s, float(fields["step_ms"]) / 1e3)
            if lost is None and fields["rank"] == "1" and int(fields["step"]) >= 2:
                with open(pid_file) as f:
                    os.kill(int(f.read()), getattr(signal, "SIG" + signal_name))
                lost = time.monotonic()
        p.wait()
        reader.join()
    finally:
        watchdog.cancel()
    reported = next((t for t, line in errors if lost is not None and t >= lost and report in line),
                    None)
    out = "".join(line for line in lines if "tach-progress " not in line)
    out += "".join(line for _, line in errors)
    check(lost is not None, signal_name + ": rank 1 reached step 2 and was signalled"
          + ("" if lost is not None else ": " + out.strip()[-300:]))
    if lost is None:
        return
    check(p.returncode != 0, signal_name + ": non-zero exit")
    bound = WAIT_LIMIT_S + slowest_s + 3.0
    check(reported is not None and reported - lost < bound,
          signal_name + ": the lost rank reported %s after it was lost (bound %.1f s: the %.0f s"
          " wait limit, the slowest step %.1f s, 3 s)"
          % ("never" if reported is None else "%.1f s" % (reported - lost), bound, WAIT_LIMIT_S,
             slowest_s))
    rows = samples(folder) if os.path.exists(os.path.join(folder, "samples.csv")) else []
    check(len(rows) > 0, signal_name + ": rank 0's rows kept (%d)" % len(rows))
    if signal_name == "STOP":
        check("rank 1 did not reach step" in out, signal_name + ": the message names rank 1: "
              + out.strip()[:300])
    else:
        check("mpirun is ending the job" in out and "rank" in out,
              signal_name + ": the message says a rank was lost: " + out.strip()[:300])


def test_rank_fails_alone(tmp):
    """Rank 0 fails on its own after the up-front checks (a TACH_CPU_ISA
    that names no level, given to rank 0 alone: its backend does not open
    and its run fails before the first step), while rank 1 waits for it in
    the run's first collectives, whose deadline is 120 s (the slowest
    rank's set-up): rank 0 tells the others as it ends, and the job ends
    within 60 s (a hang's bound; it takes seconds), both ranks saying
    why."""
    wrapper = write_script(tmp, "fail-0.sh", '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 0 ];'
                           ' then export TACH_CPU_ISA=none-such; fi\nexec "$@"\n')
    what = "rank 0 fails alone after the checks"
    try:
        p = mpirun(BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "20"],
                   wrapper=[wrapper], timeout=60)
    except subprocess.TimeoutExpired:
        check(False, what + ": the job did not end within 60 s (rank 1 waited for rank 0)")
        return
    out = p.stdout + p.stderr
    check(p.returncode != 0 and "TACH_CPU_ISA is 'none-such'" in out
          and "rank 0 failed (its own message is above)" in out,
          what + ": the job ends non-zero within 60 s, rank 0 saying why and rank 1 naming it"
          " (exit %d): %s" % (p.returncode, out.strip()[-400:]))


def test_trace(tmp):
    path = os.path.join(tmp, "trace.json")
    p = mpirun(BASE + ["--workload", "bilstm", "--batch", "8", "--steps", "12",
                       "--trace", path, "--grad-sync", "per-tensor"])
    check(p.returncode == 0, "--trace: the run ends well: " + p.stderr[-300:])
    if p.returncode != 0:
        return
    events = load_trace(path)
    names = {(e["pid"], e["args"]["name"]) for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    check({pid for pid, _ in names} == {0, 1}, "--trace: one process per rank: %s" % names)
    check_tracks(events, "--trace")
    slices = [e for e in events if e["ph"] == "X"]
    check(all(e["dur"] >= 0 for e in slices) and len(slices) > 0, "--trace: slices")
    check({e["name"] for e in slices} >= {"step", "compute", "all-reduce"},
          "--trace: steps, compute and all-reduces: %s" % sorted({e["name"] for e in slices}))
    tracks = {(e["pid"], e["args"]["name"]) for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    check({(0, "all-reduces"), (1, "all-reduces")} <= tracks,
          "--trace: per-tensor's all-reduces on one track per rank: %s" % sorted(tracks))

    # Overlap, with two buckets (a 3.2 MB and a small one at bucket-mb 1):
    # a track per bucket on every rank, each bucket's all-reduce on it
    # every step, and the bytes in flight.
    path = os.path.join(tmp, "trace-overlap.json")
    p = mpirun(BASE + ["--workload", "bilstm", "--hidden", "200", "--batch", "4", "--steps", "6",
                       "--grad-sync", "overlap", "--bucket-mb", "1", "--trace", path])
    check(p.returncode == 0, "--trace overlap: the run ends well: " + p.stderr[-300:])
    if p.returncode != 0:
        return
    events = load_trace(path)
    check_tracks(events, "--trace overlap")
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    for pid in (0, 1):
        buckets = {tid for (p_, tid), name in tracks.items()
                   if p_ == pid and name.startswith("all-reduce, bucket")}
        check(len(buckets) == 2, "--trace overlap: rank %d has a track per bucket: %s"
              % (pid, sorted(tracks.items())))
        for tid in buckets:
            steps = {e["args"]["step"] for e in events
                     if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid}
            check(steps == set(range(6)), "--trace overlap: rank %d, track %d: an all-reduce"
                  " every step: %s" % (pid, tid, sorted(steps)))
        flights = [e for e in events if e["ph"] == "X" and e["pid"] == pid and e["tid"] in buckets]
        values = [e["args"]["value"] for e in events
                  if e["ph"] == "C" and e["pid"] == pid and e["name"] == "bytes in flight"]
        check(len(values) == 2 * len(flights) and min(values) >= 0 and values[-1] == 0
              and max(values) > 3e6,
              "--trace overlap: rank %d's bytes in flight rise with each launch and fall back"
              " to 0 (%d points for %d all-reduces, peak %.0f)"
              % (pid, len(values), len(flights), max(values) if values else -1))


def test_grad_device():
    for np, what in ((1, "the device path on one rank"),
                     (2, "two ranks on one device refused")):
        p = subprocess.run(["mpirun", "--oversubscribe", "-np", str(np), GRAD_DEVICE], env=ENV,
                           capture_output=True, text=True, timeout=180)
        check(p.returncode == 0, "%s (test-grad-device, %d rank(s)): exit %d: %s"
              % (what, np, p.returncode, (p.stdout + p.stderr).strip()[-600:]))


def test_progress(tmp):
    p = mpirun(BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "40", "--progress"])
    check(p.returncode == 0, "--progress: exit 0 (got %d: %s)" % (p.returncode, p.stderr[-300:]))
    last = {}
    # A line taken when no step has ended since the last one says how far
    # the rank got, with no figures (window=0: tach_progress_take_line), as
    # the end's line can be on a slow build: the figures are the last
    # window's, as the window reads them.
    measured = {}
    for line in p.stdout.splitlines():
        fields = progress_fields(line)
        if fields is not None:
            last[int(fields["rank"])] = fields
            if fields["window"] != "0":
                measured[int(fields["rank"])] = fields
    check(sorted(last) == [0, 1], "--progress: both ranks' lines on stdout: %s" % sorted(last))
    for rank, f in sorted(last.items()):
        check(f["ranks"] == "2" and f["step"] == "40" and f["steps"] == "40",
              "--progress: rank %d's last line at step 40 of 40: %s" % (rank, f))
        f = measured.get(rank)
        check(f is not None, "--progress: rank %d has a line with figures" % rank)
        if f is None:
            continue
        parts = sum(float(f[k]) for k in ("feed_ms", "compute_ms", "sync_ms", "host_ms",
                                          "comm_ms", "pack_ms"))
        check(float(f["rate"]) > 0 and parts <= float(f["step_ms"]) * 1.001,
              "--progress: rank %d's rate and phases within its step: %s" % (rank, f))


def with_mpi(tmp):
    test_equivalence(tmp, "bilstm", 16)
    test_equivalence(tmp, "lstm-lm", 8)
    # Synthetic images (Fashion-MNIST is 28x28): no long test set.
    test_equivalence(tmp, "cnn", 8, ["--input", "16x16x1"])
    test_modes(tmp)
    test_accumulate(tmp, "bilstm", 4)
    test_accumulate(tmp, "lstm-lm", 4)
    test_accumulate(tmp, "cnn", 4, ["--input", "16x16x1"])
    test_shard(tmp, "bilstm", "bilstm", 8)
    test_shard(tmp, "bilstm-per-tensor", "bilstm", 8, ["--grad-sync", "per-tensor"])
    test_shard(tmp, "bilstm-fused", "bilstm", 8, ["--grad-sync", "fused"])
    test_shard(tmp, "bilstm-accumulate-last", "bilstm", 4,
               ["--accumulate", "4", "--accumulate-sync", "last"])
    # lstm-lm's embedding is frozen: no gradient, no state, whole on
    # every rank.
    test_shard(tmp, "lstm-lm", "lstm-lm", 4)
    test_shard(tmp, "gpt", "gpt", 2, GPT_SMALL)
    test_shard(tmp, "cnn", "cnn", 4, ["--input", "16x16x1"], adam=False)
    # 3 ranks: gpt's tensors one bucket each, most of them padded
    # (their padding read from the next tensor's gradients).
    out = test_shard(tmp, "gpt-3-ranks", "gpt", 2, GPT_SMALL + ["--grad-sync", "per-tensor"],
                     np=3)
    check(out is not None and "padded to a multiple of 3 floats" in out,
          "gpt on 3 ranks: the algorithms line says which buckets were padded")
    test_shard_refusals(tmp)
    test_mismatch(tmp)
    test_rank_fails_alone(tmp)
    test_lost_rank(tmp, "STOP")
    test_lost_rank(tmp, "KILL")
    test_trace(tmp)
    test_progress(tmp)
    if GRAD_DEVICE is not None:
        test_grad_device()


sys.exit(run_tests(with_mpi, test_without_mpi))
