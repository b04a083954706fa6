#!/usr/bin/env python3
"""Tach's workloads in PyTorch, timed the way Tach times them.

Each case builds the model of ../shared/workloads.md with the same shapes,
optimizer and batch as Tach, runs warm-up steps, then times each measured
step and prints the median steps/s with its p10-p90 spread, one line per
case (CSV or JSON lines).  On the CPU it tries each thread count given and
keeps the best; on CUDA, --graphs captures one whole step as a CUDA graph
and replays it.  On CUDA --precision fp32 turns TF32 off in cuDNN and
cuBLAS (Tach's fp32 is FMA-only) and --precision default keeps PyTorch's
own TF32 choice (compared with Tach's precision=tf32); each row says which
switches were on.

    torch_workloads.py --device cpu --cases all --steps 50
    torch_workloads.py --device cuda --graphs --cases bilstm --format json
    torch_workloads.py --device cuda --precision default --cases all
    torch_workloads.py --device cpu --compile --cases bilstm
    torch_workloads.py --sgemm-peak
    torch_workloads.py --cases gpt-train,gpt-generate --compile --steps 3

The gpt cases (named only, not in "all": their rows have columns of their
own) run gpt_torch.py's GPT at gpt_common.py's shape: gpt-train one AdamW
step a step, gpt-generate one prompt's prefill then greedy decoding to the
context a step, decode tokens/s as steps/s and the prefill beside it; each
phase at its best thread count.
"""

import argparse
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import gpt_common as gc
import peer_common as pc
from peer_common import CASE_INFO, CONTEXT, EMBED, LM_HIDDEN, VOCAB


class BiLstmClassifier(nn.Module):
    """W1: (N, 10, 300) -> BiLSTM 2 x 40 -> max over time -> dense 80 -> 1."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(pc.BILSTM_IN, pc.BILSTM_HIDDEN, batch_first=True, bidirectional=True)
        self.dense = nn.Linear(2 * pc.BILSTM_HIDDEN, 1)

    def forward(self, x):
        seq, _ = self.lstm(x)
        return self.dense(seq.amax(dim=1)).squeeze(1)


class LstmLm(nn.Module):
    """W2: frozen embedding 554 x 100, context 4, LSTM 100, dense 100 -> 554."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.embed.weight.requires_grad_(False)
        self.lstm = nn.LSTM(EMBED, LM_HIDDEN, batch_first=True)
        self.dense = nn.Linear(LM_HIDDEN, VOCAB)

    def forward(self, tokens):
        seq, _ = self.lstm(self.embed(tokens))
        return self.dense(seq[:, -1])


