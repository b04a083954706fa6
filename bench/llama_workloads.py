#!/usr/bin/env python3
"""Tach's gpt generation in llama.cpp (llama-cpp-python), timed the way Tach
times it.

gpt_common.py's seeded generation weights are written to a GGUF file with
the gguf package's GGUFWriter, architecture "gpt2", every tensor f32
(file type ALL_F32, so the precision matches the other peers' fp32), in
PyTorch's nn.Linear layout as llama.cpp's gpt2 loader takes them
(token_embd, position_embd, per block attn_norm, attn_qkv, attn_output,
ffn_norm, ffn_up, ffn_down with their biases, output_norm, and output: the
token embedding again, the tied head).  The vocabulary is a plain list of
the byte-level tokens (llama.cpp loads a file without one with no tokens
and refuses its shapes); tokens go in and come out as ids.  The KV cache is
f32 too (type_k, type_v; llama.cpp's default is f16).

A generation is llama-cpp-python's Llama.eval of the prompt (the prefill:
its time to the first token, greedy on the host from the last logits,
llama_get_logits_ith),
then one Llama.eval a token.  llama.cpp trains nothing: gpt-generate only.
Each thread count (n_threads and n_threads_batch) gets a Llama of its own,
with llama.cpp's flash attention and without (llama-cpp-python's default);
decoding and prefill each at their best of these.  Prints one line, with the
columns of torch_workloads.py (CSV or JSON lines).

    llama_workloads.py --cases gpt-generate --steps 3 --threads 1,2
"""

import argparse
import os
import sys
import tempfile

import gpt_common as gc
import peer_common as pc

# ggml's type ids (ggml.h): GGML_TYPE_F32.
GGML_TYPE_F32 = 0


def write_gguf(path, args, np, gguf):
    """The generation weights as a gpt2 GGUF file of f32 tensors."""
    w = gc.weights(np, args.layers, args.embed, args.context, args.vocab, std=gc.GENERATE_STD)
    writer = gguf.GGUFWriter(path, "gpt2")
    writer.add_name("tach-gpt")
    writer.add_context_length(args.context)
    writer.add_embedding_length(args.embed)
    writer.add_feed_forward_length(4 * args.embed)
    writer.add_block_count(args.layers)
    writer.add_head_count(args.heads)
    writer.add_layer_norm_eps(gc.LN_EPS)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    # A byte-level vocabulary: one token an id.  llama.cpp's BPE loader
    # needs a list of merges and GGUFWriter drops an empty one: one merge,
    # never used (ids go in, ids come out).
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([f"<{i:02x}>" for i in range(args.vocab)])
    writer.add_token_types([gguf.TokenType.NORMAL] * args.vocab)
    writer.add_token_merges(["<00> <01>"])
    names = {"wte": "token_embd.weight", "wpe": "position_embd.weight",
             "ln_f.weight": "output_norm.weight", "ln_f.bias": "output_norm.bias"}
    per_block = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
                 "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    for i in range(args.layers):
        for ours, theirs in per_block.items():
            for kind in ("weight", "bias"):
                names[f"h.{i}.{ours}.{kind}"] = f"blk.{i}.{theirs}.{kind}"
    for ours, theirs in names.items():
        writer.add_tensor(theirs, np.ascontiguousarray(w[ours], np.float32))
    # The tied head: llama.cpp's gpt2 reads "output".
    writer.add_tensor("output.weight", np.ascontiguousarray(w["wte"], np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def run(args, threads, flash, path, llama_cpp, np):
    """gpt-generate in a Llama of THREADS threads, with llama.cpp's flash
    attention or without (FLASH)."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=args.context, n_batch=args.context,
                          n_ubatch=args.context, n_threads=threads, n_threads_batch=threads,
                          type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, logits_all=False,
                          flash_attn=flash, verbose=False)
    prompt = [int(t) for t in gc.prompt(np, args.prompt, args.vocab)]
    count = gc.new_tokens(args)
    state = {}

    def last_token():
        # The last position's logits from llama.cpp itself: Llama.eval
        # keeps none in Llama.scores unless every position's are asked for
        # (logits_all), which would make the prefill compute 64 rows of
        # the head instead of one.
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                       shape=(args.vocab,))
        return int(np.argmax(logits))

    def prefill():
        llm.reset()
        llm.eval(prompt)
        state["tok"] = last_token()
        return state["tok"]

    def decode():
        tok, out = state["tok"], []
        for _ in range(count):
            llm.eval([tok])
            tok = last_token()
            out.append(tok)
        return out

    try:
        runs = gc.time_generation(prefill, decode, args.steps, max(args.warmup, 1))
    finally:
        llm.close()
    return gc.generate_row("llama.cpp", f"llama-cpp-python {llama_cpp.__version__}",
                           "llama-eval", args, threads, runs, kv_cache="llama.cpp f32",
                           attention="flash_attn" if flash else "llama.cpp")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(parser)
    gc.add_args(parser)
    parser.add_argument("--threads", default="1,2",
                        help="CPU thread counts to try, a Llama each; the best is kept")
    parser.add_argument("--precision", default="fp32", choices=("fp32",),
                        help="fp32 only (f32 weights and cache)")
    args = parser.parse_args(argv)
    cases = pc.parse_cases("llama_workloads.py", args, allowed=("gpt-generate",))
    threads = pc.parse_threads("llama_workloads.py", args.threads)
    if cases is None or threads is None or not gc.check_args("llama_workloads.py", args):
        return 2

    import gguf
    import llama_cpp
    import numpy as np

    writer = pc.Writer(args)
    with tempfile.TemporaryDirectory(prefix="tach-gpt-gguf-") as folder:
        path = os.path.join(folder, "gpt-f32.gguf")
        write_gguf(path, args, np, gguf)
        tried = [run(args, t, flash, path, llama_cpp, np)
                 for t in threads for flash in (False, True)]
    writer.write(gc.best_row("gpt-generate", tried))
    return 0


if __name__ == "__main__":
    sys.exit(main())
