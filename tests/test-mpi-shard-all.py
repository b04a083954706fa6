#!/usr/bin/env python3
"""test-mpi-shard-all.py: fully sharded data parallelism (shard=all,
PyTorch FSDP's FULL_SHARD, DeepSpeed's ZeRO-3) under mpirun, through
tach-cli, against shard=none.

With MPI, for every training workload (bilstm, lstm-lm, gpt at a small
shape, the cnn with SGD), 2 ranks, 6 steps:
  - shard=all and shard=all with shard-prefetch=next give shard=none's
    loss on every rank and step within relative 1e-6 (with two ranks each
    reduce-scatter sums the same two addends as the all-reduce and each
    rank computes with the same gathered values: the bits are expected
    equal, 0 seen), and every run ends by checking that the ranks'
    parameters agree (a mismatch fails it);
  - what rank 0 holds at the end (runs.csv's held_*: parameters,
    gradients, optimiser state) is at most 0.55 of shard=none's, its
    optimiser state 1/2 of it (within a tenth), and its peak more than
    that: the units gathered during the steps are counted;
  - the algorithms line says how the units cut the buckets, and the trace
    (--trace) has per rank and step that many reduce-scatters and
    all-gathers, no all-reduce, the all-gathers on their tracks; none of
    them prefetched under shard-prefetch=none, some (not all: each pass's
    first unit is gathered when reached) under next;
gpt under grad-progress=thread (whose thread tests the all-gathers in
flight too), and gpt on 3 ranks (pieces padded to a multiple of 3 floats; MPI sums
three addends in an order of its own: relative 1e-5), bilstm accumulating
4 micro-batches under accumulate-sync=last (the sum whole, the gradients
folded and given back), and the refusals: shard=all with grad-compress
and with accumulate-sync=every (exit 2, naming the fix); alone, shard=all
runs as shard=none and says why; the cnn evaluating its test set after the
steps (every layer gathered once for it and given back after) gives
shard=none's accuracy and holds at most 0.55 of its parameters at the
end.

Without MPI there is nothing to shard: skipped.

Usage: test-mpi-shard-all.py PATH/TO/tach-cli mpi|nompi
Exit status: 0 passed, 1 failed, 77 skipped (no MPI, or no mpirun).
"""
import os
import re
import subprocess
import sys

import mpi_util as mh
from mpi_util import check

BASE = ["run"] + mh.ONE_THREAD
STEPS = 6
LAYOUT = re.compile(r"all, [a-z-]+: (\d+) units?(?: \((\d+) kept through the step\))?, "
                    r"(\d+) reduce-scatters and (\d+) all-gathers a step")


def run(tmp, tag, workload, batch, shard, extra, np=2, trace=False):
    """One run; its folder and stdout, or None where it failed."""
    folder = os.path.join(tmp, tag)
    args = BASE + ["--workload", workload, "--batch", str(batch), "--steps", str(STEPS),
                   "--shard", shard, "--csv", folder] + extra
    if trace:
        args += ["--trace", folder + ".json"]
    p = mh.mpirun(args, np=np, timeout=180)
    check(p.returncode == 0, "%s: runs on %d ranks, the ranks' parameters checked equal at the"
          " end: %s" % (tag, np, p.stderr.strip()[-300:]))
    return (folder, p.stdout) if p.returncode == 0 else None


def held(folder):
    row = mh.read_runs(folder)[0]
    return {k: float(row["held_%s_bytes" % k]) for k in ("param", "grad", "state", "peak")}


def check_losses(tag, base, other, np, bound):
    a, b = mh.losses(base), mh.losses(other)
    check(sorted(a) == sorted(b) and len(a) == STEPS * np,
          "%s: %d steps on each of %d ranks, both" % (tag, STEPS, np))
    if sorted(a) != sorted(b):
        return
    worst = max(abs(a[k] - b[k]) / max(abs(a[k]), 1e-30) for k in a)
    check(worst <= bound, "%s: shard=none's losses on every rank and step, worst relative %.2g"
          " (bound %.0e)" % (tag, worst, bound))


def trace_counts(events):
    """Per (rank, step): the collectives by kind, and the prefetched
    all-gathers."""
    per = {}
    for e in events:
        if e["ph"] != "X" or e["tid"] < 2:
            continue
        c = per.setdefault((e["pid"], e["args"]["step"]), {})
        kind = e["name"].split()[0]
        c[kind] = c.get(kind, 0) + 1
        if e["name"].endswith("(prefetched)"):
            c["prefetched"] = c.get("prefetched", 0) + 1
    return per


