#!/usr/bin/env python3
"""Tach's lstm-lm generation in ONNX Runtime, timed the way Tach times it.

The model of ../shared/workloads.md (W2: frozen embedding 554 x 100,
context 4, LSTM 100, dense 100 -> 554) as one ONNX graph: Gather from the
embedding, the ONNX LSTM operator over the four context steps, its last
hidden state through MatMul + Add to the logits.  Each token is one
InferenceSession.run on the context; the host samples the next token
from the logits (Gumbel-max, numpy) and shifts it into the context, as a
person serving the model with ONNX Runtime would.  Only generation:
ONNX Runtime is an inference engine (its training API is a separate
package), so the training cases are not run here.

ONNX Runtime takes its thread count per session: each count given runs in
this process, in a session of its own (intra-op threads = the count,
inter-op 1, sequential execution, every graph optimisation); the best is
kept.  Prints one line, with the columns of torch_workloads.py (CSV or
JSON lines).

    onnx_workloads.py --cases lstm-lm-generate --steps 3000 --threads 1,2
    onnx_workloads.py --cases gpt-generate --steps 3

gpt-generate (named only) runs gpt_torch.py's GPT exported by
torch.onnx.export (the dynamo exporter) as two graphs, as Hugging Face's
decoder exports: the prompt's prefill (input ids to the last logits and
every layer's keys and values) and one token's decode (the past keys and
values as inputs, the presents, one longer, as outputs), fed back as
OrtValues (run_with_ort_values: no copy through numpy); greedy on the host
from the logits.  Decoding and prefill each at their best thread count.
"""

import argparse
import contextlib
import sys

import gpt_common as gc
import peer_common as pc

CASES = ("lstm-lm-generate",)


def lstm_lm_graph(np, onnx):
    """W2's forward as an ONNX model: tokens (N, 4) int64 -> logits (N, 554)."""
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    rng = np.random.default_rng(1)
    hidden = pc.LM_HIDDEN
    k = 1.0 / np.sqrt(hidden)

    def init(name, array):
        return numpy_helper.from_array(array.astype(np.float32), name)

    weights = [
        init("embed", rng.standard_normal((pc.VOCAB, pc.EMBED))),
        # ONNX's LSTM: W [dirs, 4H, I], R [dirs, 4H, H], B [dirs, 8H] (input
        # and recurrent biases), gates i, o, f, c.
        init("W", rng.uniform(-k, k, (1, 4 * hidden, pc.EMBED))),
        init("R", rng.uniform(-k, k, (1, 4 * hidden, hidden))),
        init("B", rng.uniform(-k, k, (1, 8 * hidden))),
        init("dense_w", rng.uniform(-k, k, (hidden, pc.VOCAB))),
        init("dense_b", rng.uniform(-k, k, (pc.VOCAB,))),
        numpy_helper.from_array(np.array([-1, hidden], dtype=np.int64), "h_shape"),
    ]
    nodes = [
        helper.make_node("Gather", ["embed", "tokens"], ["x_bt"]),
        # The LSTM operator's default layout is time-major: [T, N, I].
        helper.make_node("Transpose", ["x_bt"], ["x"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["x", "W", "R", "B"], ["", "h_last"], hidden_size=hidden),
        helper.make_node("Reshape", ["h_last", "h_shape"], ["h"]),
        helper.make_node("MatMul", ["h", "dense_w"], ["z"]),
        helper.make_node("Add", ["z", "dense_b"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "w2_lstm_lm",
        [helper.make_tensor_value_info("tokens", onnx.TensorProto.INT64, ["N", pc.CONTEXT])],
        [helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["N", pc.VOCAB])],
        initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def run_case(case, args, threads, model, ort, np):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    batch = args.batch or pc.CASE_INFO[case][2]
    rng = np.random.default_rng(1)
    ctx = rng.integers(0, pc.VOCAB, (batch, pc.CONTEXT)).astype(np.int64)
    rows = np.arange(batch)

    def step():
        (logits,) = session.run(["logits"], {"tokens": ctx})
        noise = rng.uniform(1e-20, 1.0, logits.shape)
        nxt = np.argmax(logits - np.log(-np.log(noise)), axis=1)
        ctx[:, :-1] = ctx[:, 1:]
        ctx[rows, -1] = nxt

    times = pc.time_calls(step, args.steps, max(args.warmup, 3))
    return pc.row("onnxruntime", ort.__version__, case, "session-run-host-sampling",
                  args.precision, batch, threads, times)


def run_gpt(args, threads, paths, ort, np):
    """gpt-generate in ONNX Runtime sessions of THREADS intra-op threads."""
    prefill_path, decode_path, names = paths
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = ["CPUExecutionProvider"]
    prefill_session = ort.InferenceSession(prefill_path, options, providers=providers)
    decode_session = ort.InferenceSession(decode_path, options, providers=providers)
    outputs = ["logits"] + ["present." + n for n in names]
    prompt = ort.OrtValue.ortvalue_from_numpy(gc.prompt(np, args.prompt, args.vocab)[None])
    count = gc.new_tokens(args)
    state = {}

    def prefill():
        result = prefill_session.run_with_ort_values(outputs, {"input_ids": prompt})
        state["past"] = result[1:]
        state["tok"] = int(np.argmax(result[0].numpy()[0, -1]))
        return state["tok"]

    def decode():
        tok, past, out = state["tok"], state["past"], []
        for _ in range(count):
            feed = {"past." + n: v for n, v in zip(names, past)}
            feed["input_ids"] = ort.OrtValue.ortvalue_from_numpy(np.array([[tok]], np.int64))
            result = decode_session.run_with_ort_values(outputs, feed)
            past = result[1:]
            tok = int(np.argmax(result[0].numpy()[0, -1]))
            out.append(tok)
        return out

    runs = gc.time_generation(prefill, decode, args.steps, max(args.warmup, 1))
    return gc.generate_row("onnxruntime", ort.__version__, "session-run-ort-values", args,
                           threads, runs, kv_cache="graph-io",
                           attention="exported-sdpa")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(parser)
    parser.add_argument("--threads", default="1,2",
                        help="CPU thread counts to try, a session each; the best is kept")
    parser.add_argument("--precision", default="fp32", choices=("fp32",), help="fp32 only")
    gc.add_args(parser)
    args = parser.parse_args(argv)
    cases = pc.parse_cases("onnx_workloads.py", args, allowed=CASES, named=("gpt-generate",))
    threads = pc.parse_threads("onnx_workloads.py", args.threads)
    if cases is None or threads is None:
        return 2
    if "gpt-generate" in cases and not gc.check_args("onnx_workloads.py", args):
        return 2

    import numpy as np
    import onnx
    import onnxruntime as ort

    writer = pc.Writer(args)
    if "gpt-generate" in cases:
        import tempfile

        import gpt_torch

        with tempfile.TemporaryDirectory(prefix="tach-gpt-onnx-") as folder:
            # The exporter reports its progress on stdout, where the rows go.
            with contextlib.redirect_stdout(sys.stderr):
                paths = gpt_torch.export_onnx(args, folder)
            tried = [run_gpt(args, t, paths, ort, np) for t in threads]
        writer.write(gc.best_row("gpt-generate", tried))
        cases = [c for c in cases if c != "gpt-generate"]
    model = lstm_lm_graph(np, onnx)
    for case in cases:
        tried = [run_case(case, args, t, model, ort, np) for t in threads]
        writer.write(max(tried, key=lambda r: r["steps_per_s_median"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
