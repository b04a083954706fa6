"""run_cpu_gpt.py: the gpt cases' tables of a bench/run-cpu.sh run, which
run_cpu_report.py prints after the other cases' (standard library only).

Per figure (gpt-train's steps/s, gpt-generate's decode tokens/s and its
prefill, the time to the first token) every side's median over rounds
with the lowest and highest round's and its thread count; then Tach over
each peer and over the best peer, each with the range of its rounds'
ratios (a round's Tach run over the same round's peer run), against
issue 44's targets: training 1.5x the best peer and 70% of the sgemm peak;
decoding 1.2x llama.cpp and within 1.5x of the bound that the bytes a
token reads (its weights and its keys and values) set at the machine's
read rate (l2-read, machine.txt's read_rate); prefill 1.5x the best peer.
Without Tach's runs (--peers-only) the peers' rates alone.
"""
import os

import gpt_common as gc
from run_cpu_report import figure, median, number, read_rows, round_ratios, table, verdict

PEERS = (("torch", "PyTorch"), ("torch-compile", "PyTorch compile"), ("jax", "JAX"),
         ("onnx", "ONNX Runtime"), ("llama", "llama.cpp"))
TRAIN_TARGET, TRAIN_PEAK_TARGET = 1.5, 70.0
DECODE_TARGET, DECODE_BOUND_FACTOR, PREFILL_TARGET = 1.2, 1.5, 1.5
# Tach's runs.csv columns for generation's two phases, the first present
# used: the gpt workload reports decoding and prefill apart (issue 44);
# without a decode column a request's median step is a decoded token's.
TACH_DECODE = ("decode_tokens_per_s", "decode_steps_per_s", "median_steps_per_s")
TACH_PREFILL = ("prefill_s", "prefill_s_median", "prefill_ms", "ttft_ms",
                "time_to_first_token_ms")

# Per figure: its case, its label, higher is better (a rate) or not (a
# time), Tach's columns and the peers' column.
FIGURES = (
    ("gpt-train", "gpt-train (steps/s)", True, ("median_steps_per_s",), "steps_per_s_median"),
    ("gpt-generate", "gpt-generate decode (tokens/s)", True, TACH_DECODE, "steps_per_s_median"),
    ("gpt-generate", "gpt-generate prefill (ms)", False, TACH_PREFILL, "prefill_s_median"),
)


def seconds(row, names):
    """The first of NAMES the row has (milliseconds as seconds), or None."""
    for name in names:
        if name in row:
            value = number(row, name)
            return value / 1e3 if name.endswith("_ms") else value
    return None


def tach_rounds(out, case, names, higher):
    """Tach's rounds of one figure at its best thread count: (values in
    file order, the count), or ([], None) without runs or the column."""
    path = os.path.join(out, f"tach-{case}", "runs.csv")
    if not os.path.exists(path):
        return [], None
    runs = [(int(r["threads"]), seconds(r, names)) for r in read_rows(path)]
    runs = [(t, v) for t, v in runs if v is not None]
    if not runs:
        return [], None
    counts = sorted({t for t, _ in runs})
    pick = max if higher else min
    best = pick(counts, key=lambda n: median([v for t, v in runs if t == n]))
    return [v for t, v in runs if t == best], best


def peer_rounds(out, peer, case, column, higher):
    """A peer's rounds of one figure (a row a round) and its usual thread
    count for it."""
    path = os.path.join(out, f"{case}-{peer}.csv")
    if not os.path.exists(path):
        return [], None
    rows = [r for r in read_rows(path) if r.get("case") == case]
    threads = "threads" if higher else "prefill_threads"
    counts = [int(r[threads]) for r in rows if r.get(threads)]
    return [number(r, column) for r in rows], max(set(counts), key=counts.count) if counts else None


def ratio_text(ratio, per_round):
    if ratio != ratio:
        return "-"
    return f"{ratio:.2f}" + (f" ({min(per_round):.2f}-{max(per_round):.2f})"
                             if len(per_round) > 1 else "")


