#!/usr/bin/env python3
"""Tach's three workloads in TensorFlow 2 / Keras 3, timed the way Tach times them.

The models, shapes, optimizers and batches are those of
../shared/workloads.md and bench/torch_workloads.py.  Training runs
through Keras' own loop, `model.fit`, on a dataset of resident batches
(cycled, as Tach's feed=resident); each step's time is the time between
the ends of consecutive batches (a Keras callback), warm-up excluded.
Generation of one stream runs a `tf.function` that feeds the last four
tokens, samples the next one on the device (Gumbel-max) and shifts it into
the context variable; it is timed with and without XLA (`jit_compile`) and
the faster kept: TensorFlow's fastest call path for a step this small.

On the CPU TensorFlow fixes its thread pools when it starts, so each
thread count runs in a process of its own; the best is kept.  Prints one
line per case, with the columns of torch_workloads.py (CSV or JSON lines).

    tf_workloads.py --cases all --steps 50 --threads 1,2
"""

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time

CASES = ("bilstm", "lstm-lm-generate", "lstm-lm-train", "cnn")
CASE_INFO = {
    "bilstm": ("bilstm", "train", 1024, "samples/s"),
    "lstm-lm-generate": ("lstm-lm", "generate", 1, "tokens/s"),
    "lstm-lm-train": ("lstm-lm", "train", 256, "samples/s"),
    "cnn": ("cnn", "train", 256, "samples/s"),
}
VOCAB, EMBED, CONTEXT, LM_HIDDEN = 554, 100, 4, 100


