#!/usr/bin/env python3
"""run_cpu_report.py: the tables of a bench/run-cpu.sh run, from its folder.

Usage: bench/run_cpu_report.py DIR [CASES]

CASES (comma-separated, as run-cpu.sh's --cases) limits the tables to the
cases of this run, where DIR also holds an earlier run's; by default every
case with a tach-CASE/runs.csv in DIR, and the gpt cases (issue 44) where
DIR has Tach's or a peer's runs of them (bench/run_cpu_gpt.py prints their
tables, the peers' alone after --peers-only).

run-cpu.sh calls it when its rounds are done; run alone, it prints a
finished run's tables again from the CSVs it kept (--out DIR).  It reads
DIR/machine.txt (the CPU, the level, the load), every peer's CSV and each
case's tach-CASE/runs.csv, writes DIR/summary.csv and prints two tables:

1. every side's steps/s: the median over rounds of each run's median, with
   the lowest and highest round's, at the side's best thread count;
2. per case the best peer, Tach's ratio to it with its range over rounds
   (each round's Tach run over the same round's run of that peer: the
   rounds interleave the sides, so a round's pair saw the same machine),
   the target, whether it is met (unresolved where the range holds the
   target), and Tach's share of the sgemm peak with its range.

It needs Python's standard library only (test-run-cpu-report runs it on a
made-up folder).
"""
import csv
import os
import statistics
import sys

# Issue 37's targets: Tach's steps/s over the best of all peers'.
TARGETS = {"bilstm": 2.0, "lstm-lm-train": 2.0, "cnn": 1.6, "lstm-lm-generate": 8.0}
PEERS = ("torch", "torch-compile", "tf", "jax", "onnx")
SIDES = ("PyTorch", "PyTorch compile", "TF", "JAX", "ONNX Runtime")
CASE_ORDER = ("bilstm", "lstm-lm-generate", "lstm-lm-train", "cnn", "cnn-bf16")
# bench/run_cpu_gpt.py prints these cases' tables.
GPT_CASES = ("gpt-train", "gpt-generate")


def read_rows(path):
    """A CSV's rows as dicts (runs.csv is written with CRLF line ends)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(row, *names):
    """The first of names that the row has, as a float (NaN when empty)."""
    for name in names:
        if name in row:
            try:
                return float(row[name])
            except ValueError:
                return float("nan")
    raise SystemExit(f"run_cpu_report.py: a row has none of {names}; its columns: "
                     + ", ".join(row))


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def table(rows, columns):
    """rows (dicts of text) as aligned columns, right-justified, '-' where a
    row has no value."""
    cells = [[str(r.get(c, "-")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def machine(out):
    """machine.txt's key=value lines."""
    path = os.path.join(out, "machine.txt")
    if not os.path.exists(path):
        raise SystemExit(f"run_cpu_report.py: {path} is missing: is {out} a run-cpu.sh --out "
                         "folder whose run got past its header?")
    info = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            info[key] = value
    return info


def figure(values):
    """'median (lowest-highest)' of a side's rounds; the median alone for one."""
    values = [v for v in values if v == v]
    if not values:
        return "-"
    med = median(values)
    digits = 0 if med >= 1000 else 2
    if len(values) == 1:
        return f"{med:,.{digits}f}"
    return f"{med:,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def round_ratios(tach_rounds, peer_rounds):
    """Tach's rate over a peer's, a ratio a round: paired by round (the
    rounds interleave the sides, so a round's pair saw the same machine);
    where a round is missing on one side, the widest the ranges allow."""
    if peer_rounds and len(peer_rounds) == len(tach_rounds):
        return [t / p for t, p in zip(tach_rounds, peer_rounds) if p > 0]
    if peer_rounds and tach_rounds:
        return [min(tach_rounds) / max(peer_rounds), max(tach_rounds) / min(peer_rounds)]
    return []