def check_trace(tag, folder, layout, np, prefetch):
    """The trace: the layout's reduce-scatters and all-gathers per rank and
    step, no all-reduce; the prefetched ones only under next."""
    rs, ag = int(layout.group(3)), int(layout.group(4))
    events = mh.load_trace(folder + ".json")
    counts = trace_counts(events)
    seen = sorted(set((c.get("reduce-scatter", 0), c.get("all-gather", 0),
                       c.get("all-reduce", 0), c.get("prefetched", 0)) for c in counts.values()))
    check(len(counts) == STEPS * np
          and all(c.get("reduce-scatter", 0) == rs and c.get("all-gather", 0) == ag
                  and "all-reduce" not in c for c in counts.values()),
          "%s: per rank and step %d reduce-scatters and %d all-gathers, no all-reduce"
          " (reduce-scatters, all-gathers, all-reduces, prefetched: %s)" % (tag, rs, ag, seen))
    if prefetch:
        check(all(0 < c.get("prefetched", 0) < ag for c in counts.values()),
              "%s: shard-prefetch=next prefetches all-gathers, all but each pass's first"
              " unit's (%s)" % (tag, seen))
    else:
        check(all("prefetched" not in c for c in counts.values()),
              "%s: shard-prefetch=none prefetches nothing (%s)" % (tag, seen))
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X" and e["tid"] >= 2
              and e["name"].startswith("all-gather")}
    check(tracks and all(names.get(t, "").startswith("all-gather, bucket") for t in tracks),
          "%s: the all-gathers on their own tracks" % tag)
    mh.check_tracks(events, tag + " trace")


def test_workload(tmp, tag, workload, batch, extra=(), adam=True, np=2, bound=1e-6):
    extra = list(extra)
    none = run(tmp, tag + "-none", workload, batch, "none", extra, np)
    full = run(tmp, tag + "-all", workload, batch, "all", extra, np, trace=True)
    ahead = run(tmp, tag + "-all-next", workload, batch, "all",
                extra + ["--shard-prefetch", "next"], np, trace=True)
    if none is None or full is None or ahead is None:
        return
    check_losses(tag + " shard=all", none[0], full[0], np, bound)
    check_losses(tag + " shard=all shard-prefetch=next", none[0], ahead[0], np, bound)

    hn, hf, ha = held(none[0]), held(full[0]), held(ahead[0])
    total_n = hn["param"] + hn["grad"] + hn["state"]
    total_f = hf["param"] + hf["grad"] + hf["state"]
    check(total_f <= 0.55 * total_n,
          "%s: rank 0 holds %.3f of shard=none's parameters, gradients and optimiser state"
          " (%d of %d bytes: parameters %d, gradients %d, state %d)"
          % (tag, total_f / total_n, total_f, total_n, hf["param"], hf["grad"], hf["state"]))
    if adam:
        check(0.9 / np <= hf["state"] / hn["state"] <= 1.1 / np,
              "%s: 1/%d of shard=none's optimiser state (%.3f)" % (tag, np,
                                                                   hf["state"] / hn["state"]))
    else:
        check(hn["state"] == hf["state"] == 0, tag + ": SGD holds no optimiser state either way")
    check(hf["peak"] > total_f and ha["peak"] > total_f,
          "%s: the peak counts the units gathered during the steps (%d and %d with prefetch,"
          " against %d held at the end)" % (tag, hf["peak"], ha["peak"], total_f))

    out = full[1]
    layout = LAYOUT.search(out)
    check(layout is not None, "%s: the algorithms line says how the units cut the buckets: %s"
          % (tag, [line for line in out.splitlines() if "all-gather" in line][:1]))
    check("  held         parameters" in out, tag + ": the summary prints what a rank holds")
    check("prefetched" in ahead[1] and "prefetched" not in out,
          tag + ": the algorithms line says when the next unit's all-gather is prefetched")
    if layout is None:
        return
    check_trace(tag + " shard=all", full[0], layout, np, False)
    check_trace(tag + " shard=all shard-prefetch=next", ahead[0], layout, np, True)
    return out


