#!/usr/bin/env python3
"""test-gpu-summary.py SRCDIR: tools/gpu-check-summary.py on made-up check folders.

The table shows each run with its ratios to PyTorch; the targets say met
only where the figures meet them, NOT MET where they fall short or are
missing; an empty folder prints the headers and every target NOT MET,
without a traceback.
"""
import csv
import os
import subprocess
import sys
import tempfile

TACH_FIELDS = ["workload", "task", "preset", "precision", "median_steps_per_s", "e2e_steps_per_s",
               "items_per_s", "rate_clock", "api_calls_per_step", "state"]
TORCH_FIELDS = ["framework", "case", "mode", "precision", "items_per_s"]


def write(path, fields, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)


def tach_row(workload, task, preset, precision, steps_per_s, items_per_step):
    return {"workload": workload, "task": task, "preset": preset, "precision": precision,
            "median_steps_per_s": steps_per_s, "e2e_steps_per_s": steps_per_s * 0.99,
            "items_per_s": steps_per_s * items_per_step, "rate_clock": "device",
            "api_calls_per_step": 6, "state": "finished"}


def make_folder(work, w1_tuned):
    runs = []
    for preset, rate in (("tf1-feed-dict", 100.0), ("keras-fit", 140.0), ("tuned", w1_tuned)):
        runs.append(tach_row("bilstm", "train", preset, "fp32", rate, 1024))
    runs.append(tach_row("bilstm", "train", "tuned", "tf32", 3000.0, 1024))
    for preset, rate in (("static-rnn", 6000.0), ("keras-predict", 2500.0), ("tuned", 24000.0)):
        runs.append(tach_row("lstm-lm", "generate", preset, "fp32", rate, 1))
    for preset, rate in (("estimator", 620.0), ("keras-fit", 560.0), ("tuned", 780.0)):
        runs.append(tach_row("cnn", "train", preset, "fp32", rate, 256))
    write(os.path.join(work, "tach", "runs.csv"), TACH_FIELDS, runs)
    write(os.path.join(work, "tach-plain", "runs.csv"), TACH_FIELDS,
          [tach_row("bilstm", "train", "tuned", "fp32", 1000.0, 1024)])
    torch = []
    for mode, bilstm, gen, cnn in (("eager", 330.0, 2700.0, 470.0), ("graphs", 1500.0, 20000.0, 940.0)):
        for prec in ("fp32", "default"):
            torch += [{"framework": "pytorch", "case": "bilstm", "mode": mode, "precision": prec,
                       "items_per_s": bilstm * 1024},
                      {"framework": "pytorch", "case": "lstm-lm-generate", "mode": mode,
                       "precision": prec, "items_per_s": gen},
                      {"framework": "pytorch", "case": "cnn", "mode": mode, "precision": prec,
                       "items_per_s": cnn * 256}]
    for mode in ("eager", "graphs"):
        write(os.path.join(work, f"torch-{mode}.csv"), TORCH_FIELDS,
              [r for r in torch if r["mode"] == mode])


def summary(script, work):
    done = subprocess.run([sys.executable, script, work], capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or "Traceback" in done.stderr:
        raise AssertionError(f"summary failed ({done.returncode}): {done.stderr}")
    return done.stdout


def target_line(out, what):
    lines = [l for l in out.splitlines() if what in l and l.startswith("  ")]
    if len(lines) != 1:
        raise AssertionError(f"{what!r}: {len(lines)} target lines in\n{out}")
    return lines[0]


def main():
    script = os.path.join(sys.argv[1], "tools", "gpu-check-summary.py")
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow, empty = (os.path.join(tmp, n) for n in ("fast", "slow", "empty"))
        make_folder(fast, 2100.0)
        make_folder(slow, 1600.0)
        os.makedirs(empty)

        out = summary(script, fast)
        # The table: tuned bilstm at 2100 steps/s is 2100 / 330 = 6.36x eager, 1.40x graphs.
        row = next(l for l in out.splitlines() if l.startswith("bilstm") and " tuned " in l and "fp32" in l)
        assert "6.36" in row and "1.40" in row, row
        assert "TACH_CUDA_PLAIN=all" in out and "2.10x" in out, out
        for what in ("W1 tuned fp32: a 500-step epoch", "W1 tuned fp32 / PyTorch graphs",
                     "W2 tuned / keras-predict", "W3 tuned fp32 / PyTorch eager",
                     "W1 presets: tf1-feed-dict < keras-fit < tuned", "W3: keras-fit < estimator"):
            assert "met    " in target_line(out, what), target_line(out, what)
        assert "0.238 s" in target_line(out, "W1 tuned fp32: a 500-step epoch")

        out = summary(script, slow)
        # 1600 steps/s: a 0.3125 s epoch, 1600 / 1500 = 1.07x graphs.
        assert "NOT MET" in target_line(out, "W1 tuned fp32: a 500-step epoch")
        assert "NOT MET" in target_line(out, "W1 tuned fp32 / PyTorch graphs")
        assert "met    " in target_line(out, "W1 tuned fp32 / PyTorch eager")

        out = summary(script, empty)
        assert "workload" in out and "targets" in out, out
        assert "met    " not in out, out
        assert out.count("NOT MET") == 12, out
    print("ok 1 gpu-check-summary: the table, the targets met and not met, an empty folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