def verdict(ratio, lo, hi, target):
    """yes where every round's ratio reaches TARGET, no where none does,
    unresolved where the rounds straddle it; - without a ratio."""
    if ratio != ratio or target != target:
        return "-"
    if lo >= target:
        return "yes"
    if hi < target:
        return "no"
    return "unresolved"


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = sys.argv[1]
    info = machine(out)
    isa = info.get("tach_isa") or "unknown"
    busy = int(info.get("busy") or 0)
    skipped = info.get("skipped", "")
    wanted = sys.argv[2].split(",") if len(sys.argv) == 3 else CASE_ORDER + GPT_CASES
    cases = [c for c in CASE_ORDER
             if c in wanted and os.path.exists(os.path.join(out, f"tach-{c}", "runs.csv"))]
    gpt_ran = [c for c in GPT_CASES if c in wanted and (
        os.path.exists(os.path.join(out, f"tach-{c}", "runs.csv"))
        or any(os.path.exists(os.path.join(out, f"{c}-{p}.csv")) for p in PEERS + ("llama",)))]
    if not cases and not gpt_ran:
        raise SystemExit(f"run_cpu_report.py: no tach-CASE/runs.csv in {out}: no case finished a "
                         "round")
    if not cases:
        import run_cpu_gpt

        write_summary(out, run_cpu_gpt.report(out, gpt_ran, info, isa, alone=True))
        return 0

    # Every peer's rows, each named by its side.
    peer_runs = []
    for peer in PEERS:
        path = os.path.join(out, f"{peer}.csv")
        if not os.path.exists(path):
            continue
        for row in read_rows(path):
            side = {"pytorch": "PyTorch", "tensorflow": "TF", "jax": "JAX",
                    "onnxruntime": "ONNX Runtime"}.get(row.get("framework"))
            if row.get("mode") == "compile":
                side = "PyTorch compile"
            peer_runs.append(dict(row, side=side))

    peaks, rows, rates, verdicts = [], [], [], []
    for case in cases:
        all_runs = read_rows(os.path.join(out, f"tach-{case}", "runs.csv"))
        # The device's fp32 sgemm peak, as Tach measured it on an idle
        # machine and recorded with each run: achieved / share.
        for r in all_runs:
            share = number(r, "peak_share")
            if share > 0:
                peaks.append(number(r, "achieved_gflops") / share)
        # Tach at its best thread count, as each peer (the share stays of
        # the all-core peak); its runs in file order are its rounds.
        counts = sorted({int(r["threads"]) for r in all_runs})
        tach_threads = max(counts, key=lambda n: median(
            [number(r, "median_steps_per_s") for r in all_runs if int(r["threads"]) == n]))
        tach = [r for r in all_runs if int(r["threads"]) == tach_threads]
        tach_rounds = [number(r, "median_steps_per_s") for r in tach]
        shares = [100.0 * number(r, "peak_share") for r in tach]
        tach_median = median(tach_rounds)
        peer_case = case.removesuffix("-bf16")
        precision = "bf16" if case.endswith("-bf16") else "fp32"
        runs = [r for r in peer_runs if r.get("case") == peer_case
                and r.get("precision") == precision]
        row = {"case": case, "rounds": len(tach), "Tach": tach_median,
               "Tach lo": min(tach_rounds), "Tach hi": max(tach_rounds),
               "Tach thr": int(tach_threads)}
        rate = {"case": case, "Tach": figure(tach_rounds) + f" x{int(tach_threads)}"}
        best_side, best, best_rounds = None, 0.0, []
        for side in SIDES:
            group = [r for r in runs if r["side"] == side]
            if not group:
                continue
            side_rounds = [number(r, "steps_per_s_median") for r in group]
            side_median = median(side_rounds)
            row[side] = side_median
            row[f"{side} lo"], row[f"{side} hi"] = min(side_rounds), max(side_rounds)
            row[f"{side} thr"] = statistics.mode(int(r["threads"]) for r in group)
            rate[side] = figure(side_rounds) + f" x{row[f'{side} thr']}"
            if side_median > best:
                best_side, best, best_rounds = side, side_median, side_rounds
        target = TARGETS.get(peer_case, float("nan"))
        ratio = tach_median / best if best > 0 else float("nan")
        per_round = round_ratios(tach_rounds, best_rounds)
        lo = min(per_round) if per_round else float("nan")
        hi = max(per_round) if per_round else float("nan")
        met = verdict(ratio, lo, hi, target)
        row.update({
            "best peer": best_side or "-",
            "Tach/best": ratio, "Tach/best lo": lo, "Tach/best hi": hi,
            "target": target,
            "met": met,
            "Tach GFLOP/s": median([number(r, "achieved_gflops") for r in tach]),
            f"% {isa} sgemm peak": median(shares),
            f"% {isa} sgemm peak lo": min(shares), f"% {isa} sgemm peak hi": max(shares),
        })
        rows.append(row)
        rates.append(rate)
        ratio_text = "-" if ratio != ratio else (
            f"{ratio:.2f}" + (f" ({lo:.2f}-{hi:.2f})" if len(per_round) > 1 else ""))
        verdicts.append({"case": case, "rounds": len(tach), "best peer": best_side or "-",
                         "Tach/best": ratio_text, "target": f"{target:.1f}", "met": met,
                         "Tach GFLOP/s": f"{row['Tach GFLOP/s']:.1f}",
                         # Generation streams weights a token at a time: its
                         # bound is bench/README.md's per-token one, not the
                         # sgemm peak.
                         f"% {isa} sgemm peak": "-" if peer_case == "lstm-lm-generate"
                         else figure(shares).replace(",", "")})

    peak = median(peaks)
    print()
    print(f"sgemm peak at {isa}: {peak:.1f} GFLOP/s fp32 (Tach's device figure at the level "
          "its kernels run at, measured on 1024^3 products and cached per CPU model and level; "
          "tach-cli devices)")
    print()
    print(table(rates, ["case", "Tach"] + [s for s in SIDES if any(s in r for r in rates)]))
    print()
    print(table(verdicts, list(verdicts[0])))
    print()
    print("Steps/s (tokens/s for generation): each side's median over rounds of each run's median, "
          "(lowest-highest round),\nat its best of 1 and 2 threads (xN). Tach/best: Tach over the "
          "fastest of all peers (best peer), with the range\nof its rounds' ratios, each round's Tach over "
          "the same round's peer; met: yes where every round's ratio\nreaches issue 37's target, "
          "no where none does, unresolved where the rounds straddle it.\n"
          + (f"Load: {busy} of {info.get('cores') or os.cpu_count()} cores spinning during every side's runs "
             f"(--busy {busy}).\n" if busy else "Load: none added (--busy 0).\n")
          + (f"Skipped peers: {skipped}.\n" if skipped else "")
          + "GFLOP/s count every side's work as a direct algorithm does it: Tach's cnn runs conv2 "
          "by Winograd's F(4x4, 5x5)\n(4 multiplies an output, not 25), and lstm-lm training "
          "multiplies each distinct input row once,\nso their shares of the peak count work "
          "not done (the cnn's can pass 100%).")
    if gpt_ran:
        import run_cpu_gpt

        rows += run_cpu_gpt.report(out, gpt_ran, info, isa)
    write_summary(out, rows)
    return 0


def write_summary(out, rows):
    """summary.csv: every case's figures as numbers, the columns of all."""
    columns = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
