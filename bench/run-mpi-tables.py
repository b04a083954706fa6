#!/usr/bin/env python3
"""run-mpi-tables.py: bench/run-mpi.sh's tables of the runs whose two sides
ran in the same rounds (OUT/PART/round-R/runs.csv).

Usage: run-mpi-tables.py accumulate FOLDER WHAT   accumulate-sync every against last
       run-mpi-tables.py shard FOLDER [WHAT]      shard none, grads, all and all with
                                                  shard-prefetch=next, with what rank 0
                                                  holds for the parameters
"""
import csv
import os
import sys


def load(folder):
    rows = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name, "runs.csv")
        if name.startswith("round-") and os.path.exists(path):
            rows += [dict(r, round=name) for r in csv.DictReader(open(path, newline=""))]
    return rows


def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else float("nan")


def spread(xs, fmt="%.1f"):
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (median(xs), min(xs), max(xs))


def value(r, k):
    return float(r[k]) if r.get(k, "") != "" else float("nan")


def ms(r, share):
    # A share of the median step, in ms of that step.
    return value(r, share) * 1000.0 / value(r, "median_steps_per_s")


def accumulate_table(rows, what):
    print()
    print("%-8s %-6s %-22s %-20s %-20s %-20s %-20s %5s" % (
        "workload", "sync", "samples/s", "comm ms/step", "comm %", "imbal ms/step",
        "comm+imbal ms", "busy"))
    for w in dict.fromkeys(r["workload"] for r in rows):
        per = {}
        for sync in ("every", "last"):
            mine = [r for r in rows if r["workload"] == w and r["accumulate-sync"] == sync]
            per[sync] = {r["round"]: r for r in mine}
            busy = max([value(r, "machine_busy") for r in mine if r["machine_busy"]] or [float("nan")])
            print("%-8s %-6s %-22s %-20s %-20s %-20s %-20s %4.0f%%" % (
                w, sync, spread([value(r, "items_per_s") for r in mine], "%.0f"),
                spread([ms(r, "comm_share") for r in mine]),
                spread([100 * value(r, "comm_share") for r in mine]),
                spread([ms(r, "imbalance_share") for r in mine]),
                spread([ms(r, "comm_share") + ms(r, "imbalance_share") for r in mine]), 100 * busy))
        both = [k for k in per["every"] if k in per["last"]]
        ratio = [ms(per["last"][k], "comm_share") / ms(per["every"][k], "comm_share") for k in both]
        ratio_all = [(ms(per["last"][k], "comm_share") + ms(per["last"][k], "imbalance_share"))
                     / (ms(per["every"][k], "comm_share") + ms(per["every"][k], "imbalance_share"))
                     for k in both]
        print("%-8s last/every, paired by round: exposed communication %s, with imbalance %s"
              " (target at most 0.25)" % (w, spread(ratio, "%.2f"), spread(ratio_all, "%.2f")))
    print("%s: 2 ranks, 4 micro-batches a step, accumulate-sync every (ddp-accumulate) and last"
          % what)
    print("(ddp-no-sync); each figure the median over the rounds (lowest-highest); comm: exposed")
    print("communication, imbal: waiting for the slowest rank, per step of 4 micro-batches")

def shard_of(r):
    # shard=all's prefetch is a value of its own in the table.
    return r["shard"] + ("-next" if r.get("shard-prefetch") == "next" else "")


def held_sum(r):
    return sum(value(r, k) for k in ("held_param_bytes", "held_grad_bytes", "held_state_bytes"))


def shard_table(rows, what):
    print()
    print("%-8s %-9s %-22s %-20s %10s %10s %10s %10s %5s" % (
        "workload", "shard", "samples/s", "comm ms/step", "params KB", "grads KB", "state KB",
        "peak KB", "busy"))
    for w in dict.fromkeys(r["workload"] for r in rows):
        per = {}
        for shard in dict.fromkeys(shard_of(r) for r in rows if r["workload"] == w):
            mine = [r for r in rows if r["workload"] == w and shard_of(r) == shard]
            per[shard] = {r["round"]: r for r in mine}
            busy = max([value(r, "machine_busy") for r in mine if r["machine_busy"]] or [float("nan")])
            held = [median([value(r, k) / 1024 for r in mine])
                    for k in ("held_param_bytes", "held_grad_bytes", "held_state_bytes",
                              "held_peak_bytes")]
            print("%-8s %-9s %-22s %-20s %10.0f %10.0f %10.0f %10.0f %4.0f%%" % (
                w, shard, spread([value(r, "items_per_s") for r in mine], "%.0f"),
                spread([value(r, "comm_share") * 1000 / value(r, "median_steps_per_s")
                        for r in mine]), *held, 100 * busy))
        # Against none where it ran; on the slow link (shard=all alone),
        # the prefetch against its absence.
        base = next((b for b in ("none", "all") if b in per), next(iter(per)))
        for shard in per:
            if shard == base:
                continue
            both = [k for k in per[base] if k in per[shard]]
            state = [value(per[shard][k], "held_state_bytes")
                     / value(per[base][k], "held_state_bytes")
                     for k in both if value(per[base][k], "held_state_bytes") > 0]
            ends = [held_sum(per[shard][k]) / held_sum(per[base][k]) for k in both]
            peak = [value(per[shard][k], "held_peak_bytes") / value(per[base][k], "held_peak_bytes")
                    for k in both]
            comm = [ms(per[shard][k], "comm_share") / ms(per[base][k], "comm_share")
                    for k in both if value(per[base][k], "comm_share") > 0]
            print("%-8s %s/%s, paired by round: optimiser state %s, held between steps %s,"
                  " peak %s, exposed communication %s"
                  % (w, shard, base, spread(state, "%.3f"), spread(ends, "%.3f"),
                     spread(peak, "%.3f"), spread(comm, "%.2f")))
    print("%s: 2 ranks, tuned's modes, the shard values in an order rotating round by round;"
          % what)
    print("each figure the median over the rounds (lowest-highest); comm: exposed communication;")
    print("what rank 0 holds for the parameters (held_*: parameters, gradients, optimiser state")
    print("at the end, between steps, and the peak during them)")

if sys.argv[1] == "accumulate":
    accumulate_table(load(sys.argv[2]), sys.argv[3])
else:
    shard_table(load(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "shared memory")
