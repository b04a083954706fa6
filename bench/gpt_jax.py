"""The GPT of gpt_common.py in JAX, jit-compiled: the training step
(optax.adamw, the weight decay masked to the 2-D weights, dropout after the
embeddings and on the residual branches from a key split each step, as
Tach's gpt) and generation (a jitted prefill and a jitted decode
step over a static cache preallocated to the context: fixed shapes, so one
compiled decode step serves every position, the token chosen greedily on
the device).  jax_workloads.py runs it, one thread count a process.
"""

import gpt_common as gc


def model(jax, jnp, args, dropout):
    """forward(params, idx, key, cache, pos) -> (logits, cache): training
    (cache None) every position's logits; generation the last position's,
    with the cache's keys and values written at positions [pos, pos + t)
    and attention over the whole cache under a causal mask."""
    heads, hd = args.heads, args.embed // args.heads

    def linear(x, p, name):
        # Weights kept [in, out] (see params): with nn.Linear's [out, in]
        # transposed here, XLA's CPU decode step took 130-160 ms a token
        # against 7-11 ms (a loaded 2-core machine).
        return x @ p[name + ".weight"] + p[name + ".bias"]

    def norm(x, p, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + gc.LN_EPS) * p[name + ".weight"] + p[name + ".bias"]

    def drop(x, key, n):
        if key is None or dropout == 0.0:
            return x
        keep = jax.random.bernoulli(jax.random.fold_in(key, n), 1.0 - dropout, x.shape)
        return jnp.where(keep, x / (1.0 - dropout), 0.0)

    def forward(p, idx, key=None, cache=None, pos=0):
        b, t = idx.shape
        x = p["wte"][idx] + jax.lax.dynamic_slice_in_dim(p["wpe"], pos, t, 0)
        x = drop(x, key, 0)
        for i in range(args.layers):
            pre = f"h.{i}."
            qkv = linear(norm(x, p, pre + "ln_1"), p, pre + "attn.c_attn")
            q, k, v = (z.reshape(b, t, heads, hd) for z in jnp.split(qkv, 3, axis=-1))
            if cache is None:
                # q, k, v [B, T, H, hd]; no dropout on the probabilities
                # (as Tach's gpt, engine/models/tach-gpt-forward.c).
                y = jax.nn.dot_product_attention(q, k, v, is_causal=True)
            else:
                ks, vs = cache
                ks = jax.lax.dynamic_update_slice(ks, k[None], (i, 0, pos, 0, 0))
                vs = jax.lax.dynamic_update_slice(vs, v[None], (i, 0, pos, 0, 0))
                cache = (ks, vs)
                mask = jnp.arange(args.context)[None, :] <= (pos + jnp.arange(t))[:, None]
                y = jax.nn.dot_product_attention(q, ks[i], vs[i], mask=mask[None, None])
            y = linear(y.reshape(b, t, args.embed), p, pre + "attn.c_proj")
            x = x + drop(y, key, 4 * i + 2)
            h = jax.nn.gelu(linear(norm(x, p, pre + "ln_2"), p, pre + "mlp.c_fc"),
                            approximate=True)
            x = x + drop(linear(h, p, pre + "mlp.c_proj"), key, 4 * i + 3)
        if cache is not None:
            x = x[:, -1:]
        # The LM head tied to the token embedding.
        return norm(x, p, "ln_f") @ p["wte"].T, cache

    return forward


def params(args, jnp, np, std=0.02):
    """gpt_common's weights, the linear ones transposed to [in, out]."""
    w = gc.weights(np, args.layers, args.embed, args.context, args.vocab, std=std)
    return {k: jnp.asarray(v.T if k.endswith(".weight") and v.ndim == 2 else v)
            for k, v in w.items()}


def train_step(args, jax, jnp, optax, np):
    from jax_workloads import jit_train_step

    params_ = params(args, jnp, np)
    forward = model(jax, jnp, args, args.dropout)

    def loss_fn(p, x, y, key):
        logits, _ = forward(p, x, key)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    mask = {k: v.ndim >= 2 for k, v in params_.items()}
    opt = optax.adamw(gc.ADAMW_LR, b1=gc.ADAMW_BETAS[0], b2=gc.ADAMW_BETAS[1],
                      eps=gc.ADAMW_EPS, weight_decay=gc.WEIGHT_DECAY, mask=mask)
    toks = gc.batches(np, args.batch or gc.TRAIN_BATCH, args.context, args.vocab)
    batches = ([t[:, :-1].astype(np.int32) for t in toks], [t[:, 1:].astype(np.int32) for t in toks])
    return jit_train_step(jax, jnp, optax, loss_fn, opt, params_, batches, jax.random.PRNGKey(1))


def generation(args, jax, jnp, np):
    weights = params(args, jnp, np, gc.GENERATE_STD)
    forward = model(jax, jnp, args, 0.0)

    def step(p, cache, idx, pos):
        logits, cache = forward(p, idx, None, cache, pos)
        return jnp.argmax(logits, axis=-1).astype(jnp.int32), cache

    # One compiled function: traced once for the prompt's shape, once for a
    # token's; the position is traced, so decoding never recompiles.
    step = jax.jit(step, donate_argnums=(1,))
    shape = (args.layers, 1, args.context, args.heads, args.embed // args.heads)
    state = {"cache": (jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))}
    prompt = jnp.asarray(gc.prompt(np, args.prompt, args.vocab).astype(np.int32))[None]
    count = gc.new_tokens(args)

    def prefill():
        state["tok"], state["cache"] = step(weights, state["cache"], prompt, jnp.int32(0))
        return int(state["tok"][0, 0])

    def decode():
        tok, cache, out = state["tok"], state["cache"], []
        for pos in range(args.prompt, args.prompt + count):
            tok, cache = step(weights, cache, tok, jnp.int32(pos))
            out.append(tok)
        state["cache"] = cache
        return [int(t[0, 0]) for t in jax.block_until_ready(out)]

    return prefill, decode


def run(case, args, threads, jax, jnp, optax, np):
    import time

    version = f"{jax.__version__} optax {optax.__version__}"
    t0 = time.perf_counter()
    if case == "gpt-train":
        step = train_step(args, jax, jnp, optax, np)
        times = gc.pc.time_calls(step, args.steps, max(args.warmup, 2))
        return gc.train_row("jax", version, "jit", args, threads, times,
                            attention="dot_product_attention",
                            setup_s=round(time.perf_counter() - t0, 1))
    prefill, decode = generation(args, jax, jnp, np)
    runs = gc.time_generation(prefill, decode, args.steps, max(args.warmup, 1))
    return gc.generate_row("jax", version, "jit", args, threads, runs, kv_cache="static",
                           attention="dot_product_attention",
                           setup_s=round(time.perf_counter() - t0, 1))
