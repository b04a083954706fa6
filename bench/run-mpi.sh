#!/bin/sh
# run-mpi.sh: data-parallel training on this machine, one process against
# 2 ranks, side by side in one run.
#
# For each training workload (bilstm, lstm-lm, cnn) and each grad-sync
# (per-tensor, fused, overlap), `mpirun -np 2 tach-cli run --scaling
# --rounds 1` runs, in a shuffled order, the 2 ranks at batch B each (one
# thread each), one process at batch B (the weak-scaling baseline, the
# other rank asleep) and one process at batch 2B (strong).  The grad-sync
# values are interleaved round by round (per-tensor, fused, overlap,
# per-tensor, fused, overlap, ...; every workload within each round), so
# that a drift of the machine falls on every value alike; each round's
# runs go to a CSV folder of their own (OUT/local/round-R), and each
# efficiency is paired within its round.  The table printed at the end
# has per case the median over the rounds, with the range from the
# lowest round to the highest, of both sides' samples/s, the weak- and
# strong-scaling efficiency and the 2-rank runs' phases (exposed
# communication, packing, imbalance).
#
# Gradient accumulation, interleaved in the same rounds: per workload the
# 2 ranks at batch B with 4 micro-batches a step, accumulate-sync every
# (the ddp-accumulate preset) and last (ddp-no-sync), a quarter of the
# steps (the same micro-batches as a grad-sync run), the two in an order
# that alternates round by round (OUT/accum/round-R).  Its table has per
# case samples/s, the step's exposed communication and imbalance (ms and
# share), and last's communication over every's, paired by round.
# Sharding too (--parts shard): per workload the 2 ranks at batch B under
# the tuned preset with shard none, grads (ZeRO-2), all (ZeRO-3, FSDP's
# FULL_SHARD) and all with shard-prefetch=next, in an order that rotates
# round by round (OUT/shard/round-R); its table has samples/s, the exposed
# communication and what rank 0 holds for the parameters (runs.csv's
# held_* columns: parameters, gradients, optimiser state, peak), and each
# value's state and peak over none's, paired by round.  On the slow link,
# the cnn under shard=all with shard-prefetch none and next, alternating.
#
# Then, as root (network namespaces; skipped otherwise), the slow link:
# tools/mpi-slow-link.sh puts each rank in a namespace of its own behind a
# veth pair limited by tc tbf to --rate, and runs the cnn (the largest
# gradient, 13 MB) with grad-sync per-tensor and overlap interleaved, then
# `explain` between them: how much of the communication per-tensor exposes
# overlap hides; and ddp-accumulate against ddp-no-sync, alternating.
#
# Usage: bench/run-mpi.sh [--rounds N] [--quick] [--cases LIST] [--parts LIST]
#                         [--rate RATE] [--no-slow-link] [--out DIR]
#   --rounds N      rounds of each comparison (default 5)
#   --parts LIST    what to compare: grad-sync, accumulate, shard (default
#                   grad-sync,accumulate,shard), each locally and on the
#                   slow link
#   --quick         fewer steps (and 2 rounds unless --rounds says), to check the
#                   script in a few minutes
#   --cases LIST    comma-separated workloads (default bilstm,lstm-lm,cnn)
#   --rate RATE     the slow link's rate each way (default 100mbit)
#   --no-slow-link  skip the slow-link part
#   --out DIR       keep the CSVs and logs there (default: a new temporary folder)
# Environment: TACH_CLI (default build/app/tach-cli), MPIRUN (default mpirun).
# As root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, which this script sets.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cli=${TACH_CLI:-$root/build/app/tach-cli}
mpirun=${MPIRUN:-mpirun}
rounds=
quick=no
cases="bilstm,lstm-lm,cnn"
parts="grad-sync,accumulate,shard"
rate=100mbit
slow_link=yes
out=

while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --cases) cases=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --no-slow-link) slow_link=no; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-mpi.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

command -v "$mpirun" >/dev/null 2>&1 \
  || { echo "run-mpi.sh: no $mpirun: apt-get install openmpi-bin libopenmpi-dev, then rebuild" >&2; exit 2; }
[ -x "$cli" ] || { echo "run-mpi.sh: no $cli: build first (meson compile -C build)" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Containers refuse shared memory's single copy (Open MPI's vader).
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"

