"""What the peers' GPTs share (torch_workloads.py, jax_workloads.py,
onnx_workloads.py, llama_workloads.py): the shape and its knobs, one set of
seeded weights for every peer, the resident training batches and the
prompt, the timing of a generation (prefill, then greedy decoding, timed
apart) and the rows they print.

The model is GPT-2's (token and learned position embeddings; pre-LayerNorm
blocks of causal multi-head self-attention and a 4x GELU (tanh) MLP; final
LayerNorm; LM head tied to the token embedding), fp32, at nanoGPT's
shakespeare-char shape by default (config/train_shakespeare_char.py: 6
layers, 6 heads, width 384, context 256, dropout 0.2, AdamW lr 1e-3 with
beta2 0.99, weight decay 0.1 on the 2-D weights; byte-level vocabulary
256), as ../shared/workloads.md's W4.
"""

import math
import statistics
import sys
import time

import peer_common as pc

GPT_CASES = ("gpt-train", "gpt-generate")

LAYERS, HEADS, EMBED, CONTEXT, VOCAB = 6, 6, 384, 256, 256
# Training at batch 8 (2048 tokens a step): nanoGPT's 64 takes most of a
# minute a step on two cores, too long for a side-by-side run of every peer.
TRAIN_BATCH = 8
DROPOUT = 0.2
# The prompt a generation prefills; decoding then runs to the context.
PROMPT = 64
LN_EPS = 1e-5
GENERATE_STD = 0.3
ADAMW_LR, ADAMW_BETAS, ADAMW_EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.99), 1e-8, 0.1

pc.CASE_INFO.update({
    "gpt-train": ("gpt", "train", TRAIN_BATCH, "tokens/s"),
    "gpt-generate": ("gpt", "generate", 1, "tokens/s"),
})


def add_args(parser):
    """The shape and generation knobs, named as tach-cli's gpt knobs."""
    parser.add_argument("--layers", type=int, default=LAYERS)
    parser.add_argument("--heads", type=int, default=HEADS)
    parser.add_argument("--embed", type=int, default=EMBED)
    parser.add_argument("--context", type=int, default=CONTEXT)
    parser.add_argument("--vocab", type=int, default=VOCAB)
    parser.add_argument("--dropout", type=float, default=DROPOUT,
                        help="training's dropout (embeddings, attention, residuals)")
    parser.add_argument("--prompt", type=int, default=PROMPT,
                        help="generation: prompt tokens prefilled")
    parser.add_argument("--new-tokens", type=int, default=0,
                        help="generation: tokens decoded a sequence (0: up to the context)")


def gpt_argv(args):
    """The knobs again as arguments, for a peer that runs each thread count
    in a process of its own."""
    return ["--layers", str(args.layers), "--heads", str(args.heads), "--embed",
            str(args.embed), "--context", str(args.context), "--vocab", str(args.vocab),
            "--dropout", str(args.dropout), "--prompt", str(args.prompt),
            "--new-tokens", str(args.new_tokens)]


def check_args(prog, args):
    """Says what is wrong with the shape (and returns False), else True."""
    problems = []
    if min(args.layers, args.heads, args.embed, args.context, args.vocab) < 1:
        problems.append("--layers, --heads, --embed, --context and --vocab must be positive")
    elif args.embed % args.heads:
        problems.append(f"--heads {args.heads} does not divide --embed {args.embed}")
    if not 1 <= args.prompt < args.context:
        problems.append(f"--prompt {args.prompt} must be from 1 to --context - 1 "
                        f"({args.context - 1})")
    if args.new_tokens < 0 or args.prompt + args.new_tokens > args.context:
        problems.append(f"--prompt + --new-tokens ({args.prompt} + {args.new_tokens}) must fit "
                        f"--context {args.context}")
    if not 0.0 <= args.dropout < 1.0:
        problems.append(f"--dropout {args.dropout} must be in [0, 1)")
    for p in problems:
        print(f"{prog}: {p}", file=sys.stderr)
    return not problems


def new_tokens(args):
    return args.new_tokens or args.context - args.prompt


