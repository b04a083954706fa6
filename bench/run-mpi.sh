#!/bin/sh
# run-mpi.sh: data-parallel training on this machine, one process against
# 2 ranks, side by side in one run.
#
# For each training workload (bilstm, lstm-lm, cnn) and each grad-sync
# (per-tensor, fused, overlap), `mpirun -np 2 tach-cli run --scaling` runs,
# in shuffled rounds, the 2 ranks at batch B each (one thread each), one
# process at batch B (the weak-scaling baseline, the other rank asleep) and
# one process at batch 2B (strong), and writes every run to one CSV folder:
# the table printed at the end has per case both sides' samples/s, the
# weak- and strong-scaling efficiency with their 95% intervals, and the
# 2-rank runs' phases (exposed communication, packing, imbalance, the
# slowest rank and how much longer its compute took).
#
# Then, as root (network namespaces; skipped otherwise), the slow link:
# tools/mpi-slow-link.sh puts each rank in a namespace of its own behind a
# veth pair limited by tc tbf to --rate, and runs the cnn (the largest
# gradient, 13 MB) with grad-sync per-tensor and overlap interleaved, then
# `explain` between them: how much of the communication per-tensor exposes
# overlap hides.
#
# Usage: bench/run-mpi.sh [--rounds N] [--quick] [--cases LIST] [--rate RATE]
#                         [--no-slow-link] [--out DIR]
#   --rounds N      rounds of each comparison (default 5)
#   --quick         fewer steps and rounds, to check the script in a few minutes
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
rounds=5
quick=no
cases="bilstm,lstm-lm,cnn"
rate=100mbit
slow_link=yes
out=

while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --cases) cases=$2; shift 2 ;;
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
  rounds=2
fi
batch_of () {
  case $1 in
    bilstm) echo 256 ;;
    lstm-lm) echo 64 ;;
    cnn) echo 32 ;;
    *) echo "run-mpi.sh: unknown workload '$1' (bilstm, lstm-lm, cnn)" >&2; exit 2 ;;
  esac
}

echo "run-mpi.sh: $(nproc) processors, $("$mpirun" --version | head -1), rounds $rounds, out $out"
for w in $(echo "$cases" | tr ',' ' '); do
  b=$(batch_of "$w")
  for sync in per-tensor fused overlap; do
    echo "== $w, batch $b per rank, grad-sync $sync"
    "$mpirun" -np 2 "$cli" run --workload "$w" --device cpu --threads 1 --batch "$b" \
      --steps "$steps" --warmup 5 --preset tuned --grad-sync "$sync" --scaling \
      --rounds "$rounds" --csv "$out/local" > "$out/local-$w-$sync.log" 2>&1 \
      || { echo "run-mpi.sh: $w $sync failed:" >&2; tail -5 "$out/local-$w-$sync.log" >&2; exit 1; }
  done
done

python3 - "$out/local/runs.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))

def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else float("nan")

def pct(r, k):
    v, lo, hi = (r.get(k + s, "") for s in ("", "_lo", "_hi"))
    if not v:
        return "-"
    if not lo or not hi:
        return "%.0f%%" % (100 * float(v))
    return "%.0f%% (%.0f-%.0f)" % (100 * float(v), 100 * float(lo), 100 * float(hi))

print()
print("%-8s %-10s %12s %12s %12s  %-16s %-16s %6s %6s %6s %5s" % (
    "workload", "grad-sync", "1 proc B/s", "1 proc 2B/s", "2 ranks/s", "weak", "strong",
    "comm", "pack", "imbal", "busy"))
cases = []
for r in rows:
    key = (r["workload"], r["grad-sync"])
    if key not in cases:
        cases.append(key)
for w, sync in cases:
    mine = [r for r in rows if (r["workload"], r["grad-sync"]) == (w, sync)]
    ranked = [r for r in mine if r["ranks"] == "2"]
    batch = min(int(r["batch"]) for r in mine)
    one_b = [float(r["items_per_s"]) for r in mine if r["ranks"] == "1" and int(r["batch"]) == batch]
    one_2b = [float(r["items_per_s"]) for r in mine if r["ranks"] == "1" and int(r["batch"]) > batch]
    two = [float(r["items_per_s"]) for r in ranked]
    last = ranked[-1] if ranked else {}
    share = lambda k: "%5.1f%%" % (100 * median([float(r[k]) for r in ranked])) if ranked else "-"
    busy = max([float(r["machine_busy"]) for r in mine if r["machine_busy"]] or [float("nan")])
    print("%-8s %-10s %12.1f %12.1f %12.1f  %-16s %-16s %6s %6s %6s %4.0f%%" % (
        w, sync, median(one_b), median(one_2b), median(two), pct(last, "weak_scaling"),
        pct(last, "strong_scaling"), share("comm_share"), share("pack_share"),
        share("imbalance_share"), 100 * busy))
print("samples/s: medians over the rounds; weak: 2 ranks' samples/s over twice one process's at")
print("the same batch per process, strong: over twice one process's at the 2 ranks' global batch,")
print("each paired by round with its 95% interval; comm, pack, imbal: the 2 ranks' mean shares of")
print("the step (exposed communication, casting and averaging, waiting for the slowest rank);")
print("busy: the most of the CPU time other processes took during a case's runs")
EOF

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
echo "== slow link: $rate each way, cnn batch 32 per rank, horovod-no-overlap (per-tensor) and ddp (overlap)"
status=0
for r in $(seq 1 "$rounds"); do
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

print("%-10s %10s %12s %10s" % ("grad-sync", "steps/s", "step ms", "exposed"))
comm = {}
for sync in ("per-tensor", "overlap"):
    mine = [r for r in rows if r["grad-sync"] == sync]
    rate = median([float(r["median_steps_per_s"]) for r in mine])
    exposed = median([float(r["comm_share"]) / float(r["median_steps_per_s"]) * 1000 for r in mine])
    comm[sync] = exposed
    print("%-10s %10.3f %12.1f %8.0f ms" % (sync, rate, 1000 / rate, exposed))
hidden = 1 - comm["overlap"] / comm["per-tensor"]
print("overlap hides %.0f%% of the communication per-tensor exposes (target 80%%), link %s each way"
      % (100 * hidden, sys.argv[2]))
EOF
echo "explain horovod-no-overlap -> ddp on the slow link ($out/slow-explain.log):"
grep -E "Gradient sync|Bucket size|verdict" "$out/slow-explain.log" || true