# Each workload's batch per rank and steps: about a second of steps per
# run at one thread on a 2-core EPYC (the cnn's per-rank batch is smaller:
# its 13 MB of gradients make the all-reduce the part worth seeing).
steps=60
slow_steps=12
if [ "$quick" = yes ]; then
  steps=12
  slow_steps=4
  rounds=${rounds:-2}
fi
rounds=${rounds:-5}
# Accumulation's steps are 4 micro-batches each: a quarter of the steps.
accum_steps=$((steps / 4))
slow_accum_steps=$((slow_steps / 2))
has_part () { case ",$parts," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
batch_of () {
  case $1 in
    bilstm) echo 256 ;;
    lstm-lm) echo 64 ;;
    cnn) echo 32 ;;
    *) echo "run-mpi.sh: unknown workload '$1' (bilstm, lstm-lm, cnn)" >&2; exit 2 ;;
  esac
}

# One run of the 2 ranks: workload $1 at batch $2 per rank, one thread each,
# its output to the log $3, the rest its own arguments; the script stops
# with the log's end where it fails.
rank_run () {
  w_=$1 b_=$2 log_=$3
  shift 3
  "$mpirun" -np 2 "$cli" run --workload "$w_" --device cpu --threads 1 --batch "$b_" "$@" \
    > "$log_" 2>&1 || { echo "run-mpi.sh: $w_ $* failed:" >&2; tail -5 "$log_" >&2; exit 1; }
}

