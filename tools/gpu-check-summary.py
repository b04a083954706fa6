#!/usr/bin/env python3
"""gpu-check-summary.py WORK: the short table that tools/gpu-check.sh prints last.

WORK is the check's folder: tach/runs.csv (every preset, tuned at tf32 too),
tach-plain*/runs.csv (tuned with lean paths off) and torch-{eager,graphs}.csv
(bench/torch_workloads.py).  Prints, per workload, task and preset, steps/s
from the device timeline, end-to-end steps/s, the speed-up over the
workload's first preset, the ratios to PyTorch and the CUDA API calls per
step; then tuned against its plain runs; then the GPU targets of the CUDA
issues, each met or not from these figures.  Only the standard library: it
runs under whatever python3 the GPU host has.
"""
import csv
import os
import sys

NAN = float("nan")

# The plain runs: folder, TACH_CUDA_PLAIN value.
PLAIN = (("tach-plain", "all"), ("tach-plain-wspace", "wspace"),
         ("tach-plain-persist", "persist"), ("tach-plain-wgrad", "wgrad"))

# W1's epoch: 512 000 samples at batch 1024.
EPOCH_STEPS = 500


def rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def num(r, key):
    try:
        return float(r.get(key) or "nan")
    except ValueError:
        return NAN


def fmt(v, width, spec="{:.1f}"):
    return (spec.format(v) if v == v else "-").rjust(width)


def ratio(a, b):
    return a / b if b == b and b != 0 and a == a else NAN


def case_of(workload, task):
    return "lstm-lm-" + task if workload == "lstm-lm" else workload


def torch_precision(precision):
    """PyTorch's run beside Tach's precision: fp32 = TF32 off; tf32 = PyTorch's default."""
    return "default" if precision == "tf32" else "fp32"


