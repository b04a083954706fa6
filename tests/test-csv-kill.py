#!/usr/bin/env python3
"""test-csv-kill.py: tach-cli killed with SIGKILL at random moments while it
appends to a results folder, many times.  After every kill each of
runs.csv and samples.csv is either the file as it was before that command
or the file that command meant to write (the earlier one plus whole new
rows): never a partial row, never a lost one.  Some kills must land while a
file is being written (a temporary file is left then), or the test proves
nothing, so samples.csv is made large enough that writing it takes a while.

samples.csv streams to its temporary file as a run goes (once a second),
so the kills land in two kinds of command: short runs whose kills mostly
hit the copy and the renames, and a long generation run killed while it
streams: each of those kills waits until rows of that run are on disk in
its temporary file, then lands a random moment later (a fixed length of
run would stream or not depending on the machine's speed).  A temporary
file a kill leaves is removed by the next command that writes the folder.
Last, a second command writing the folder while a run streams into it is
refused (exit 1, a message naming the folder), and the first, stopped by
SIGINT, still writes its rows.

Usage: test-csv-kill.py PATH/TO/tach-cli [KILLS]
Exit status: 0 passed, 1 failed, 77 no tach-cli.
"""
import csv
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RUN = ["run", "--workload", "bilstm", "--device", "cpu", "--batch", "4", "--steps", "6",
       "--warmup", "1", "--threads", "1"]
# A run far longer than any wait here (minutes even on a fast machine): it
# is killed, or stopped by SIGINT, once its rows stream.
STREAM = ["run", "--workload", "lstm-lm", "--task", "generate", "--device", "cpu", "--batch", "1",
          "--steps", "20000000", "--warmup", "1", "--threads", "1"]
# How long a streaming run may take to get its first rows to the disk.
STREAM_DEADLINE_S = 120
# Rows added to samples.csv before the kills, so that rewriting it takes
# long enough (tens of ms) for random kills to land inside the write.
FILLER_ROWS = 400_000


def rows_of(text, path, width=None):
    """The rows of a CSV text; fails on a row cut short or a missing CRLF,
    or on a row whose width is not `width` (by default the first row's)."""
    if text and not text.endswith("\r\n"):
        raise AssertionError(f"{path} does not end with a whole row")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if rows:
        width = width if width is not None else len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != width:
                raise AssertionError(f"{path} row {i} has {len(row)} fields, the header {width}")
    return rows


# Each file's text as last found whole: a text that begins with it needs
# only its rows after it parsed (samples.csv holds 400 000 rows, and
# parsing them all after every kill was most of the test's processor
# time, which a loaded machine stretches towards the test's timeout).
found_whole = {}


def check_file(path, before):
    """The file is `before`, or `before` followed by whole new rows."""
    with open(path, newline="") as f:
        now = f.read()
    known = found_whole.get(path)
    if known is not None and now.startswith(known):
        width = len(rows_of(known[: known.find("\r\n") + 2], path)[0]) if known else None
        rows_of(now[len(known):], path, width)
    else:
        rows_of(now, path)
    found_whole[path] = now
    if now == before:
        return "old"
    if not now.startswith(before if before else now[: now.find("\r\n") + 2]):
        raise AssertionError(f"{path} lost or changed rows it held")
    return "new"


def leftovers_of(folder):
    """The files besides the two; fails on any but a writer's temporary files."""
    names = [n for n in os.listdir(folder) if n not in ("runs.csv", "samples.csv")]
    for n in names:
        if not n.startswith((".runs.csv.", ".samples.csv.")):
            raise AssertionError(f"unexpected file {n} in the folder")
    return names


def folder_state(folder):
    """What the folder holds before a command: the two files' texts and the
    temporary files earlier kills left."""
    with open(os.path.join(folder, "runs.csv"), newline="") as f:
        runs_before = f.read()
    with open(os.path.join(folder, "samples.csv"), newline="") as f:
        samples_before = f.read()
    return runs_before, samples_before, set(leftovers_of(folder))


def check_after_kill(folder, runs_before, samples_before, counts):
    """Checks the folder after a kill; returns the temporary files it left."""
    leftovers = leftovers_of(folder)
    if leftovers:
        counts["in-write"] += 1
    r = check_file(os.path.join(folder, "runs.csv"), runs_before)
    s = check_file(os.path.join(folder, "samples.csv"), samples_before)
    # Both or neither: samples.csv is renamed first, so a kill between the
    # renames leaves new samples with the old runs.csv, whose run then has
    # no row: that is the only mixed state allowed.
    if r == "new" and s == "old":
        raise AssertionError("runs.csv names a run whose samples are missing")
    counts[r] += 1
    return leftovers


def kill_rounds(cli, cmd, folder, kills, rng, counts):
    """Runs `cmd` `kills` times, each killed at a random moment from a fifth
    of its usual length to its end; checks the folder after each kill."""
    t = time.monotonic()
    subprocess.run([cli] + cmd + ["--csv", folder], check=True, capture_output=True)
    whole = time.monotonic() - t
    for k in range(kills):
        runs_before, samples_before, _ = folder_state(folder)
        proc = subprocess.Popen([cli] + cmd + ["--csv", folder],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0) * whole)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        check_after_kill(folder, runs_before, samples_before, counts)