def test_accumulate(tmp):
    extra = ["--accumulate", "4", "--accumulate-sync", "last"]
    none = run(tmp, "accumulate-none", "bilstm", 4, "none", extra)
    full = run(tmp, "accumulate-all", "bilstm", 4, "all", extra + ["--shard-prefetch", "next"])
    if none is not None and full is not None:
        check_losses("bilstm accumulate-sync=last shard=all", none[0], full[0], 2, 1e-6)


def test_progress_thread(tmp):
    """grad-progress=thread: the progress thread tests the all-gathers in
    flight too (under the reducer's lock, MPI serialised)."""
    extra = ["--grad-progress", "thread"]
    none = run(tmp, "thread-none", "gpt", 2, "none", mh.GPT_SMALL + extra)
    full = run(tmp, "thread-all", "gpt", 2, "all",
               mh.GPT_SMALL + extra + ["--shard-prefetch", "next"], trace=True)
    if none is not None and full is not None:
        check_losses("gpt grad-progress=thread shard=all", none[0], full[0], 2, 1e-6)


def test_evaluation(tmp):
    """The cnn on its 28x28 images evaluates its test set after the steps:
    every layer gathered once, kept through it and given back after."""
    runs = {}
    for shard in ("none", "all"):
        folder = os.path.join(tmp, "evaluate-" + shard)
        p = mh.mpirun(BASE + ["--workload", "cnn", "--batch", "32", "--steps", "3",
                               "--shard", shard, "--csv", folder], timeout=300)
        check(p.returncode == 0, "cnn evaluating, shard=%s: runs on 2 ranks: %s"
              % (shard, p.stderr.strip()[-300:]))
        if p.returncode != 0:
            return
        runs[shard] = mh.read_runs(folder)[0]
    accuracy = [runs[s]["test_accuracy"] for s in ("none", "all")]
    if accuracy == ["", ""]:
        # Without Fashion-MNIST the cnn trains on synthetic images and has
        # no test set.
        print("skip cnn evaluating: no test set here (Fashion-MNIST not found)")
        return
    check(accuracy[0] == accuracy[1],
          "cnn evaluating: shard=all's test accuracy is shard=none's: %s" % accuracy)
    held = [float(runs[s]["held_param_bytes"]) for s in ("none", "all")]
    check(held[1] <= 0.55 * held[0],
          "cnn evaluating: the layers gathered for the evaluation are given back after it"
          " (%d of %d bytes of parameters held at the end)" % (held[1], held[0]))


def test_refusals(tmp):
    cases = [
        (["--grad-compress", "bf16"], "grad-compress", "shard=all with grad-compress"),
        (["--accumulate", "4", "--accumulate-sync", "every"], "--accumulate-sync last",
         "shard=all with accumulate-sync=every"),
    ]
    for args, words, what in cases:
        p = mh.mpirun(BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "3",
                               "--shard", "all"] + args, timeout=60)
        check(p.returncode == 2 and words in p.stderr,
              "%s: refused, exit 2, saying '%s' (got %d: %s)"
              % (what, words, p.returncode, p.stderr.strip()[-300:]))
    p = subprocess.run([mh.CLI] + BASE + ["--workload", "bilstm", "--batch", "4", "--steps", "3",
                                       "--shard", "all"],
                       env=mh.ENV, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and "only between ranks" in p.stderr,
          "alone, shard=all runs as shard=none and says why it does not apply: "
          + p.stderr.strip()[:300])


def with_mpi(tmp):
    test_workload(tmp, "bilstm", "bilstm", 8)
    # lstm-lm's embedding is frozen: no unit's, whole on every rank.
    test_workload(tmp, "lstm-lm", "lstm-lm", 4)
    # gpt: the embeddings the root unit (kept through the step), each
    # block a unit of two pieces, the final LayerNorm one.
    test_workload(tmp, "gpt", "gpt", 2, mh.GPT_SMALL + ["--layers", "2"])
    test_workload(tmp, "cnn", "cnn", 4, ["--input", "16x16x1"], adam=False)
    out = test_workload(tmp, "gpt-3-ranks", "gpt", 2, mh.GPT_SMALL, np=3, bound=1e-5)
    check(out is not None and "padded to a multiple of 3 floats" in out,
          "gpt on 3 ranks: the algorithms line says which buckets were padded")
    test_accumulate(tmp)
    test_progress_thread(tmp)
    test_evaluation(tmp)
    test_refusals(tmp)


sys.exit(mh.run_tests(with_mpi, prefix="tach-shard-all-"))
