"""What the peers' replicas of Tach's workloads share (torch_workloads.py,
tf_workloads.py, jax_workloads.py, onnx_workloads.py, llama_workloads.py;
the gpt cases' own parts are gpt_common.py's): the cases and their
shapes, the row each prints per case (CSV or JSON lines, the same columns
for every peer, a peer's own columns after them), the timing of a step
function, and the best of several thread counts, each in a process of its
own for a framework that fixes its thread pools when it starts.
"""

import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time

CASES = ("bilstm", "lstm-lm-generate", "lstm-lm-train", "cnn")

# Per case: Tach's workload and task, the default batch, and the unit of
# items/s.
CASE_INFO = {
    "bilstm": ("bilstm", "train", 1024, "samples/s"),
    "lstm-lm-generate": ("lstm-lm", "generate", 1, "tokens/s"),
    "lstm-lm-train": ("lstm-lm", "train", 256, "samples/s"),
    "cnn": ("cnn", "train", 256, "samples/s"),
}

# W1: (N, 10, 300) -> BiLSTM 2 x 40 -> max over time -> dense 80 -> 1.
BILSTM_T, BILSTM_IN, BILSTM_HIDDEN = 10, 300, 40
# W2: frozen embedding 554 x 100, context 4, LSTM 100, dense 100 -> 554.
VOCAB, EMBED, CONTEXT, LM_HIDDEN = 554, 100, 4, 100
# Adam as Keras sets it (its epsilon), for every peer's training.
ADAM_LR, ADAM_BETAS, ADAM_EPS = 1e-3, (0.9, 0.999), 1e-7
# W3's plain SGD.
SGD_LR = 1e-3


def percentile(sorted_values, q):
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def time_calls(step, steps, warmup):
    """Per-call seconds of step() after warmup calls (step returns when its
    work is done: the caller syncs inside it)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def row(framework, version, case, mode, precision, batch, threads, times, device="cpu",
        **extra):
    """One case's row: the median steps/s over the timed steps with its
    p10-p90 spread; extra columns (a peer's own) follow the common ones."""
    workload, task, _, unit = CASE_INFO[case]
    rates = sorted(1.0 / t for t in times if t > 0)
    median = statistics.median(rates)
    common = {"framework": framework, "version": version, "case": case, "workload": workload,
              "task": task, "device": device, "mode": mode, "precision": precision}
    return {**common, **extra, "batch": batch, "threads": threads, "steps": len(rates),
            "steps_per_s_median": median,
            "steps_per_s_p10": percentile(rates, 0.1),
            "steps_per_s_p90": percentile(rates, 0.9),
            "items_per_s": median * batch, "items_unit": unit}


def add_common_args(parser, min_steps=1):
    """The arguments every peer takes."""
    parser.add_argument("--cases", default="all",
                        help="comma-separated: " + ", ".join(CASES) + ", or all")
    parser.add_argument("--batch", type=int, default=0,
                        help="override every case's batch (0: the workload's)")
    parser.add_argument("--steps", type=int, default=50,
                        help=f"measured steps (at least {min_steps})")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up steps")
    parser.add_argument("--format", default="csv", choices=("csv", "json"))
    parser.add_argument("--no-header", action="store_true", help="CSV without its header")


def parse_cases(prog, args, min_steps=1, allowed=CASES, named=()):
    """The cases asked for, or None after saying what is wrong (exit 2).
    "all" is every case of ALLOWED; the NAMED ones (the gpt cases, whose
    rows have columns of their own) run only when named."""
    if args.steps < min_steps or args.warmup < 0:
        print(f"{prog}: --steps must be at least {min_steps} and --warmup at least 0",
              file=sys.stderr)
        return None
    cases = allowed if args.cases == "all" else tuple(c.strip() for c in args.cases.split(","))
    for case in cases:
        if case not in allowed + tuple(named):
            print(f"{prog}: unknown case {case!r}; expected one of "
                  + ", ".join(allowed + tuple(named)), file=sys.stderr)
            return None
    return cases


def parse_threads(prog, text):
    """--threads: a comma-separated list of positive counts, or None."""
    try:
        threads = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1:
        print(f"{prog}: --threads takes counts such as 1,2, not {text!r}", file=sys.stderr)
        return None
    return threads


class Writer:
    """Prints rows as CSV (one header, unless --no-header) or JSON lines."""

    def __init__(self, args):
        self.format, self.header, self.csv = args.format, not args.no_header, None

    def write(self, result):
        if self.format == "json":
            print(json.dumps(result), flush=True)
            return
        if self.csv is None:
            self.csv = csv.DictWriter(sys.stdout, fieldnames=list(result.keys()),
                                      lineterminator="\n")
            if self.header:
                self.csv.writeheader()
        self.csv.writerow(result)
        sys.stdout.flush()


def main_per_process(script, description, run_one, precisions, precision_help, argv=None,
                     min_steps=1, gpt=False):
    """The main of a peer whose framework fixes its thread pools when it
    starts: each thread count in a process of its own (the script again,
    with --threads-one T: run_one(case, args) gives that count's row), the
    fastest kept.  GPT: the peer runs gpt_common.py's cases too (named
    only), with its knobs.  Returns the exit status."""
    import argparse

    import gpt_common as gc

    prog = os.path.basename(script)
    parser = argparse.ArgumentParser(description=description)
    add_common_args(parser, min_steps)
    parser.add_argument("--threads", default="1,2",
                        help="CPU thread counts to try, each in a process; the best is kept")
    parser.add_argument("--threads-one", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="fp32", choices=precisions, help=precision_help)
    if gpt:
        gc.add_args(parser)
    args = parser.parse_args(argv)
    cases = parse_cases(prog, args, min_steps, named=gc.GPT_CASES if gpt else ())
    threads = parse_threads(prog, args.threads)
    if cases is None or threads is None:
        return 2
    if gpt and any(c in gc.GPT_CASES for c in cases) and not gc.check_args(prog, args):
        return 2

    if args.threads_one > 0:
        for case in cases:
            print(json.dumps(run_one(case, args)), flush=True)
        return 0

    writer = Writer(args)
    for case in cases:
        best = best_of_processes(prog, script, case, threads,
                                 ["--steps", str(args.steps), "--warmup", str(args.warmup),
                                  "--precision", args.precision, "--batch", str(args.batch)]
                                 + (gc.gpt_argv(args) if gpt else []))
        if best is None:
            return 1
        writer.write(best)
    return 0


def best_of_processes(prog, script, case, threads, argv):
    """Runs SCRIPT once per thread count, each in a process of its own (with
    --threads-one T and ARGV), reads the JSON row each prints last, and
    returns the fastest; None after saying which failed."""
    tried = []
    for t in threads:
        cmd = [sys.executable, os.path.abspath(script), "--cases", case,
               "--threads-one", str(t)] + argv
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            print(f"{prog}: {case} on {t} threads failed (exit {done.returncode})",
                  file=sys.stderr)
            return None
        tried.append(json.loads(done.stdout.strip().splitlines()[-1]))
    import gpt_common as gc

    return gc.best_row(case, tried)


def pin_to_cores(count):
    """Keeps this process (and the threads it starts) on its first COUNT
    allowed cores, for a framework that sizes its thread pools by the cores
    it may use.  Returns the cores kept."""
    allowed = sorted(os.sched_getaffinity(0))
    keep = allowed[:max(1, count)]
    if len(keep) < len(allowed):
        os.sched_setaffinity(0, keep)
    return keep
