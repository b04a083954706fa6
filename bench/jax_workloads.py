#!/usr/bin/env python3
"""Tach's three workloads in JAX, jit-compiled, timed the way Tach times them.

The models, shapes, optimizers and batches are those of
../shared/workloads.md and bench/torch_workloads.py.  Each training step is
one jitted function (forward, gradient by jax.value_and_grad, the optax
update: Adam with Keras' epsilon, or the cnn's plain SGD) whose parameters
and optimizer state are donated, so XLA updates them in place; it cycles
four resident batches, as Tach's feed=resident.  The LSTMs are lax.scan
over time after one product for every step's input side (the backward
direction of the bilstm a reverse scan); each case runs with the scan
rolled and fully unrolled and keeps the faster (mode jit-scan or
jit-scan-unrolled).  Generation of one stream is one jitted step that feeds
the last four tokens, samples the next on the device (Gumbel-max) and
shifts it into the context.  Every step is timed to its result's
block_until_ready.

XLA sizes its CPU thread pools when it starts, from the cores the process
may use: each thread count runs in a process of its own, kept on that
many cores (one thread: XLA's multi-threaded Eigen off as well); the best
is kept.  Prints one line per case, with the columns of
torch_workloads.py (CSV or JSON lines).

    jax_workloads.py --cases all --steps 50 --threads 1,2
    jax_workloads.py --cases gpt-train,gpt-generate --steps 3

The gpt cases (named only) run gpt_jax.py's GPT at gpt_common.py's shape:
training one jitted AdamW step (optax.adamw, decay masked to the 2-D
weights, dropout keys split each step), generation a jitted prefill and a
jitted decode step over a static cache (fixed shapes: one compiled step
for every position), greedy on the device.
"""

import os
import sys

import gpt_common as gc
import peer_common as pc


def lstm_params(rng, np, inputs, hidden):
    """PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)), gates i, f, g, o."""
    k = 1.0 / np.sqrt(hidden)
    return {"wx": rng.uniform(-k, k, (inputs, 4 * hidden)).astype(np.float32),
            "wh": rng.uniform(-k, k, (hidden, 4 * hidden)).astype(np.float32),
            "b": rng.uniform(-k, k, (4 * hidden,)).astype(np.float32)}


def dense_params(rng, np, inputs, outputs):
    k = 1.0 / np.sqrt(inputs)
    return {"w": rng.uniform(-k, k, (inputs, outputs)).astype(np.float32),
            "b": rng.uniform(-k, k, (outputs,)).astype(np.float32)}