def first_tokens(out):
    """Each generating peer's first greedy tokens (its last round's), by
    side: from the same weights and prompt they should agree."""
    tokens = {}
    for peer, side in PEERS:
        path = os.path.join(out, f"gpt-generate-{peer}.csv")
        if os.path.exists(path):
            rows = [r for r in read_rows(path) if r.get("first_tokens")]
            if rows:
                tokens[side] = rows[-1]["first_tokens"]
    return tokens


def decode_bound(info):
    """Tokens a second that the machine's measured read rate allows a
    decoded token of the run's shape, and its bytes; None without a rate."""
    try:
        rate = float(info.get("read_rate") or "nan")
    except ValueError:
        return None
    if rate != rate or rate <= 0:
        return None
    tokens = gc.CONTEXT - gc.PROMPT
    per_token = gc.decode_bytes(gc.LAYERS, gc.EMBED, gc.VOCAB, gc.PROMPT, tokens)
    return rate * 1e9 / per_token, per_token, rate


def report(out, wanted, info, isa, alone=False):
    """Prints the gpt cases' tables (ALONE: no other case's tables before
    them, so with the run's load and skipped peers); returns their summary
    rows (none when no gpt case ran)."""
    cases = [c for c in gc.GPT_CASES if c in wanted]
    rates, verdicts, rows = [], [], []
    bound = decode_bound(info)
    for case, label, higher, tach_columns, peer_column in FIGURES:
        if case not in cases:
            continue
        tach, tach_thr = tach_rounds(out, case, tach_columns, higher)
        scale = 1.0 if higher else 1e3  # prefill shown in ms
        rate = {"figure": label}
        row = {"case": label}
        if tach:
            rate["Tach"] = figure([v * scale for v in tach]) + f" x{tach_thr}"
            row.update({"Tach": median(tach), "Tach lo": min(tach), "Tach hi": max(tach),
                        "Tach thr": tach_thr})
        sides = {}
        for peer, side in PEERS:
            values, thr = peer_rounds(out, peer, case, peer_column, higher)
            if not values:
                continue
            sides[side] = values
            rate[side] = figure([v * scale for v in values]) + f" x{thr}"
            row.update({side: median(values), f"{side} lo": min(values),
                        f"{side} hi": max(values), f"{side} thr": thr})
        if not sides and not tach:
            continue
        rates.append(rate)
        pick = max if higher else min
        best_side = pick(sides, key=lambda s: median(sides[s])) if sides else None
        row["best peer"] = best_side or "-"
        if not tach:
            rows.append(row)
            continue
        # Tach over each peer: rates Tach's over theirs, times theirs over
        # Tach's, so above 1 Tach is faster either way.
        verdict_row = {"figure": label}
        ratios = {}
        for side, values in sides.items():
            per_round = (round_ratios(tach, values) if higher
                         else round_ratios(values, tach))
            ratio = (median(tach) / median(values) if higher
                     else median(values) / median(tach))
            ratios[side] = (ratio, per_round)
            verdict_row[f"Tach/{side}"] = ratio_text(ratio, per_round)
            row[f"Tach/{side}"] = ratio
            if per_round:
                row[f"Tach/{side} lo"], row[f"Tach/{side} hi"] = min(per_round), max(per_round)
        verdict_row["best peer"] = best_side or "-"
        if best_side:
            verdict_row["Tach/best"] = ratio_text(*ratios[best_side])
        # The target and the side it is against: llama.cpp for decoding,
        # the best peer for the others.
        decoding = case == "gpt-generate" and higher
        against = "llama.cpp" if decoding else best_side
        target = {"gpt-train": TRAIN_TARGET}.get(case, DECODE_TARGET if higher else PREFILL_TARGET)
        if against in ratios:
            ratio, per_round = ratios[against]
            met = verdict(ratio, min(per_round), max(per_round), target)
        else:
            met = "-"
        verdict_row["target"] = f"{target:.1f}x {'llama.cpp' if decoding else 'best'}"
        verdict_row["met"] = met
        row.update({"target": target, "target against": against or "-", "met": met})
        if case == "gpt-train":
            path = os.path.join(out, "tach-gpt-train", "runs.csv")
            shares = [100.0 * number(r, "peak_share") for r in read_rows(path)
                      if int(r["threads"]) == tach_thr]
            verdict_row[f"% {isa} sgemm peak"] = (figure(shares).replace(",", "")
                                                  + f" (target {TRAIN_PEAK_TARGET:.0f})")
            row[f"% {isa} sgemm peak"] = median(shares)
        elif higher and bound:
            # Within 1.5x of the bound: at least 1/1.5 of its tokens/s.
            shares = [100.0 * t / bound[0] for t in tach]
            verdict_row["% read bound"] = (figure(shares).replace(",", "")
                                           + f" (target {100.0 / DECODE_BOUND_FACTOR:.0f})")
            row["% read bound"] = median(shares)
            row["read bound tokens/s"] = bound[0]
        verdicts.append(verdict_row)
        rows.append(row)

    if not rates:
        return []
    print()
    print("gpt cases (issue 44): GPT-2's architecture at nanoGPT's shakespeare-char shape "
          f"({gc.LAYERS} layers, {gc.HEADS} heads, width {gc.EMBED}, context {gc.CONTEXT}, "
          f"vocabulary {gc.VOCAB}), fp32;\ntraining at batch {gc.TRAIN_BATCH}, AdamW, dropout "
          f"{gc.DROPOUT}; generation of one stream, a {gc.PROMPT}-token prompt's prefill then "
          f"greedy decoding to the context")
    print()
    print(table(rates, ["figure", "Tach"] + [s for _, s in PEERS] if any("Tach" in r for r in rates)
                else ["figure"] + [s for _, s in PEERS]))
    if verdicts:
        print()
        present = set().union(*verdicts)
        columns = (["figure"] + [f"Tach/{s}" for _, s in PEERS if f"Tach/{s}" in present]
                   + [c for c in ("best peer", "Tach/best", "target", "met",
                                  f"% {isa} sgemm peak", "% read bound") if c in present])
        print(table(verdicts, columns))
    print()
    notes = ["Each side's median over rounds (lowest-highest round) at its best of 1 and 2 "
             "threads (xN); prefill at its own best count."]
    if verdicts:
        notes.append("Tach/PEER: above 1 Tach is faster (rates Tach's over the peer's, prefill "
                     "times the peer's over Tach's), with the range of the rounds' ratios.")
        notes.append("Targets (issue 44): training 1.5x the best peer and 70% of the sgemm peak; "
                     "decoding 1.2x llama.cpp at equal\nprecision and within 1.5x of the read "
                     "bound; prefill 1.5x the best peer.")
    else:
        notes.append("No Tach runs in this folder (--peers-only, or tach-cli without the gpt "
                     "workload): the peers' rates alone.")
    tokens = first_tokens(out)
    if len(set(tokens.values())) > 1:
        notes.append("First greedy tokens DIFFER (the same weights and prompt should give the "
                     "same): " + "; ".join(f"{s} {t}" for s, t in tokens.items()) + ".")
    elif tokens:
        notes.append(f"First greedy tokens agree across {', '.join(tokens)}: "
                     f"{next(iter(tokens.values()))}.")
    busy = int(info.get("busy") or 0)
    if alone:
        notes.append(f"Load: {busy} of {info.get('cores') or os.cpu_count()} cores spinning "
                     f"during every side's runs (--busy {busy})." if busy
                     else "Load: none added (--busy 0).")
        if info.get("skipped"):
            notes.append(f"Skipped peers: {info['skipped']}.")
    if bound:
        notes.append(f"Decode bound: {bound[1] / 1e6:.1f} MB a token (weights and the mean "
                     f"token's keys and values, fp32) at {bound[2]:.1f} bytes/ns (l2-read, "
                     f"best of one core and all) = {bound[0]:,.0f} tokens/s, "
                     f"{1e3 / bound[0]:.2f} ms a token.")
    elif "gpt-generate" in cases:
        notes.append("Decode bound: no read rate in machine.txt (build bench/l2-read).")
    print("\n".join(notes))
    return rows