class Check:
    def __init__(self, work):
        self.tach = rows(os.path.join(work, "tach", "runs.csv"))
        self.plain = {paths: rows(os.path.join(work, folder, "runs.csv")) for folder, paths in PLAIN}
        self.torch = {}
        for mode in ("eager", "graphs"):
            for r in rows(os.path.join(work, f"torch-{mode}.csv")):
                self.torch[(r.get("case"), mode, r.get("precision"))] = num(r, "items_per_s")

    def run(self, workload, task, preset, precision="fp32"):
        return next((r for r in self.tach if r.get("workload") == workload and r.get("task") == task
                     and r.get("preset") == preset and r.get("precision") == precision), {})

    def peer(self, workload, task, mode, precision):
        return self.torch.get((case_of(workload, task), mode, torch_precision(precision)), NAN)

    def table(self):
        base = {}
        for r in self.tach:
            base.setdefault((r.get("workload"), r.get("task")), num(r, "median_steps_per_s"))
        print(f"{'workload':9} {'task':8} {'preset':14} {'prec':4} {'dev st/s':>9} {'e2e st/s':>9} "
              f"{'clock':6} {'speedup':>7} {'items/s':>10} {'/torch':>7} {'/graphs':>7} {'calls':>6}")
        for r in self.tach:
            w, task, preset, prec = r.get("workload"), r.get("task"), r.get("preset"), r.get("precision")
            med, e2e, items = num(r, "median_steps_per_s"), num(r, "e2e_steps_per_s"), num(r, "items_per_s")
            state = r.get("state")
            print(f"{w:9} {task:8} {preset:14} {prec:4} {fmt(med, 9)} {fmt(e2e, 9)} "
                  f"{r.get('rate_clock') or '-':6} "
                  f"{fmt(ratio(med, base.get((w, task), NAN)), 7, '{:.2f}x')} {fmt(items, 10)} "
                  f"{fmt(ratio(items, self.peer(w, task, 'eager', prec)), 7, '{:.2f}')} "
                  f"{fmt(ratio(items, self.peer(w, task, 'graphs', prec)), 7, '{:.2f}')} "
                  f"{fmt(num(r, 'api_calls_per_step'), 6, '{:.0f}')}"
                  + ("" if state == "finished" else f"  ({state})"))
        print("dev st/s: median steps/s on the device timeline; e2e: measured steps over the wall time after")
        print("warm-up; speedup: over the workload's first preset; /torch, /graphs: Tach's items/s over")
        print("PyTorch eager and CUDA-graphed at the same precision (fp32 = TF32 off; tf32 = PyTorch's default);")
        print("calls: CUDA, cuDNN and cuBLAS calls per step (median), the runner's own included")

    def before_after(self):
        """Tuned with lean paths off against tuned as it is, fp32."""
        for _, paths in PLAIN:
            plain = self.plain[paths]
            if not plain:
                continue
            print()
            print(f"{'workload':9} {'task':8} {'tuned plain':>11} {'tuned':>9} {'lean/plain':>10} "
                  f"{'calls plain':>11} {'calls':>6}   (dev st/s; TACH_CUDA_PLAIN={paths} vs default)")
            for p in plain:
                w, task = p.get("workload"), p.get("task")
                lean = self.run(w, task, "tuned", p.get("precision"))
                a, b = num(p, "median_steps_per_s"), num(lean, "median_steps_per_s")
                print(f"{w:9} {task:8} {fmt(a, 11)} {fmt(b, 9)} {fmt(ratio(b, a), 10, '{:.2f}x')} "
                      f"{fmt(num(p, 'api_calls_per_step'), 11, '{:.0f}')} "
                      f"{fmt(num(lean, 'api_calls_per_step'), 6, '{:.0f}')}")

    def targets(self):
        """The CUDA issues' targets, each (what, figure, goal, met); a figure
        that is missing (NaN) is not met."""
        out = []

        def at_least(what, value, goal, spec="{:.2f}x"):
            out.append((what, fmt(value, 0, spec).strip(), ">= " + spec.format(goal), value == value and value >= goal))

        def rate(workload, task, preset, precision="fp32"):
            return num(self.run(workload, task, preset, precision), "median_steps_per_s")

        def items(workload, task, preset, precision="fp32"):
            return num(self.run(workload, task, preset, precision), "items_per_s")

        for prec in ("fp32", "tf32"):
            w1 = rate("bilstm", "train", "tuned", prec)
            epoch = EPOCH_STEPS / w1 if w1 == w1 and w1 > 0 else NAN
            out.append((f"W1 tuned {prec}: a {EPOCH_STEPS}-step epoch", fmt(epoch, 0, "{:.3f} s").strip(),
                        "<= 0.250 s", epoch == epoch and epoch <= 0.25))
            w1_items = items("bilstm", "train", "tuned", prec)
            at_least(f"W1 tuned {prec} / PyTorch eager", ratio(w1_items, self.peer("bilstm", "train", "eager", prec)), 2.0)
            at_least(f"W1 tuned {prec} / PyTorch graphs", ratio(w1_items, self.peer("bilstm", "train", "graphs", prec)), 1.2)
        gen = items("lstm-lm", "generate", "tuned")
        at_least("W2 tuned / keras-predict (tokens/s)", ratio(gen, items("lstm-lm", "generate", "keras-predict")), 5.0)
        at_least("W2 tuned / PyTorch eager (tokens/s)", ratio(gen, self.peer("lstm-lm", "generate", "eager", "fp32")), 3.0)
        at_least("W3 tuned fp32 / PyTorch eager", ratio(items("cnn", "train", "tuned"),
                                                          self.peer("cnn", "train", "eager", "fp32")), 1.5)

        def order(what, slow_to_fast):
            figures = [rate(*spec) for spec in slow_to_fast]
            met = all(a == a for a in figures) and all(a < b for a, b in zip(figures, figures[1:]))
            out.append((what, " < ".join(fmt(v, 0).strip() for v in figures), "increasing", met))

        order("W1 presets: tf1-feed-dict < keras-fit < tuned",
              [("bilstm", "train", p) for p in ("tf1-feed-dict", "keras-fit", "tuned")])
        order("W2 generation: keras-predict < static-rnn",
              [("lstm-lm", "generate", p) for p in ("keras-predict", "static-rnn")])
        order("W3: keras-fit < estimator", [("cnn", "train", p) for p in ("keras-fit", "estimator")])
        return out

    def print_targets(self):
        print()
        print("targets (issues 4 and 10; fp32 = TF32 off on both sides):")
        for what, figure, goal, met in self.targets():
            print(f"  {'met    ' if met else 'NOT MET'}  {what}: {figure} ({goal})")


def main(argv):
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    check = Check(argv[1])
    check.table()
    check.before_after()
    check.print_targets()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
