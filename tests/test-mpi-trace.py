#!/usr/bin/env python3
"""test-mpi-trace.py: the trace of data-parallel ranks, checked by a
validator of its own (standard library only), under mpirun -np 2:
  - every track's slices nest (each slice on a track ends before the next
    one starts, or inside the one that holds it), read as Perfetto reads
    them, in integer nanoseconds;
  - the ranks are on one clock: each step's all-reduces overlap on both
    ranks (a blocking all-reduce completes on no rank before every rank
    has launched it), under grad-sync fused, per-tensor and overlap;
  - the phases are placed at their real times: no all-reduce lands inside
    a compute slice of its rank (they used to be laid end to end, the
    all-reduces at their real times, inside compute).
  - a rank killed mid-run: the survivor keeps its rows, trace and
    all-reduces, and names the rank lost; mpirun sent SIGTERM (its end
    of a job): the run is cancelled, no rank failed;
  - SIGINT to each rank (the window's Stop), or to one: the ranks stop
    after the same step and end as a whole run ends, without mpirun's end
    of a job: every rank's rows in rank 0's folder, cancelled, mpirun's
    exit 0, within a bound far below the 200 s mpirun would sleep at a
    grace of 100 s;
  - a usage error of every rank's command line is said once.

Runs as root as CI does (OMPI_ALLOW_RUN_AS_ROOT*), on two cores.

Usage: test-mpi-trace.py PATH/TO/tach-cli mpi|nompi
Exit status: 0 passed, 1 failed, 77 skipped (no mpirun, or no MPI).
"""
import csv
import decimal
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
from mpi_util import BASE, CLI, ENV, check, mpirun, run_tests, write_script  # noqa: E402

# mpirun's own end of a job (kill -TERM or Ctrl+C of mpirun, or a rank
# lost) is Open MPI's: SIGCONT to the ranks, SIGTERM a second later and
# SIGKILL a second after that (odls_base_sigkill_timeout), mpirun asleep
# in between; rank 0's rows must be written within that second.  The
# window's Stop no longer goes that way (SIGINT to each rank, as
# test_ranks_stopped sends, which has no such deadline), so these tests
# give the ranks 3 s rather than hold them to a second that a loaded CI
# machine's stall takes: on the 2-core machine, one core busy, a killed
# rank's survivor wrote its rows 1.4-1.9 s after the kill and the SIGKILL
# came 0.6 s later.  3 s is still short of rank 0's own 8 s wait limit, so
# that mpirun's SIGTERM still tells it of a killed rank (not so 10 s).  A
# sanitizer build (build-asan) ends a run several times slower: its rows
# took longer than a second after mpirun's SIGTERM on an idle machine, so
# the stop (no rank killed, no wait limit at stake) gives it 10 s there.
SANITIZED = "libasan" in subprocess.run(["ldd", CLI], capture_output=True, text=True).stdout
LOST_ENV = dict(ENV, OMPI_MCA_odls_base_sigkill_timeout="3")
STOP_ENV = dict(ENV, OMPI_MCA_odls_base_sigkill_timeout="10" if SANITIZED else "3")
# Slack for the clocks' offset, measured to within half a round trip
# between two processes of one machine (microseconds); the misalignment
# this test catches was tens to hundreds of milliseconds.
CLOCK_SLACK_NS = 100_000


# ------------------------------------------------------------ the validator

def ns(value):
    """Microseconds as JSON wrote them, in integer nanoseconds."""
    return int((decimal.Decimal(value) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))


