"""The GPT of gpt_common.py in PyTorch: the model (nanoGPT's, attention by
F.scaled_dot_product_attention), its training step (AdamW) and its
generation (prefill, then batch-1 greedy decoding with a KV cache), eager
or through torch.compile.  torch_workloads.py times it; onnx_workloads.py
exports it to ONNX with the cache as the graph's inputs and outputs.

Dropout where Tach's gpt has it (engine/models/tach-gpt-forward.c): after
the embeddings and on the two residual branches, not on the attention
probabilities (nanoGPT drops those too; so SDPA keeps its fused kernel).

Two caches, as Hugging Face's: a dynamic one (each layer's keys and values
grow by torch.cat, attention over the tokens so far; eager's) and a static
one (preallocated to the context, written in place by index_copy_,
attention over the whole length under a mask: fixed shapes, so that one
compiled decode step serves every position, as gpt-fast and
transformers' StaticCache with torch.compile do).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import gpt_common as gc


class Attention(nn.Module):
    def __init__(self, embed, heads, dropout):
        super().__init__()
        self.c_attn = nn.Linear(embed, 3 * embed)
        self.c_proj = nn.Linear(embed, embed)
        self.heads = heads
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x, cache, layer, input_pos):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.c_attn(x).split(c, dim=2))
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = cache.attend(layer, q, k, v, input_pos)
        return self.resid_drop(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))


class Block(nn.Module):
    def __init__(self, embed, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed, eps=gc.LN_EPS)
        self.attn = Attention(embed, heads, dropout)
        self.ln_2 = nn.LayerNorm(embed, eps=gc.LN_EPS)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(embed, 4 * embed)
        self.mlp.c_proj = nn.Linear(4 * embed, embed)
        self.mlp_drop = nn.Dropout(dropout)

    def forward(self, x, cache, layer, input_pos):
        x = x + self.attn(self.ln_1(x), cache, layer, input_pos)
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_drop(self.mlp.c_proj(h))


class Gpt(nn.Module):
    def __init__(self, args, dropout=0.0):
        super().__init__()
        c = args.embed
        self.wte = nn.Embedding(args.vocab, c)
        self.wpe = nn.Embedding(args.context, c)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(c, args.heads, dropout) for _ in range(args.layers))
        self.ln_f = nn.LayerNorm(c, eps=gc.LN_EPS)

    def forward(self, idx, cache=None, input_pos=None):
        """Training (cache None): logits of every position.  Generation:
        the last position's logits, the cache updated."""
        if input_pos is None:
            input_pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(input_pos))
        for i, block in enumerate(self.h):
            x = block(x, cache, i, input_pos)
        x = self.ln_f(x)
        if cache is not None:
            x = x[:, -1:]
        # The LM head tied to the token embedding.
        return F.linear(x, self.wte.weight)


def load(model, np, args, std=0.02):
    """gpt_common's seeded weights, the same every peer loads."""
    w = gc.weights(np, args.layers, args.embed, args.context, args.vocab, std=std)
    state = {("wte.weight" if k == "wte" else "wpe.weight" if k == "wpe" else k):
             torch.from_numpy(v) for k, v in w.items()}
    model.load_state_dict(state, strict=True)
    return model


class DynamicCache:
    """Keys and values per layer, grown by torch.cat (Hugging Face's
    DynamicCache); attention over the tokens so far."""

    def __init__(self, layers):
        self.k, self.v = [None] * layers, [None] * layers

    def length(self):
        return 0 if self.k[0] is None else self.k[0].shape[2]

    def attend(self, layer, q, k, v, input_pos):
        if self.k[layer] is not None:
            k = torch.cat([self.k[layer], k], dim=2)
            v = torch.cat([self.v[layer], v], dim=2)
        self.k[layer], self.v[layer] = k, v
        # A prompt from an empty cache is causal; one new token sees all.
        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(q.shape[2] > 1))


class StaticCache(nn.Module):
    """Keys and values preallocated to the context; each step writes its
    positions in place and attends over the whole length under a causal
    mask."""

    def __init__(self, args, device):
        super().__init__()
        hd = args.embed // args.heads
        shape = (args.layers, 1, args.heads, args.context, hd)
        self.register_buffer("k", torch.zeros(shape, device=device))
        self.register_buffer("v", torch.zeros(shape, device=device))
        self.register_buffer("mask", torch.ones(args.context, args.context, dtype=torch.bool,
                                                device=device).tril())

    def attend(self, layer, q, k, v, input_pos):
        self.k[layer].index_copy_(2, input_pos, k)
        self.v[layer].index_copy_(2, input_pos, v)
        return F.scaled_dot_product_attention(q, self.k[layer], self.v[layer],
                                              attn_mask=self.mask[input_pos])