# Part $1's values (the rest) in round $r's order, which rotates round by
# round (two values alternate) so that drift falls alike on all; nothing
# where the part is not asked for.
alternate () {
  has_part "$1" || return 0
  shift
  k_=$((r % $#)) i_=0 first_= last_=
  for v_ in "$@"; do
    if [ "$i_" -lt "$k_" ]; then last_="$last_ $v_"; else first_="$first_ $v_"; fi
    i_=$((i_ + 1))
  done
  echo $first_ $last_
}

echo "run-mpi.sh: $(nproc) processors, $("$mpirun" --version | head -1), rounds $rounds, out $out"
for r in $(seq 1 "$rounds"); do
  for w in $(echo "$cases" | tr ',' ' '); do
    b=$(batch_of "$w")
    # Accumulation with and without no_sync, the order alternating.
    for preset in $(alternate accumulate ddp-accumulate ddp-no-sync); do
      echo "== round $r/$rounds: $w, batch $b per rank x 4 micro-batches, preset $preset"
      rank_run "$w" "$b" "$out/accum-$w-$preset-$r.log" --steps "$accum_steps" --warmup 2 \
        --preset "$preset" --seed "$r" --csv "$out/accum/round-$r"
    done
    # Sharding: none, grads, all and all prefetching, the order rotating.
    for shard in $(alternate shard none grads all all-next); do
      echo "== round $r/$rounds: $w, batch $b per rank, shard $shard"
      prefetch=none
      [ "$shard" = all-next ] && prefetch=next
      rank_run "$w" "$b" "$out/shard-$w-$shard-$r.log" --steps "$steps" --warmup 5 \
        --preset tuned --shard "${shard%-next}" $([ "$prefetch" = next ] \
        && echo --shard-prefetch next) --seed "$r" --csv "$out/shard/round-$r"
    done
    has_part grad-sync || continue
    for sync in per-tensor fused overlap; do
      echo "== round $r/$rounds: $w, batch $b per rank, grad-sync $sync"
      # A seed per round: the order of the three runs in a round is drawn
      # from it, so that it changes from round to round.
      rank_run "$w" "$b" "$out/local-$w-$sync-$r.log" --steps "$steps" --warmup 5 \
        --preset tuned --grad-sync "$sync" --scaling --rounds 1 --seed "$r" \
        --csv "$out/local/round-$r"
    done
  done
done

has_part grad-sync && python3 - "$out/local" "$rounds" <<'EOF'
import csv, os, sys
folder, n_rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, n_rounds + 1):
    with open(os.path.join(folder, "round-%d" % r, "runs.csv"), newline="") as f:
        rows += [dict(row, round=r) for row in csv.DictReader(f)]

def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else float("nan")

def spread(xs, scale=1.0, fmt="%.0f"):
    """The median over the rounds (the lower middle: one of them) and the
    range from the lowest round to the highest."""
    xs = [scale * x for x in xs if x == x]
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (median(xs), min(xs), max(xs))

def value(r, k):
    return float(r[k]) if r.get(k, "") != "" else float("nan")

cases = []
for r in rows:
    key = (r["workload"], r["grad-sync"])
    if key not in cases:
        cases.append(key)
print()
print("%-8s %-10s %-20s %-20s %-20s %-14s %-14s %-17s %-14s %-14s %5s" % (
    "workload", "grad-sync", "1 proc B/s", "1 proc 2B/s", "2 ranks/s", "weak %",
    "strong %", "comm %", "pack %", "imbal %", "busy"))
for w, sync in cases:
    mine = [r for r in rows if (r["workload"], r["grad-sync"]) == (w, sync)]
    ranked = [r for r in mine if r["ranks"] == "2"]
    batch = min(int(r["batch"]) for r in mine)
    one_b = [value(r, "items_per_s") for r in mine if r["ranks"] == "1" and int(r["batch"]) == batch]
    one_2b = [value(r, "items_per_s") for r in mine if r["ranks"] == "1" and int(r["batch"]) > batch]
    of = lambda k, scale=1.0, fmt="%.0f": spread([value(r, k) for r in ranked], scale, fmt)
    busy = max([value(r, "machine_busy") for r in mine if r["machine_busy"]] or [float("nan")])
    print("%-8s %-10s %-20s %-20s %-20s %-14s %-14s %-17s %-14s %-14s %4.0f%%" % (
        w, sync, spread(one_b), spread(one_2b), of("items_per_s"),
        of("weak_scaling", 100), of("strong_scaling", 100), of("comm_share", 100, "%.1f"),
        of("pack_share", 100, "%.1f"), of("imbalance_share", 100, "%.1f"), 100 * busy))
print("each figure: the median over %d round%s (lowest-highest round), the grad-sync values"
      % (n_rounds, "" if n_rounds == 1 else "s"))
print("interleaved round by round; samples/s of one process at the batch per rank and at the")
print("2 ranks' global batch, and of the 2 ranks; weak: 2 ranks' samples/s over twice one")
print("process's at the same batch per process, strong: over twice one process's at the global")
print("batch, each within its round; comm, pack, imbal: the 2 ranks' mean shares of the step")
print("(exposed communication, casting and averaging, waiting for the slowest rank); busy: the")
print("most of the CPU time other processes took during a case's runs")
EOF

# The accumulation table: both sides of each case from the same rounds.
accum_table () {
  python3 "$here/run-mpi-tables.py" accumulate "$1" "$2"
}
has_part accumulate && accum_table "$out/accum" "shared memory"

# The sharding table: both sides of each case from the same rounds.
has_part shard && python3 "$here/run-mpi-tables.py" shard "$out/shard"

if [ "$slow_link" = no ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "run-mpi.sh: the slow link needs root (network namespaces): skipped"
  exit 0
fi
# The ranks run in namespaces of their own, where /tmp is the same file
# system: the CSV folder and the tach-cli are reached by absolute path.
echo
has_part grad-sync \
  && echo "== slow link: $rate each way, cnn batch 32 per rank, horovod-no-overlap (per-tensor) and ddp (overlap)"
status=0
for r in $(seq 1 "$rounds"); do
  has_part grad-sync || break
  # Alternate which goes first, so drift falls alike on both.
  order="horovod-no-overlap ddp"
  [ $((r % 2)) -eq 0 ] && order="ddp horovod-no-overlap"
  for preset in $order; do
    "$root/tools/mpi-slow-link.sh" --rate "$rate" --mpirun "$mpirun" -- "$cli" run \
      --workload cnn --device cpu --threads 1 --batch 32 --steps "$slow_steps" --warmup 2 \
      --preset "$preset" --csv "$out/slow" >> "$out/slow.log" 2>&1 || status=$?
    [ "$status" -eq 77 ] && { echo "run-mpi.sh: the slow link is not available here (see $out/slow.log)"; exit 0; }
    [ "$status" -eq 0 ] || { echo "run-mpi.sh: the slow-link run failed:" >&2; tail -5 "$out/slow.log" >&2; exit 1; }
  done
done
if has_part accumulate; then
  echo "== slow link: cnn batch 32 per rank x 4 micro-batches, ddp-accumulate and ddp-no-sync"
  for r in $(seq 1 "$rounds"); do
    order="ddp-accumulate ddp-no-sync"
    [ $((r % 2)) -eq 0 ] && order="ddp-no-sync ddp-accumulate"
    for preset in $order; do
      "$root/tools/mpi-slow-link.sh" --rate "$rate" --mpirun "$mpirun" -- "$cli" run \
        --workload cnn --device cpu --threads 1 --batch 32 --steps "$slow_accum_steps" \
        --warmup 1 --preset "$preset" --seed "$r" --csv "$out/slow-accum/round-$r" \
        >> "$out/slow-accum.log" 2>&1 || status=$?
      [ "$status" -eq 77 ] && { echo "run-mpi.sh: the slow link is not available here (see $out/slow-accum.log)"; exit 0; }
      [ "$status" -eq 0 ] || { echo "run-mpi.sh: the slow-link run failed:" >&2; tail -5 "$out/slow-accum.log" >&2; exit 1; }
    done
  done
  accum_table "$out/slow-accum" "slow link, $rate each way"
fi
if has_part shard; then
  echo "== slow link: cnn batch 32 per rank, shard=all with shard-prefetch none and next"
  for r in $(seq 1 "$rounds"); do
    for prefetch in $(alternate shard none next); do
      "$root/tools/mpi-slow-link.sh" --rate "$rate" --mpirun "$mpirun" -- "$cli" run \
        --workload cnn --device cpu --threads 1 --batch 32 --steps "$slow_steps" --warmup 2 \
        --preset tuned --shard all --shard-prefetch "$prefetch" --seed "$r" \
        --csv "$out/slow-shard/round-$r" >> "$out/slow-shard.log" 2>&1 || status=$?
      [ "$status" -eq 77 ] && { echo "run-mpi.sh: the slow link is not available here (see $out/slow-shard.log)"; exit 0; }
      [ "$status" -eq 0 ] || { echo "run-mpi.sh: the slow-link run failed:" >&2; tail -5 "$out/slow-shard.log" >&2; exit 1; }
    done
  done
  python3 "$here/run-mpi-tables.py" shard "$out/slow-shard" "slow link, $rate each way"
fi
has_part grad-sync || exit 0
"$root/tools/mpi-slow-link.sh" --rate "$rate" --mpirun "$mpirun" -- "$cli" explain \
  --workload cnn --device cpu --threads 1 --batch 32 --steps "$slow_steps" --warmup 2 \
  --from horovod-no-overlap --to ddp --rounds 3 --budget 0 \
  > "$out/slow-explain.log" 2>&1 || true

python3 - "$out/slow/runs.csv" "$rate" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))

def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else float("nan")

def spread(xs, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (median(xs), min(xs), max(xs))

print("%-10s %-24s %-24s" % ("grad-sync", "steps/s", "exposed ms"))
comm = {}
for sync in ("per-tensor", "overlap"):
    mine = [r for r in rows if r["grad-sync"] == sync]
    rates = [float(r["median_steps_per_s"]) for r in mine]
    exposed = [float(r["comm_share"]) / float(r["median_steps_per_s"]) * 1000 for r in mine]
    comm[sync] = median(exposed)
    print("%-10s %-24s %-24s" % (sync, spread(rates, "%.3f"), spread(exposed, "%.0f")))
print("medians over %d runs each (lowest-highest), the two alternating run by run"
      % len([r for r in rows if r["grad-sync"] == "overlap"]))
hidden = 1 - comm["overlap"] / comm["per-tensor"]
print("overlap hides %.0f%% of the communication per-tensor exposes (target 80%%), link %s each way"
      % (100 * hidden, sys.argv[2]))
EOF
echo "explain horovod-no-overlap -> ddp on the slow link ($out/slow-explain.log):"
grep -E "ms/step|^horovod-no-overlap |^ddp |Gradient sync|Bucket size|verdict" \
  "$out/slow-explain.log" || true