def rows_of(folder, name):
    """A CSV file's rows, none when it is not there."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(path):
    with open(path) as f:
        return json.load(f, parse_float=decimal.Decimal)["traceEvents"]


def track_names(events):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def slices(events):
    """(pid, tid) -> [(start ns, end ns, name, step)], by start."""
    tracks = {}
    for e in events:
        if e["ph"] == "X":
            start = ns(e["ts"])
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (start, start + ns(e["dur"]), e["name"], e["args"]["step"]))
    for sl in tracks.values():
        sl.sort(key=lambda s: (s[0], -s[1]))
    return tracks


def nesting_faults(events):
    """(pid, tid) -> the slices that overlap a slice they are not inside."""
    faults = {}
    for key, sl in slices(events).items():
        open_ends = []
        bad = 0
        for start, end, _, _ in sl:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                bad += 1
                continue
            open_ends.append(end)
        faults[key] = bad
    return faults


def flights(events):
    """pid -> {(track name, step): [(start, end)] in launch order}."""
    names = track_names(events)
    out = {}
    for (pid, tid), sl in slices(events).items():
        name = names.get((pid, tid), "")
        if not name.startswith("all-reduce"):
            continue
        for start, end, _, step in sl:
            out.setdefault(pid, {}).setdefault((name, step), []).append((start, end))
    return out


def unaligned_steps(events):
    """The (track, step, k) whose k-th all-reduce does not overlap on every
    rank, and how many were compared."""
    by_rank = flights(events)
    bad, compared = [], 0
    keys = set.intersection(*(set(f) for f in by_rank.values())) if by_rank else set()
    for key in sorted(keys):
        lists = [by_rank[pid][key] for pid in sorted(by_rank)]
        for k in range(min(len(l) for l in lists)):
            latest_start = max(l[k][0] for l in lists)
            earliest_end = min(l[k][1] for l in lists)
            compared += 1
            if latest_start > earliest_end + CLOCK_SLACK_NS:
                bad.append((key, k, (latest_start - earliest_end) / 1e6))
    return bad, compared


def inside_compute(events, overlap):
    """The steps whose all-reduces began (per-tensor, fused: the first
    launch, where the step starts waiting for them) or ended (overlap: the
    last landing, where the step's wait for them ends) inside a compute
    slice of their rank, by more than a microsecond (the rounding)."""
    names = track_names(events)
    tracks = slices(events)
    per_step = {}
    for pid, by_key in flights(events).items():
        for (_, step), fl in by_key.items():
            edge = max(end for _, end in fl) if overlap else min(start for start, _ in fl)
            old = per_step.get((pid, step))
            per_step[(pid, step)] = edge if old is None else (max if overlap else min)(old, edge)
    bad = []
    for (pid, tid), sl in tracks.items():
        if names.get((pid, tid)) != "phases":
            continue
        for start, end, name, step in sl:
            edge = per_step.get((pid, step))
            if name == "compute" and edge is not None and start + 1000 < edge < end - 1000:
                bad.append((pid, step, (edge - start) / 1e6, (end - edge) / 1e6))
    return bad


# ------------------------------------------------------------------ tests

def long_run(env, extra, wrapper=None):
    """mpirun -np 2 of a run that would take hours, with --progress (stderr
    on stdout), and the watchdog that ends it after 240 s if nothing
    else does."""
    p = subprocess.Popen(["mpirun", "--oversubscribe", "-np", "2"]
                         + ([wrapper] if wrapper is not None else []) + [CLI] + BASE
                         + ["--workload", "bilstm", "--batch", "8", "--steps", "10000000",
                            "--progress"] + extra,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(240.0, p.kill)
    watchdog.start()
    return p, watchdog


def test_trace(tmp, mode, extra=()):
    path = os.path.join(tmp, "trace-%s.json" % mode)
    p = mpirun(BASE + ["--workload", "bilstm", "--hidden", "200", "--batch", "4", "--steps", "12",
                       "--grad-sync", mode, "--trace", path] + list(extra))
    check(p.returncode == 0, "%s: 2 ranks run with --trace: %s" % (mode, p.stderr[-300:]))
    if p.returncode != 0:
        return
    events = load(path)
    faults = nesting_faults(events)
    check(len(faults) >= 6 and all(n == 0 for n in faults.values()),
          "%s: every track's slices nest (%d tracks, badly nested slices by track: %s)"
          % (mode, len(faults), {k: n for k, n in faults.items() if n}))
    bad, compared = unaligned_steps(events)
    steps = {step for f in flights(events).values() for (_, step) in f}
    check(compared >= 12 and steps == set(range(12)) and not bad,
          "%s: each step's all-reduces overlap on both ranks (%d compared, steps %s; apart by"
          " ms: %s)" % (mode, compared, sorted(steps), bad[:5]))
    inside = inside_compute(events, mode == "overlap")
    check(not inside, "%s: the wait for each step's all-reduces %s inside no compute slice"
          " (rank, step, ms of compute before and after it: %s)"
          % (mode, "ends" if mode == "overlap" else "starts", inside[:5]))


def test_killed(tmp, lost):
    """Rank @lost is killed (SIGKILL) once the progress lines show both ranks
    past the warm-up with timed steps (a line's step counts the warm-up's
    too; the survivor's lines can trail the lost rank's): the survivor writes what it has, its steps and its all-reduces
    (rank 0 into the folder and trace asked for, rank 1 beside them, since
    rank 0 may be the one lost), and its message names the rank lost."""
    pid_file = os.path.join(tmp, "lost.pid")
    wrapper = write_script(tmp, "lose.sh", '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = %d ];'
                           ' then echo $$ > "%s"; fi\nexec "$@"\n' % (lost, pid_file))
    folder = os.path.join(tmp, "killed-%d" % lost)
    trace = os.path.join(tmp, "killed-%d.json" % lost)
    p, watchdog = long_run(LOST_ENV, ["--csv", folder, "--trace", trace], wrapper)
    killed = False
    reached = [0, 0]
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if killed or not line.startswith("tach-progress "):
                continue
            fields = dict(w.split("=", 1) for w in line.split()[1:])
            if fields.get("rank") in ("0", "1"):
                reached[int(fields["rank"])] = max(reached[int(fields["rank"])],
                                                   int(fields.get("step", 0)))
            # A progress line's step counts the 2 warm-up steps too: both
            # ranks are past them and have timed steps of their own, so the
            # survivor has steps to keep whenever its rows are written.
            if reached[lost] >= 5 and reached[1 - lost] >= 4:
                with open(pid_file) as f:
                    os.kill(int(f.read()), signal.SIGKILL)
                killed = True
        p.wait()
    finally:
        watchdog.cancel()
    out = "".join(line for line in lines if not line.startswith("tach-progress "))
    check(killed and p.returncode != 0, "rank %d killed: the run ends non-zero: %s"
          % (lost, out.strip()[-300:]))
    survivor = 1 - lost
    if survivor != 0:
        folder = os.path.join(folder, "rank%d" % survivor)
        trace = os.path.join(tmp, "killed-%d.rank%d.json" % (lost, survivor))
    rows = rows_of(folder, "samples.csv")
    check(len(rows) > 2 and {r["rank"] for r in rows} == {str(survivor)},
          "rank %d killed: rank %d's rows kept in %s (%d, ranks %s)"
          % (lost, survivor, os.path.relpath(folder, tmp), len(rows),
             sorted({r["rank"] for r in rows})))
    events = load(trace) if os.path.exists(trace) else []
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M"}
    counters = [e for e in events if e["ph"] == "C" and e["name"] == "bytes in flight"]
    steps = [e for e in events if e["ph"] == "X" and e["name"] == "step"]
    check((survivor, "rank %d" % survivor) in names
          and any(pid == survivor and n.startswith("all-reduce") for pid, n in names)
          and len(counters) > 0 and len(steps) > 0 and {e["pid"] for e in steps} == {survivor},
          "rank %d killed: rank %d's trace %s has its steps, its all-reduces and bytes in flight"
          " (%s, %d steps, %d counter points)"
          % (lost, survivor, os.path.basename(trace), sorted(names), len(steps), len(counters)))
    check(all(n == 0 for n in nesting_faults(events).values()),
          "rank %d killed: the survivor's trace nests" % lost)
    runs = rows_of(folder, "runs.csv")
    check([r["state"] for r in runs] == ["failed"], "rank %d killed: the run failed: %s"
          % (lost, [r["state"] for r in runs]))
    check("rank %d did not answer the others' stop" % lost in out, "rank %d killed: rank %d's message names it: %s"
          % (lost, survivor, out.strip()[-400:]))


def test_stopped(tmp):
    """mpirun sent SIGTERM once both ranks are past step 2, as the window's
    Escape and kill -TERM do: every rank stops, and the run is cancelled,
    not failed (mpirun passes the stop on as it does a lost rank's end).
    mpirun's own status is Open MPI's (1 whenever it is signalled), so only
    the results say how it ended."""
    folder = os.path.join(tmp, "stopped")
    p, watchdog = long_run(STOP_ENV, ["--csv", folder])
    past = set()
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if len(past) == 2 or not line.startswith("tach-progress "):
                continue
            fields = dict(w.split("=", 1) for w in line.split()[1:])
            if int(fields.get("step", 0)) >= 2:
                past.add(fields.get("rank"))
                if len(past) == 2:
                    p.send_signal(signal.SIGTERM)
        p.wait()
    finally:
        watchdog.cancel()
    out = "".join(line for line in lines if not line.startswith("tach-progress "))
    runs = rows_of(folder, "runs.csv")
    check(len(past) == 2 and [r["state"] for r in runs] == ["cancelled"],
          "mpirun stopped: runs.csv says cancelled: %s: %s"
          % ([r["state"] for r in runs], out.strip()[-300:]))
    # Open MPI's own diagnostics open with a bracket ("[host:pid] ...", and
    # libevent's "[warn] Epoll MOD(1) on fd 23 failed ..." as mpirun tears
    # the job down): they are not Tach's, and say nothing of a rank failing.
    tach = "".join(line for line in out.splitlines(True) if not line.startswith("["))
    check("stopped after" in tach and "did not answer" not in tach and "failed" not in tach,
          "mpirun stopped: rank 0 says it stopped, and no rank that it failed: "
          + tach.strip()[-300:])


def test_ranks_stopped(tmp, grad_sync, targets):
    """SIGINT to the ranks @targets once both are past step 2, as the
    window's Stop sends to each (Ctrl+C alone): the ranks agree on a step
    to stop after (a rank signalled alone too: stopping by itself, it
    would leave the other in an all-reduce it never joins), finish it, and
    the run ends as a whole run ends, MPI_Finalize and exit 0, with no
    deadline.  Open MPI's end of a job is made to take 200 s here
    (odls_base_sigkill_timeout 100, which mpirun sleeps twice, whatever
    the ranks do): an MPI_Abort, a rank's non-zero exit or mpirun's
    SIGTERM would hold mpirun past the 60 s this waits, a hang bound, not
    a timing (a stop takes a step or two)."""
    folder = os.path.join(tmp, "ranks-stopped-%s-%d" % (grad_sync, len(targets)))
    wrapper = write_script(tmp, "pids.sh", '#!/bin/sh\necho $$ > "%s/rank$OMPI_COMM_WORLD_RANK'
                           '.pid"\nexec "$@"\n' % tmp)
    for r in (0, 1):
        if os.path.exists(os.path.join(tmp, "rank%d.pid" % r)):
            os.remove(os.path.join(tmp, "rank%d.pid" % r))
    env = dict(ENV, OMPI_MCA_odls_base_sigkill_timeout="100")
    p, watchdog = long_run(env, ["--grad-sync", grad_sync, "--csv", folder], wrapper)
    past = set()
    lines = []
    stopped = None
    try:
        for line in p.stdout:
            lines.append(line)
            if stopped is not None or not line.startswith("tach-progress "):
                continue
            fields = dict(w.split("=", 1) for w in line.split()[1:])
            if int(fields.get("step", 0)) >= 2:
                past.add(fields.get("rank"))
            if len(past) == 2:
                for r in targets:
                    with open(os.path.join(tmp, "rank%d.pid" % r)) as f:
                        os.kill(int(f.read()), signal.SIGINT)
                stopped = time.monotonic()
                # The hang bound, from the stop: the ranks' own end.
                watchdog.cancel()
                watchdog = threading.Timer(60.0, p.kill)
                watchdog.start()
        p.wait()
    finally:
        watchdog.cancel()
    ended = time.monotonic()
    out = "".join(line for line in lines if not line.startswith("tach-progress "))
    what = "SIGINT to rank%s %s (%s)" % ("s" if len(targets) > 1 else "",
                                          " and ".join(map(str, targets)), grad_sync)
    check(stopped is not None and p.returncode == 0,
          "%s: the job ends by itself within 60 s (%s), mpirun exit 0 (got %d): %s"
          % (what, "%.1f s" % (ended - stopped) if stopped else "never stopped", p.returncode,
             out.strip()[-300:]))
    runs = rows_of(folder, "runs.csv")
    rows = rows_of(folder, "samples.csv")
    steps = {r: sorted(int(x["step"]) for x in rows if x["rank"] == r) for r in ("0", "1")}
    check([r["state"] for r in runs] == ["cancelled"] and steps["0"] and steps["0"] == steps["1"]
          and steps["0"] == list(range(len(steps["0"]))),
          "%s: cancelled, both ranks' rows in rank 0's samples.csv, the same steps: %s, %s"
          % (what, [r["state"] for r in runs],
             {r: (len(s), s[-1] if s else None) for r, s in steps.items()}))
    check("stopped after" in out and "MPI_ABORT" not in out and "did not" not in out,
          "%s: rank 0 says it stopped, no abort, no rank lost: %s" % (what, out.strip()[-300:]))


def test_usage_once():
    """A usage error in the command line every rank got is said once (by
    rank 0), not once per rank (a rank started with a command line of its
    own still says its own)."""
    p = mpirun(BASE + ["--workload", "nope"])
    said = p.stderr.count("invalid value 'nope' for --workload")
    check(p.returncode != 0 and said == 1,
          "a usage error of every rank's command line is said once (%d times): %s"
          % (said, p.stderr.strip()[-300:]))


def with_mpi(tmp):
    for mode in ("fused", "per-tensor", "overlap"):
        test_trace(tmp, mode, ["--bucket-mb", "1"] if mode == "overlap" else [])
    for lost in (1, 0):
        test_killed(tmp, lost)
    test_stopped(tmp)
    test_ranks_stopped(tmp, "overlap", (0, 1))
    test_ranks_stopped(tmp, "per-tensor", (1,))
    test_usage_once()


sys.exit(run_tests(with_mpi, prefix="tach-mpi-trace-"))
