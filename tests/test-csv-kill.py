#!/usr/bin/env python3
"""test-csv-kill.py: tach-cli killed with SIGKILL at random moments while it
appends to a results folder, many times.  After every kill each of
runs.csv and samples.csv is either the file as it was before that command
or the file that command meant to write (the earlier one plus whole new
rows): never a partial row, never a lost one.  Some kills must land while a
file is being written (a temporary file is left then), or the test proves
nothing, so samples.csv is made large enough that writing it takes a while.

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
# Rows added to samples.csv before the kills, so that rewriting it takes
# long enough (tens of ms) for random kills to land inside the write.
FILLER_ROWS = 400_000


def rows_of(text, path):
    """The rows of a CSV text; fails on a row cut short or a missing CRLF."""
    if text and not text.endswith("\r\n"):
        raise AssertionError(f"{path} does not end with a whole row")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if rows:
        width = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != width:
                raise AssertionError(f"{path} row {i} has {len(row)} fields, the header {width}")
    return rows


def check_file(path, before):
    """The file is `before`, or `before` followed by whole new rows."""
    with open(path, newline="") as f:
        now = f.read()
    rows_of(now, path)
    if now == before:
        return "old"
    if not now.startswith(before if before else now[: now.find("\r\n") + 2]):
        raise AssertionError(f"{path} lost or changed rows it held")
    return "new"


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

        # How long a whole command takes here, to spread the kills over it.
        t = time.monotonic()
        subprocess.run([cli] + RUN + ["--csv", folder], check=True, capture_output=True)
        whole = time.monotonic() - t

        counts = {"old": 0, "new": 0, "in-write": 0}
        for k in range(kills):
            with open(runs, newline="") as f:
                runs_before = f.read()
            with open(samples, newline="") as f:
                samples_before = f.read()
            proc = subprocess.Popen([cli] + RUN + ["--csv", folder],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.3, 1.0) * whole)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            leftovers = [n for n in os.listdir(folder) if n not in ("runs.csv", "samples.csv")]
            if leftovers:
                counts["in-write"] += 1
                # The temporary files of a killed writer: never the real names.
                for n in leftovers:
                    if not n.startswith((".runs.csv.", ".samples.csv.")):
                        raise AssertionError(f"unexpected file {n} in the folder")
                    os.unlink(os.path.join(folder, n))
            r = check_file(runs, runs_before)
            s = check_file(samples, samples_before)
            # Both or neither: samples.csv is renamed first, so a kill between
            # the renames leaves new samples with the old runs.csv, whose
            # run then has no row: that is the only mixed state allowed.
            if r == "new" and s == "old":
                raise AssertionError("runs.csv names a run whose samples are missing")
            counts[r] += 1
        print(f"{kills} kills: runs.csv old {counts['old']}, new {counts['new']}; "
              f"{counts['in-write']} landed while a file was written")
        if counts["in-write"] == 0:
            print("no kill landed inside a write: the test proved nothing", file=sys.stderr)
            return 1
        return 0
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
