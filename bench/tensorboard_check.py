#!/usr/bin/env python3
"""Reads Tach's TensorBoard event files with TensorBoard's own event reader
and checks every step's scalars against samples.csv.

    python3 -m venv bench/.venv && bench/.venv/bin/pip install tensorboard pandas
    bench/.venv/bin/python bench/tensorboard_check.py build/app/tach-cli

It runs `tach-cli sweep --presets all --csv DIR --tensorboard DIR` for each
workload (short CPU runs), then loads each event file with
tensorboard.backend.event_processing.event_file_loader.EventFileLoader (the
loader TensorBoard's own server uses, which also checks the records' CRCs)
and compares, step by step, steps_per_s, loss, accuracy and ms_per_step/*
with the run's rows of samples.csv, to float32 precision.  It also checks
that the knobs' text summary holds the run's row of runs.csv.  Exit status 0
when everything matches, 1 otherwise.
"""
import glob
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.util import tensor_util

SCALARS = {
    "loss": "loss",
    "accuracy": "accuracy",
    "ms_per_step/step": "step_ms",
    "ms_per_step/feed": "feed_ms",
    "ms_per_step/compute": "compute_ms",
    "ms_per_step/sync": "sync_ms",
    "ms_per_step/host": "host_ms",
}

WORKLOADS = [
    ("bilstm", ["--batch", "32", "--steps", "20"]),
    ("lstm-lm", ["--batch", "16", "--steps", "20"]),
    ("cnn", ["--batch", "16", "--steps", "8", "--samples", "256"]),
]


def load_events(path):
    """{step: {tag: value}} for the scalars, and the knobs' text."""
    steps, text = {}, None
    for event in event_file_loader.EventFileLoader(path).Load():
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            if value.tag == "knobs":
                text = tensor_util.make_ndarray(value.tensor).item().decode()
            elif value.HasField("tensor"):
                # The loader turns simple_value into a scalar tensor.
                steps.setdefault(event.step, {})[value.tag] = float(
                    tensor_util.make_ndarray(value.tensor))
            else:
                steps.setdefault(event.step, {})[value.tag] = value.simple_value
    return steps, text


def same(a, b):
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return a is None
    return a is not None and np.float32(a) == np.float32(b)


def check_folder(csv_dir, tb_dir):
    runs = pd.read_csv(os.path.join(csv_dir, "runs.csv"))
    samples = pd.read_csv(os.path.join(csv_dir, "samples.csv"))
    problems, checked = [], 0
    for _, run in runs.iterrows():
        files = glob.glob(os.path.join(tb_dir, "*-" + run["run_id"], "events.out.tfevents.*"))
        if len(files) != 1:
            problems.append(f"{run['run_id']}: {len(files)} event files")
            continue
        steps, text = load_events(files[0])
        rows = samples[samples["run_id"] == run["run_id"]]
        if len(steps) != len(rows):
            problems.append(f"{run['run_id']}: {len(steps)} steps in TensorBoard, {len(rows)} in samples.csv")
        for _, row in rows.iterrows():
            got = steps.get(int(row["step"]), {})
            want = {tag: row[col] for tag, col in SCALARS.items()}
            want["steps_per_s"] = 1000.0 / row["step_ms"]
            for tag, value in want.items():
                if not same(got.get(tag), value):
                    problems.append(f"{run['run_id']} step {row['step']} {tag}: "
                                    f"TensorBoard {got.get(tag)}, samples.csv {value}")
            checked += 1
        for knob in ("rnn", "feed", "batch", "steps"):
            if text is None or f"| {knob} | {run[knob]} |" not in text:
                problems.append(f"{run['run_id']}: knob {knob}={run[knob]} not in the text summary")
    return checked, len(runs), problems


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else "build/app/tach-cli"
    total_steps = total_runs = 0
    all_problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload, args in WORKLOADS:
            csv_dir = os.path.join(tmp, workload, "csv")
            tb_dir = os.path.join(tmp, workload, "tb")
            cmd = [cli, "sweep", "--workload", workload, "--presets", "all", "--device", "cpu",
                   "--warmup", "2", *args, "--csv", csv_dir, "--tensorboard", tb_dir]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            steps, runs, problems = check_folder(csv_dir, tb_dir)
            print(f"{workload:8s} {runs} runs, {steps} steps: "
                  f"{'same values' if not problems else str(len(problems)) + ' differences'}")
            total_steps += steps
            total_runs += runs
            all_problems += problems
    for p in all_problems[:20]:
        print("  " + p)
    print(f"{total_runs} runs, {total_steps} steps read by TensorBoard's EventFileLoader: "
          f"{'all equal to samples.csv' if not all_problems else 'MISMATCH'}")
    return 1 if all_problems else 0


if __name__ == "__main__":
    sys.exit(main())