def train_step(args, device, compiled):
    """One AdamW step over four resident batches, nanoGPT's optimiser
    groups; returns step (it waits for its loss)."""
    import numpy as np

    torch.manual_seed(1)
    model = load(Gpt(args, args.dropout), np, args).to(device).train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": gc.WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=gc.ADAMW_LR, betas=gc.ADAMW_BETAS, eps=gc.ADAMW_EPS,
                            foreach=device.type == "cpu")
    fwd = torch.compile(model) if compiled else model
    batch = args.batch or gc.TRAIN_BATCH
    toks = [torch.from_numpy(b).to(device)
            for b in gc.batches(np, batch, args.context, args.vocab)]
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % len(toks)
        logits = fwd(toks[i][:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), toks[i][:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    return step


def generation(args, device, compiled):
    """Returns (prefill, decode, kv-cache kind): prefill() runs the prompt
    from an empty cache and returns the first token; decode() feeds each
    new token and returns the greedy tokens that follow it."""
    import numpy as np

    model = load(Gpt(args), np, args, gc.GENERATE_STD).to(device).eval()
    prompt = torch.from_numpy(gc.prompt(np, args.prompt, args.vocab)).to(device)[None]
    count = gc.new_tokens(args)
    state = {}

    if compiled:
        cache = StaticCache(args, device)

        def forward(idx, input_pos):
            return model(idx, cache, input_pos).argmax(-1)

        # One graph for the prompt's shape and one for a token's; the
        # positions are a tensor, so every decode step reuses it.
        prefill_fn = torch.compile(forward, dynamic=False)
        decode_fn = torch.compile(forward, dynamic=False)
        prompt_pos = torch.arange(args.prompt, device=device)

        def prefill():
            with torch.inference_mode():
                state["tok"] = prefill_fn(prompt, prompt_pos)
                return state["tok"].item()

        def decode():
            out = []
            with torch.inference_mode():
                tok = state["tok"]
                for pos in range(args.prompt, args.prompt + count):
                    tok = decode_fn(tok, torch.tensor([pos], device=device))
                    out.append(tok)
                return [t.item() for t in out]

        return prefill, decode, "static"

    def prefill():
        with torch.inference_mode():
            state["cache"] = DynamicCache(args.layers)
            state["tok"] = model(prompt, state["cache"]).argmax(-1)
            return state["tok"].item()

    def decode():
        out = []
        with torch.inference_mode():
            tok, cache = state["tok"], state["cache"]
            for pos in range(args.prompt, args.prompt + count):
                tok = model(tok, cache, torch.arange(pos, pos + 1, device=device)).argmax(-1)
                out.append(tok)
            return [t.item() for t in out]

    return prefill, decode, "dynamic"


def run(case, args, device, threads):
    """One thread count's row of a gpt case."""
    import time

    if device.type == "cpu":
        torch.set_num_threads(threads)
    mode = "compile" if args.compile else "eager"
    t0 = time.perf_counter()
    if case == "gpt-train":
        step = train_step(args, device, args.compile)
        times = gc.pc.time_calls(step, args.steps, max(args.warmup, 2 if args.compile else 1))
        return gc.train_row("pytorch", torch.__version__, mode, args, threads, times,
                            attention="sdpa", setup_s=round(time.perf_counter() - t0, 1))
    prefill, decode, kind = generation(args, device, args.compile)
    runs = gc.time_generation(prefill, decode, args.steps, max(args.warmup, 1))
    return gc.generate_row("pytorch", torch.__version__, mode, args, threads, runs,
                           kv_cache=kind, attention="sdpa",
                           setup_s=round(time.perf_counter() - t0, 1))


class _Prefill(nn.Module):
    """The prompt from an empty cache: the last logits and every layer's
    keys and values (the presents), as a decoder's ONNX graph gives them."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        cache = DynamicCache(len(self.model.h))
        logits = self.model(input_ids, cache)
        return (logits,) + tuple(t for kv in zip(cache.k, cache.v) for t in kv)


class _Decode(nn.Module):
    """One token over the past keys and values (inputs) to the logits and
    the presents (outputs, the past grown by one), as Hugging Face's
    decoder-with-past ONNX graphs."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, past):
        cache = DynamicCache(len(self.model.h))
        cache.k, cache.v = list(past[0::2]), list(past[1::2])
        n = past[0].shape[2]
        logits = self.model(input_ids, cache, torch.arange(n, n + 1, device=input_ids.device))
        return (logits,) + tuple(t for kv in zip(cache.k, cache.v) for t in kv)


def export_onnx(args, folder):
    """Writes prefill.onnx and decode.onnx (torch.onnx.export, the dynamo
    exporter) of the generation model into FOLDER; returns their paths and
    the names of the cache's tensors, in the graphs' order."""
    import os

    import numpy as np

    model = load(Gpt(args), np, args, gc.GENERATE_STD).eval()
    names = [f"{kind}.{i}" for i in range(args.layers) for kind in ("key", "value")]
    prompt = torch.from_numpy(gc.prompt(np, args.prompt, args.vocab))[None]
    prefill_path, decode_path = os.path.join(folder, "prefill.onnx"), os.path.join(folder,
                                                                                 "decode.onnx")
    seq = torch.export.Dim("seq", min=2, max=args.context)
    past_len = torch.export.Dim("past", min=1, max=args.context - 1)
    with torch.no_grad():
        torch.onnx.export(_Prefill(model), (prompt,), prefill_path, dynamo=True,
                          input_names=["input_ids"],
                          output_names=["logits"] + ["present." + n for n in names],
                          dynamic_shapes={"input_ids": {1: seq}}, external_data=False)
        hd = args.embed // args.heads
        past = [torch.zeros(1, args.heads, args.prompt, hd) for _ in names]
        torch.onnx.export(_Decode(model), (prompt[:, :1], past), decode_path, dynamo=True,
                          input_names=["input_ids"] + ["past." + n for n in names],
                          output_names=["logits"] + ["present." + n for n in names],
                          dynamic_shapes={"input_ids": None, "past": [{2: past_len}] * len(names)},
                          external_data=False)
    return prefill_path, decode_path, names