class MnistCnn(nn.Module):
    """W3: two 5x5 conv + pool blocks, dense 1024, dropout 0.4, dense 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.dense1 = nn.Linear(7 * 7 * 64, 1024)
        self.dense2 = nn.Linear(1024, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.dropout(F.relu(self.dense1(x.flatten(1))), 0.4, self.training)
        return self.dense2(x)


def adam(params, device, graphs):
    # Keras' epsilon; capturable keeps Adam's step count on the device so a
    # CUDA graph can replay the update.
    kwargs = {"lr": pc.ADAM_LR, "betas": pc.ADAM_BETAS, "eps": pc.ADAM_EPS}
    if graphs:
        kwargs["capturable"] = True
    elif device.type == "cpu":
        kwargs["foreach"] = True
    return torch.optim.Adam([p for p in params if p.requires_grad], **kwargs)


def build_case(case, batch, device, graphs, compiled=False):
    """Returns (step function, items per step).  A step function runs one
    step and leaves its results on the device (no host sync).  @compiled:
    the model goes through torch.compile (forward and backward; the
    optimizer step stays eager)."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    wrap = torch.compile if compiled else (lambda m: m)

    if case == "bilstm":
        model = wrap(BiLstmClassifier().to(device))
        opt = adam(model.parameters(), device, graphs)
        # A few resident batches, like Tach's feed=resident: the input
        # needs no gradient.
        xs = [torch.randn(batch, pc.BILSTM_T, pc.BILSTM_IN, generator=gen).to(device)
              for _ in range(4)]
        ys = [torch.randint(0, 2, (batch,), generator=gen).float().to(device) for _ in range(4)]
        state = {"i": 0}

        def step():
            i = state["i"] = (state["i"] + 1) % len(xs)
            opt.zero_grad(set_to_none=not graphs)
            loss = F.binary_cross_entropy_with_logits(model(xs[i]), ys[i])
            loss.backward()
            opt.step()
            return loss

        return model, step, batch, (xs, ys)

    if case == "lstm-lm-train":
        model = wrap(LstmLm().to(device))
        opt = adam(model.parameters(), device, graphs)
        toks = [torch.randint(0, VOCAB, (batch, CONTEXT + 1), generator=gen).to(device)
                for _ in range(4)]
        state = {"i": 0}

        def step():
            i = state["i"] = (state["i"] + 1) % len(toks)
            opt.zero_grad(set_to_none=not graphs)
            loss = F.cross_entropy(model(toks[i][:, :CONTEXT]), toks[i][:, CONTEXT])
            loss.backward()
            opt.step()
            return loss

        return model, step, batch, (toks,)

    if case == "lstm-lm-generate":
        model = wrap(LstmLm().to(device).eval())
        ctx = torch.randint(0, VOCAB, (batch, CONTEXT), generator=gen).to(device)

        def step():
            # Feed the last 4 tokens, sample the next one on the device
            # (Gumbel-max, graph-safe), shift it into the context.
            with torch.no_grad() if graphs else torch.inference_mode():
                logits = model(ctx)
                noise = torch.rand_like(logits).clamp_(min=1e-20)
                nxt = (logits - torch.log(-torch.log(noise))).argmax(dim=1, keepdim=True)
                ctx.copy_(torch.cat([ctx[:, 1:], nxt], dim=1))
            return nxt

        return model, step, batch, (ctx,)

    if case == "cnn":
        model = wrap(MnistCnn().to(device))
        opt = torch.optim.SGD(model.parameters(), lr=pc.SGD_LR)
        xs = [torch.rand(batch, 1, 28, 28, generator=gen).to(device) for _ in range(4)]
        ys = [torch.randint(0, 10, (batch,), generator=gen).to(device) for _ in range(4)]
        state = {"i": 0}

        def step():
            i = state["i"] = (state["i"] + 1) % len(xs)
            opt.zero_grad(set_to_none=not graphs)
            loss = F.cross_entropy(model(xs[i]), ys[i])
            loss.backward()
            opt.step()
            return loss

        return model, step, batch, (xs, ys)

    raise ValueError(f"unknown case {case!r}")


def graph_step(step, device, warmup):
    """Captures one step as a CUDA graph after warming up on a side stream,
    as torch.cuda.graphs asks; returns a step that replays it.  Batches
    cycle by pointer in eager mode, so the graph reuses one batch: the same
    work per step."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 3)):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def time_steps(step, steps, warmup, device):
    """Per-step times in seconds: host clocks on the CPU (everything there
    is synchronous), CUDA events on the GPU (the host never waits between
    steps, so launch overhead shows up as gaps between events)."""
    if device.type != "cuda":
        return pc.time_calls(step, steps, warmup)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    events[0].record()
    for i in range(steps):
        step()
        events[i + 1].record()
    torch.cuda.synchronize()
    return [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(steps)]


def set_tf32(device, precision):
    """Pins PyTorch's TF32 switches for --precision and returns them as
    (cudnn, matmul).  PyTorch lets cuDNN use TF32 by default (its fp32
    LSTM and convolutions are then TF32) but not cuBLAS: fp32 turns both
    off, to compare with Tach's FMA-only fp32; default keeps PyTorch's own
    choice, the figure Tach's precision=tf32 is compared with."""
    if device.type != "cuda":
        return (False, False)
    if precision in ("fp32", "bf16"):
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    elif precision == "default":
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = False
    return (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)