def weights(np, layers, embed, context, vocab, seed=1, std=0.02):
    """GPT-2's initialisation (N(0, STD), the residual projections scaled by
    1/sqrt(2 layers), zero biases, unit LayerNorms) as float32 arrays named
    as nanoGPT's state dict, linear weights in nn.Linear's [out, in].
    Generation draws them wider (GENERATE_STD), with small random biases:
    at GPT-2's 0.02 every token's likeliest successor is itself, so the
    peers' greedy tokens would agree whatever their attention did, and
    could not check that each ran the same model."""
    rng = np.random.default_rng(seed)

    def normal(*shape, std=std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def zeros(n):
        if std == 0.02:
            return np.zeros(n, np.float32)
        return normal(n)

    proj_std = std / math.sqrt(2 * layers)
    w = {"wte": normal(vocab, embed), "wpe": normal(context, embed)}
    for i in range(layers):
        p = f"h.{i}."
        w.update({
            p + "ln_1.weight": np.ones(embed, np.float32), p + "ln_1.bias": zeros(embed),
            p + "attn.c_attn.weight": normal(3 * embed, embed),
            p + "attn.c_attn.bias": zeros(3 * embed),
            p + "attn.c_proj.weight": normal(embed, embed, std=proj_std),
            p + "attn.c_proj.bias": zeros(embed),
            p + "ln_2.weight": np.ones(embed, np.float32), p + "ln_2.bias": zeros(embed),
            p + "mlp.c_fc.weight": normal(4 * embed, embed),
            p + "mlp.c_fc.bias": zeros(4 * embed),
            p + "mlp.c_proj.weight": normal(embed, 4 * embed, std=proj_std),
            p + "mlp.c_proj.bias": zeros(embed),
        })
    w["ln_f.weight"], w["ln_f.bias"] = np.ones(embed, np.float32), zeros(embed)
    return w


def decayed(name, array):
    """AdamW's weight decay takes the 2-D weights (nanoGPT's rule: the
    matrices and embeddings, not the biases and LayerNorms)."""
    return array.ndim >= 2


def batches(np, batch, context, vocab, count=4, seed=2):
    """COUNT resident batches of (batch, context + 1) token ids: inputs are
    the first context, targets the last context of each row."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, (batch, context + 1)).astype(np.int64) for _ in range(count)]


def prompt(np, length, vocab, seed=3):
    return np.random.default_rng(seed).integers(0, vocab, length).astype(np.int64)


def time_generation(prefill, decode, sequences, warmup):
    """Times SEQUENCES generations after WARMUP: prefill() runs the prompt and
    returns when the first token is known; decode() then decodes the rest of
    the sequence and returns when its last token is known, with the count.
    Returns per sequence (prefill seconds, decode seconds, tokens decoded,
    the tokens of the last sequence)."""
    for _ in range(warmup):
        prefill()
        decode()
    out = []
    for _ in range(sequences):
        t0 = time.perf_counter()
        first = prefill()
        t1 = time.perf_counter()
        tokens = decode()
        t2 = time.perf_counter()
        out.append((t1 - t0, t2 - t1, len(tokens), [int(first)] + [int(t) for t in tokens]))
    return out


def shape_columns(args):
    return {"layers": args.layers, "heads": args.heads, "embed": args.embed,
            "context": args.context, "vocab": args.vocab}


def train_row(framework, version, mode, args, threads, times, **extra):
    """gpt-train's row: steps/s, and tokens/s as items (batch x context)."""
    batch = args.batch or TRAIN_BATCH
    r = pc.row(framework, version, "gpt-train", mode, args.precision, batch, threads, times,
               **extra, **shape_columns(args), dropout=args.dropout)
    r["items_per_s"] = r["steps_per_s_median"] * batch * args.context
    return r


def generate_row(framework, version, mode, args, threads, runs, **extra):
    """gpt-generate's row: steps/s is decode tokens/s (a step a token, as
    lstm-lm-generate's), the median over sequences of tokens over decode
    time; prefill (time to first token) beside it, its median, lowest and
    highest over sequences."""
    per_token = [d / n for _, d, n, _ in runs if n > 0]
    prefills = sorted(p for p, _, _, _ in runs)
    r = pc.row(framework, version, "gpt-generate", mode, args.precision, 1, threads, per_token,
               **extra, **shape_columns(args))
    r.update({
        "prompt_tokens": args.prompt, "new_tokens": new_tokens(args),
        "prefill_s_median": statistics.median(prefills),
        "prefill_s_min": prefills[0], "prefill_s_max": prefills[-1],
        "prefill_tokens_per_s": args.prompt / statistics.median(prefills),
        "prefill_threads": threads,
        # The first tokens of the last sequence: every peer's greedy tokens
        # from the same weights and prompt should agree.
        "first_tokens": " ".join(str(t) for t in runs[-1][3][:8]),
    })
    return r


def best_generation(rows):
    """The best of each thread count's generation rows: decode at its best
    count, prefill at its own (lowest median time), so each phase is the
    peer at its best."""
    decode = max(rows, key=lambda r: r["steps_per_s_median"])
    prefill = min(rows, key=lambda r: r["prefill_s_median"])
    best = dict(decode)
    for key in ("prefill_s_median", "prefill_s_min", "prefill_s_max", "prefill_tokens_per_s"):
        best[key] = prefill[key]
    best["prefill_threads"] = prefill["threads"]
    best["prefill_attention"] = prefill.get("attention", "")
    return best


def best_row(case, rows):
    if case == "gpt-generate":
        return best_generation(rows)
    return max(rows, key=lambda r: r["steps_per_s_median"])


def decode_bytes(layers, embed, vocab, prompt, tokens):
    """The bytes a decoded token must read, at fp32, averaged over the
    TOKENS decoded after a PROMPT: every weight it multiplies (each block's
    12 C^2 + 13 C, the final LayerNorm, the tied head's V x C; one row of
    each embedding), and its keys and values so far (2 x layers x C a
    position, the token's own included).  Its bound at a read rate R bytes
    a second is R / decode_bytes tokens a second."""
    c = embed
    weights = layers * (12 * c * c + 13 * c) + 2 * c + vocab * c + 2 * c
    # Positions prompt .. prompt + tokens - 1 each read pos + 1 keys and
    # values: on average prompt + (tokens + 1) / 2.
    kv_positions = prompt + (tokens + 1) / 2.0
    return 4.0 * (weights + 2 * layers * c * kv_positions)