def wait_streaming(proc, folder, stale, size_before):
    """Waits until `proc`'s own temporary samples file holds more than the
    folder's rows (its run's rows reached the disk); returns its name."""
    deadline = time.monotonic() + STREAM_DEADLINE_S
    while True:
        for n in set(os.listdir(folder)) - stale:
            if n.startswith(".samples.csv."):
                try:
                    if os.path.getsize(os.path.join(folder, n)) > size_before:
                        return n
                except FileNotFoundError:
                    pass
        if proc.poll() is not None:
            raise AssertionError(f"the streaming run ended (exit {proc.returncode}) before "
                                 "its rows reached the disk")
        if time.monotonic() > deadline:
            raise AssertionError(f"no rows of the streaming run on disk after "
                                 f"{STREAM_DEADLINE_S} s")
        time.sleep(0.005)


def stream_kill_rounds(cli, folder, kills, rng, counts):
    """Kills the streaming run `kills` times, each a random moment (up to
    1.5 s: a tick or two) after its rows first reached the disk; each kill
    must leave those rows in its temporary file and the two files whole.
    Returns how many kills found the run's rows streamed."""
    streamed = 0
    for k in range(kills):
        runs_before, samples_before, stale = folder_state(folder)
        proc = subprocess.Popen([cli] + STREAM + ["--csv", folder],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            own = wait_streaming(proc, folder, stale, len(samples_before.encode()))
            time.sleep(rng.uniform(0.0, 1.5))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        leftovers = check_after_kill(folder, runs_before, samples_before, counts)
        if (own in leftovers
                and os.path.getsize(os.path.join(folder, own)) > len(samples_before.encode())):
            streamed += 1
    return streamed


def refused_while_streaming(cli, folder):
    """A second writer while a run streams into the folder is refused; the
    first, stopped by SIGINT, writes its row."""
    runs = os.path.join(folder, "runs.csv")
    with open(runs, newline="") as f:
        n_runs = len(rows_of(f.read(), runs))
    stale = set(leftovers_of(folder))
    first = subprocess.Popen([cli] + STREAM + ["--csv", folder],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Its rows on disk show that it holds the folder and has steps to
        # keep when it is stopped.
        with open(os.path.join(folder, "samples.csv"), "rb") as f:
            wait_streaming(first, folder, stale, len(f.read()))
        second = subprocess.run([cli] + RUN + ["--csv", folder], capture_output=True, text=True,
                                timeout=60)
        if first.poll() is not None:
            raise AssertionError(f"the streaming run ended early (exit {first.returncode})")
    except BaseException:
        first.kill()
        first.wait()
        raise
    # Stopped as a user stops it: its steps so far are kept and written.
    first.send_signal(signal.SIGINT)
    if second.returncode != 1 or folder not in second.stderr or "another" not in second.stderr:
        raise AssertionError(f"a second writer was not refused: exit {second.returncode}, "
                             f"{second.stderr!r}")
    if first.wait(timeout=120) != 130:
        raise AssertionError(f"the streaming run, stopped by SIGINT, did not exit 130: "
                             f"exit {first.returncode}, {first.stderr.read()!r}")
    with open(runs, newline="") as f:
        if len(rows_of(f.read(), runs)) != n_runs + 1:
            raise AssertionError("the streaming run's row is missing")
    if leftovers_of(folder):
        raise AssertionError("a temporary file stayed after a whole command")


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else ""
    kills = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    if not cli or not os.access(cli, os.X_OK):
        print("test-csv-kill.py: no tach-cli executable given", file=sys.stderr)
        return 77
    rng = random.Random(int(os.environ.get("TACH_KILL_SEED", "14")))
    tmp = tempfile.mkdtemp(prefix="tach-kill-")
    try:
        folder = os.path.join(tmp, "results")
        runs = os.path.join(folder, "runs.csv")
        samples = os.path.join(folder, "samples.csv")
        subprocess.run([cli] + RUN + ["--csv", folder], check=True, capture_output=True)
        with open(samples, newline="") as f:
            text = f.read()
        header, first_row = text.split("\r\n")[0], text.split("\r\n")[1]
        rest = first_row.split(",", 1)[1]
        with open(samples, "w", newline="") as f:
            f.write(text)
            for i in range(FILLER_ROWS):
                f.write(f"filler-{i // 1000},{rest}\r\n")

        counts = {"old": 0, "new": 0, "in-write": 0}
        kill_rounds(cli, RUN, folder, kills, rng, counts)
        stream_kills = max(5, kills // 6)
        streamed = stream_kill_rounds(cli, folder, stream_kills, rng, counts)
        refused_while_streaming(cli, folder)
        print(f"{kills + stream_kills} kills: runs.csv old {counts['old']}, new {counts['new']}; "
              f"{counts['in-write']} landed while a file was written, {streamed} with the run's "
              f"rows streamed")
        if counts["in-write"] == 0:
            print("no kill landed inside a write: the test proved nothing", file=sys.stderr)
            return 1
        if streamed < stream_kills:
            print(f"only {streamed} of {stream_kills} streaming kills left the run's rows in its "
                  "temporary file", file=sys.stderr)
            return 1
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
