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

import os
import statistics
import sys
import time

import peer_common as pc
from peer_common import CASE_INFO, CONTEXT, EMBED, LM_HIDDEN, VOCAB


def build_model(case, keras):
    layers = keras.layers
    if case == "bilstm":
        inputs = keras.Input((pc.BILSTM_T, pc.BILSTM_IN))
        x = layers.Bidirectional(layers.LSTM(pc.BILSTM_HIDDEN, return_sequences=True))(inputs)
        x = layers.GlobalMaxPooling1D()(x)
        model = keras.Model(inputs, layers.Dense(1)(x))
        model.compile(optimizer=keras.optimizers.Adam(pc.ADAM_LR, *pc.ADAM_BETAS, epsilon=pc.ADAM_EPS),
                      loss=keras.losses.BinaryCrossentropy(from_logits=True))
        return model
    if case.startswith("lstm-lm"):
        inputs = keras.Input((CONTEXT,), dtype="int32")
        x = layers.Embedding(VOCAB, EMBED, trainable=False)(inputs)
        x = layers.LSTM(LM_HIDDEN)(x)
        # Logits in float32 even under a bf16 policy.
        model = keras.Model(inputs, layers.Dense(VOCAB, dtype="float32")(x))
        model.compile(optimizer=keras.optimizers.Adam(pc.ADAM_LR, *pc.ADAM_BETAS, epsilon=pc.ADAM_EPS),
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
        model.compile(optimizer=keras.optimizers.SGD(pc.SGD_LR),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    raise ValueError(f"unknown case {case!r}")


def resident_batches(case, batch, np):
    """Four batches, as torch_workloads.py makes them."""
    rng = np.random.default_rng(1)
    if case == "bilstm":
        return (rng.standard_normal((4, batch, pc.BILSTM_T, pc.BILSTM_IN), dtype=np.float32),
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

        times = pc.time_calls(lambda: step().numpy(), steps, max(warmup, 3))
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
    batch = args.batch or CASE_INFO[case][2]
    if case == "lstm-lm-generate":
        times, mode = time_generate(args.steps, args.warmup, tf, keras, np)
    else:
        times, mode = time_fit(case, batch, args.steps, args.warmup, tf, keras, np)
    return pc.row("tensorflow", f"{tf.__version__} keras {keras.__version__}", case, mode,
                  args.precision, batch, args.threads_one, times)


def main(argv=None):
    return pc.main_per_process(__file__, __doc__.splitlines()[0], run_one, ("fp32", "bf16"),
                               "bf16: Keras' mixed_bfloat16 policy", argv, min_steps=2)

if __name__ == "__main__":
    sys.exit(main())