def percentile(sorted_values, q):
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def build_model(case, keras):
    layers = keras.layers
    if case == "bilstm":
        inputs = keras.Input((10, 300))
        x = layers.Bidirectional(layers.LSTM(40, return_sequences=True))(inputs)
        x = layers.GlobalMaxPooling1D()(x)
        model = keras.Model(inputs, layers.Dense(1)(x))
        model.compile(optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-7),
                      loss=keras.losses.BinaryCrossentropy(from_logits=True))
        return model
    if case.startswith("lstm-lm"):
        inputs = keras.Input((CONTEXT,), dtype="int32")
        x = layers.Embedding(VOCAB, EMBED, trainable=False)(inputs)
        x = layers.LSTM(LM_HIDDEN)(x)
        # Logits in float32 even under a bf16 policy.
        model = keras.Model(inputs, layers.Dense(VOCAB, dtype="float32")(x))
        model.compile(optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-7),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    if case == "cnn":
        inputs = keras.Input((28, 28, 1))
        x = layers.Conv2D(32, 5, padding="same", activation="relu")(inputs)
        x = layers.MaxPooling2D(2)(x)
        x = layers.Conv2D(64, 5, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
        x = layers.Dense(1024, activation="relu")(layers.Flatten()(x))
        x = layers.Dropout(0.4)(x)
        model = keras.Model(inputs, layers.Dense(10, dtype="float32")(x))
        model.compile(optimizer=keras.optimizers.SGD(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    raise ValueError(f"unknown case {case!r}")


def resident_batches(case, batch, np):
    """Four batches, as torch_workloads.py makes them."""
    rng = np.random.default_rng(1)
    if case == "bilstm":
        return (rng.standard_normal((4, batch, 10, 300), dtype=np.float32),
                rng.integers(0, 2, (4, batch, 1)).astype(np.float32))
    if case == "lstm-lm-train":
        toks = rng.integers(0, VOCAB, (4, batch, CONTEXT + 1)).astype(np.int32)
        return toks[..., :CONTEXT], toks[..., CONTEXT]
    return (rng.random((4, batch, 28, 28, 1), dtype=np.float32),
            rng.integers(0, 10, (4, batch)).astype(np.int32))


def time_fit(case, batch, steps, warmup, tf, keras, np):
    """Per-step seconds of model.fit: between consecutive batch ends."""
    model = build_model(case, keras)
    xs, ys = resident_batches(case, batch, np)
    data = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().prefetch(4)
    ends = []

    class Ends(keras.callbacks.Callback):
        def on_train_batch_end(self, batch_index, logs=None):
            ends.append(time.perf_counter())

    model.fit(data, epochs=1, steps_per_epoch=warmup + steps + 1, verbose=0, shuffle=False,
              callbacks=[Ends()])
    ends = ends[warmup:]
    return [b - a for a, b in zip(ends, ends[1:])], "fit"


def time_generate(steps, warmup, tf, keras, np):
    """Per-token seconds of a tf.function step, the faster of XLA and not."""
    model = build_model("lstm-lm-generate", keras)
    rng = np.random.default_rng(1)
    ctx = tf.Variable(rng.integers(0, VOCAB, (1, CONTEXT)).astype(np.int32))
    best = None
    for xla in (True, False):
        @tf.function(jit_compile=xla)
        def step():
            logits = model(ctx, training=False)
            noise = tf.random.uniform(tf.shape(logits), minval=1e-20, maxval=1.0)
            nxt = tf.argmax(logits - tf.math.log(-tf.math.log(noise)), axis=1,
                            output_type=tf.int32)
            ctx.assign(tf.concat([ctx[:, 1:], nxt[:, None]], axis=1))
            return nxt

        for _ in range(max(warmup, 3)):
            step()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step().numpy()
            times.append(time.perf_counter() - t0)
        mode = "function-xla" if xla else "function"
        if best is None or statistics.median(times) < statistics.median(best[0]):
            best = (times, mode)
    return best


def run_one(case, args):
    """One thread count, in this process (TensorFlow not yet started)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    import keras

    tf.config.threading.set_intra_op_parallelism_threads(args.threads_one)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads_one)
    tf.random.set_seed(1)
    if args.precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    workload, task, default_batch, unit = CASE_INFO[case]
    batch = args.batch or default_batch
    if case == "lstm-lm-generate":
        times, mode = time_generate(args.steps, args.warmup, tf, keras, np)
    else:
        times, mode = time_fit(case, batch, args.steps, args.warmup, tf, keras, np)
    rates = sorted(1.0 / t for t in times if t > 0)
    median = statistics.median(rates)
    return {
        "framework": "tensorflow",
        "version": f"{tf.__version__} keras {keras.__version__}",
        "case": case,
        "workload": workload,
        "task": task,
        "device": "cpu",
        "mode": mode,
        "precision": args.precision,
        "batch": batch,
        "threads": args.threads_one,
        "steps": len(rates),
        "steps_per_s_median": median,
        "steps_per_s_p10": percentile(rates, 0.1),
        "steps_per_s_p90": percentile(rates, 0.9),
        "items_per_s": median * batch,
        "items_unit": unit,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="all",
                        help="comma-separated: " + ", ".join(CASES) + ", or all")
    parser.add_argument("--batch", type=int, default=0,
                        help="override every case's batch (0: the workload's)")
    parser.add_argument("--steps", type=int, default=50, help="measured steps")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up steps")
    parser.add_argument("--threads", default="1,2",
                        help="CPU thread counts to try, each in a process; the best is kept")
    parser.add_argument("--threads-one", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                        help="bf16: Keras' mixed_bfloat16 policy")
    parser.add_argument("--format", default="csv", choices=("csv", "json"))
    parser.add_argument("--no-header", action="store_true", help="CSV without its header")
    args = parser.parse_args(argv)

    if args.steps < 2 or args.warmup < 0:
        print("tf_workloads.py: --steps must be at least 2", file=sys.stderr)
        return 2
    cases = CASES if args.cases == "all" else tuple(c.strip() for c in args.cases.split(","))
    for case in cases:
        if case not in CASES:
            print(f"tf_workloads.py: unknown case {case!r}; expected one of "
                  + ", ".join(CASES), file=sys.stderr)
            return 2

    if args.threads_one > 0:
        for case in cases:
            print(json.dumps(run_one(case, args)), flush=True)
        return 0

    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    writer = None
    for case in cases:
        tried = []
        for t in threads:
            cmd = [sys.executable, os.path.abspath(__file__), "--cases", case,
                   "--threads-one", str(t), "--steps", str(args.steps),
                   "--warmup", str(args.warmup), "--precision", args.precision,
                   "--batch", str(args.batch)]
            done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
            if done.returncode != 0:
                print(f"tf_workloads.py: {case} on {t} threads failed "
                      f"(exit {done.returncode})", file=sys.stderr)
                return 1
            tried.append(json.loads(done.stdout.strip().splitlines()[-1]))
        best = max(tried, key=lambda r: r["steps_per_s_median"])
        if args.format == "json":
            print(json.dumps(best), flush=True)
        else:
            if writer is None:
                writer = csv.DictWriter(sys.stdout, fieldnames=list(best.keys()),
                                        lineterminator="\n")
                if not args.no_header:
                    writer.writeheader()
            writer.writerow(best)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