def jit_train_step(jax, jnp, optax, loss_fn, opt, params, batches, key=None):
    """A jitted step over resident batches (inputs, targets); params and
    optimiser state donated; with KEY, loss_fn takes a key split each step
    (dropout).  Returns step(), which waits for the loss."""
    opt_state = opt.init(params)

    def update(params, opt_state, key, x, y):
        if key is None:
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            new_key = None
        else:
            new_key, sub = jax.random.split(key)
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y, sub)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, new_key, loss

    update = jax.jit(update, donate_argnums=(0, 1))
    xs, ys = [jnp.asarray(b) for b in batches[0]], [jnp.asarray(b) for b in batches[1]]
    state = {"params": params, "opt": opt_state, "key": key, "i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % len(xs)
        state["params"], state["opt"], state["key"], loss = update(
            state["params"], state["opt"], state["key"], xs[i], ys[i])
        loss.block_until_ready()

    return step


def build(case, batch, unroll, jax, jnp, optax, np):
    """Returns (step, items): step() runs one step and waits for it."""
    lax = jax.lax
    rng = np.random.default_rng(1)

    def lstm(p, xs, reverse=False):
        """xs (T, N, I) time-major: every step's hidden state (T, N, H) and
        the last one."""
        steps, n, inputs = xs.shape
        hidden = p["wh"].shape[0]
        xg = (xs.reshape(steps * n, inputs) @ p["wx"]).reshape(steps, n, 4 * hidden) + p["b"]

        def cell(carry, gx):
            h, c = carry
            i, f, g, o = jnp.split(gx + h @ p["wh"], 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((n, hidden), xs.dtype)
        (h, _), hs = lax.scan(cell, (zeros, zeros), xg, reverse=reverse,
                              unroll=steps if unroll else 1)
        return hs, h

    def dense(p, x):
        return x @ p["w"] + p["b"]

    def train_step(loss_fn, opt, params, batches, key=None):
        return jit_train_step(jax, jnp, optax, loss_fn, opt, params, batches, key)

    adam = optax.adam(pc.ADAM_LR, b1=pc.ADAM_BETAS[0], b2=pc.ADAM_BETAS[1], eps=pc.ADAM_EPS)

    if case == "bilstm":
        params = {"fw": lstm_params(rng, np, pc.BILSTM_IN, pc.BILSTM_HIDDEN),
                  "bw": lstm_params(rng, np, pc.BILSTM_IN, pc.BILSTM_HIDDEN),
                  "out": dense_params(rng, np, 2 * pc.BILSTM_HIDDEN, 1)}

        def loss_fn(p, x, y):
            xs = jnp.swapaxes(x, 0, 1)
            seq = jnp.concatenate([lstm(p["fw"], xs)[0], lstm(p["bw"], xs, reverse=True)[0]],
                                  axis=-1)
            logits = dense(p["out"], seq.max(axis=0))[:, 0]
            return optax.sigmoid_binary_cross_entropy(logits, y).mean()

        batches = ([rng.standard_normal((batch, pc.BILSTM_T, pc.BILSTM_IN), dtype=np.float32)
                    for _ in range(4)],
                   [rng.integers(0, 2, batch).astype(np.float32) for _ in range(4)])
        return train_step(loss_fn, adam, params, batches), batch

    embed = jnp.asarray(rng.standard_normal((pc.VOCAB, pc.EMBED), dtype=np.float32))

    def lm_logits(p, tokens):
        # The embedding is frozen: a constant, outside the parameters.
        return dense(p["out"], lstm(p["lstm"], jnp.swapaxes(embed[tokens], 0, 1))[1])

    lm = {"lstm": lstm_params(rng, np, pc.EMBED, pc.LM_HIDDEN),
          "out": dense_params(rng, np, pc.LM_HIDDEN, pc.VOCAB)}

    if case == "lstm-lm-train":
        def loss_fn(p, x, y):
            return optax.softmax_cross_entropy_with_integer_labels(lm_logits(p, x), y).mean()

        toks = [rng.integers(0, pc.VOCAB, (batch, pc.CONTEXT + 1)).astype(np.int32)
                for _ in range(4)]
        batches = ([t[:, :pc.CONTEXT] for t in toks], [t[:, pc.CONTEXT] for t in toks])
        return train_step(loss_fn, adam, lm, batches), batch

    if case == "lstm-lm-generate":
        def generate(p, ctx, key):
            key, sub = jax.random.split(key)
            logits = lm_logits(p, ctx)
            noise = jax.random.uniform(sub, logits.shape, minval=1e-20, maxval=1.0)
            nxt = jnp.argmax(logits - jnp.log(-jnp.log(noise)), axis=1).astype(ctx.dtype)
            return jnp.concatenate([ctx[:, 1:], nxt[:, None]], axis=1), key, nxt

        generate = jax.jit(generate, donate_argnums=(1, 2))
        params = jax.tree_util.tree_map(jnp.asarray, lm)
        state = {"ctx": jnp.asarray(rng.integers(0, pc.VOCAB, (batch, pc.CONTEXT)).astype(np.int32)),
                 "key": jax.random.PRNGKey(1)}

        def step():
            state["ctx"], state["key"], nxt = generate(params, state["ctx"], state["key"])
            nxt.block_until_ready()

        return step, batch

    if case == "cnn":
        def conv_params(cin, cout):
            k = 1.0 / np.sqrt(cin * 25)
            return {"w": rng.uniform(-k, k, (5, 5, cin, cout)).astype(np.float32),
                    "b": rng.uniform(-k, k, (cout,)).astype(np.float32)}

        params = {"conv1": conv_params(1, 32), "conv2": conv_params(32, 64),
                  "dense1": dense_params(rng, np, 7 * 7 * 64, 1024),
                  "dense2": dense_params(rng, np, 1024, 10)}

        def block(p, x):
            y = lax.conv_general_dilated(x, p["w"], (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC")) + p["b"]
            return lax.reduce_window(jax.nn.relu(y), -jnp.inf, lax.max, (1, 2, 2, 1),
                                     (1, 2, 2, 1), "VALID")

        def loss_fn(p, x, y, key):
            x = block(p["conv2"], block(p["conv1"], x)).reshape(x.shape[0], -1)
            x = jax.nn.relu(dense(p["dense1"], x))
            keep = jax.random.bernoulli(key, 0.6, x.shape)
            x = jnp.where(keep, x / 0.6, 0.0)
            return optax.softmax_cross_entropy_with_integer_labels(
                dense(p["dense2"], x), y).mean()

        batches = ([rng.random((batch, 28, 28, 1), dtype=np.float32) for _ in range(4)],
                   [rng.integers(0, 10, batch).astype(np.int32) for _ in range(4)])
        return train_step(loss_fn, optax.sgd(pc.SGD_LR), params, batches,
                          key=jax.random.PRNGKey(1)), batch

    raise ValueError(f"unknown case {case!r}")


def run_one(case, args):
    """One thread count, in this process (JAX not yet started)."""
    threads = args.threads_one
    pc.pin_to_cores(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    if case in gc.GPT_CASES:
        import gpt_jax

        return gpt_jax.run(case, args, threads, jax, jnp, optax, np)
    batch = args.batch or pc.CASE_INFO[case][2]
    best = None
    # The cnn has no scan: one mode.
    for unroll in ((False,) if case == "cnn" else (False, True)):
        step, items = build(case, batch, unroll, jax, jnp, optax, np)
        times = pc.time_calls(step, args.steps, max(args.warmup, 2))
        mode = "jit" if case == "cnn" else "jit-scan-unrolled" if unroll else "jit-scan"
        result = pc.row("jax", f"{jax.__version__} optax {optax.__version__}", case, mode,
                        args.precision, items, threads, times)
        if best is None or result["steps_per_s_median"] > best["steps_per_s_median"]:
            best = result
    return best


def main(argv=None):
    return pc.main_per_process(__file__, __doc__.splitlines()[0], run_one, ("fp32",),
                               "fp32 only (JAX on the CPU has no bf16 path worth timing here)", argv,
                               gpt=True)

if __name__ == "__main__":
    sys.exit(main())