def run_case(case, args, device, threads):
    if device.type == "cpu":
        torch.set_num_threads(threads)
    cudnn_tf32, matmul_tf32 = set_tf32(device, args.precision)
    torch.manual_seed(1)
    batch = args.batch or CASE_INFO[case][2]
    # Autocast covers the capture too, so a graph replays bf16 kernels.
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
        model, step, items, _keep = build_case(case, batch, device, args.graphs, args.compile)
        if args.graphs:
            step = graph_step(step, device, args.warmup)
        times = time_steps(step, args.steps, args.warmup, device)
    return pc.row("pytorch", torch.__version__, case,
                  "graphs" if args.graphs else "compile" if args.compile else "eager",
                  args.precision, items, threads if device.type == "cpu" else 0, times,
                  device=device.type, cudnn_tf32=int(cudnn_tf32), matmul_tf32=int(matmul_tf32))


def sgemm_peak(threads, n=2048, repeats=20):
    """The machine's fp32 GEMM rate in FLOP/s through torch.mm: the best of
    several timed products, after warm-up."""
    torch.set_num_threads(threads)
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    c = torch.empty(n, n)
    for _ in range(3):
        torch.mm(a, b, out=c)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    pc.add_common_args(parser)
    parser.add_argument("--threads", default="1,2",
                        help="CPU thread counts to try; the best is kept")
    parser.add_argument("--graphs", action="store_true",
                        help="CUDA only: capture each step as a CUDA graph and replay it")
    parser.add_argument("--compile", action="store_true",
                        help="run the model through torch.compile (default inductor backend)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "default", "bf16"),
                        help="fp32: TF32 off in cuDNN and cuBLAS (as Tach's fp32); default: "
                             "PyTorch's own TF32 choice (cuDNN on, matmul off; compared with "
                             "Tach's tf32); bf16: autocast to bfloat16")
    parser.add_argument("--both-tf32", action="store_true",
                        help="CUDA: each case at --precision fp32 and at default, one row each "
                             "(one process, one CUDA start-up)")
    parser.add_argument("--sgemm-peak", action="store_true",
                        help="print the measured sgemm peak (GFLOP/s) for each thread count")
    gc.add_args(parser)
    args = parser.parse_args(argv)

    threads = pc.parse_threads("torch_workloads.py", args.threads)
    if threads is None:
        return 2
    if args.sgemm_peak:
        for t in threads:
            print(f"{t},{sgemm_peak(t) / 1e9:.1f}")
        return 0

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch_workloads.py: CUDA is not available to PyTorch", file=sys.stderr)
        return 1
    if args.graphs and args.compile:
        print("torch_workloads.py: --graphs and --compile are separate modes", file=sys.stderr)
        return 2
    if args.graphs and device.type != "cuda":
        print("torch_workloads.py: --graphs needs --device cuda", file=sys.stderr)
        return 2
    cases = pc.parse_cases("torch_workloads.py", args, named=gc.GPT_CASES)
    if cases is None:
        return 2
    if any(c in gc.GPT_CASES for c in cases):
        if args.graphs or args.both_tf32 or args.precision != "fp32":
            print("torch_workloads.py: the gpt cases run fp32 without --graphs", file=sys.stderr)
            return 2
        if not gc.check_args("torch_workloads.py", args):
            return 2

    writer = pc.Writer(args)
    for case in (c for c in cases if c in gc.GPT_CASES):
        import gpt_torch

        tried = [gpt_torch.run(case, args, device, t)
                 for t in (threads if device.type == "cpu" else [0])]
        writer.write(gc.best_row(case, tried))
    cases = [c for c in cases if c not in gc.GPT_CASES]
    precisions = ("fp32", "default") if args.both_tf32 else (args.precision,)
    for case, precision in ((c, p) for c in cases for p in precisions):
        args.precision = precision
        tried = [run_case(case, args, device, t)
                 for t in (threads if device.type == "cpu" else [0])]
        writer.write(max(tried, key=lambda r: r["steps_per_s_median"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
