#!/bin/bash
# gpu-profile.sh: where one workload's GPU step spends its time, kernel by
# kernel, in Tach and in PyTorch on the same GPU (what gpu-check.sh's table
# cannot say: it times whole steps).
#
#   tools/gpu-profile.sh [BUILD] [WORKLOAD]
#
# BUILD as for gpu-check.sh (the binaries come from BUILD/gpu-bundle.tar.gz
# when it is there); WORKLOAD defaults to bilstm (bilstm, lstm-lm or cnn;
# lstm-lm trains).  Tach's tuned preset runs under Nsight Compute, which
# times each kernel alone (gpu__time_duration, clocks left alone), once as
# it is and, for the LSTM workloads, once with TACH_CUDA_PLAIN=persist
# (cuDNN's standard LSTM algorithm); PyTorch's eager step runs under
# torch.profiler.  Both at fp32
# (TF32 off).  Each table lists the kernels by device time per step; the
# per-step figure is the window's sum over the number of steps in it (the
# count of the kernel seen least often, once a step).  Writes
# $OUT/gpu-profile.log; at most 3 minutes.  Without a GPU, exit 77.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tools/gpu-lib.sh"
build=${1:-build}
workload=${2:-bilstm}
case $build in
  /*) ;;
  *) build=$PWD/$build ;;
esac
PYTHON=${PYTHON:-python3}
out=${OUT:-$PWD/out}
mkdir -p "$out" || exit 1
log=$out/gpu-profile.log
: > "$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }

case $workload in
  bilstm) torch_case=bilstm; batch=1024 ;;
  lstm-lm) torch_case=lstm-lm-train; batch=256 ;;
  cnn) torch_case=cnn; batch=256 ;;
  *) echo "gpu-profile: unknown workload '$workload': use bilstm, lstm-lm or cnn" >&2; exit 2 ;;
esac

if ! gpu_present; then
  say "gpu-profile: no GPU (no nvidia-smi listing one, no /dev/nvidia0, the CUDA driver counts none); nothing to profile"
  exit 77
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2> /dev/null | head -n 1)

work=$(mktemp -d "${TMPDIR:-/tmp}/tach-gpu-profile.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
bundle_dir=
cli=$build/app/tach-cli
if [ -f "$build/gpu-bundle.tar.gz" ] && tar -xzf "$build/gpu-bundle.tar.gz" -C "$work"; then
  bundle_dir=$work
  cli=$work/bin/tach-cli
fi
tachlib=$(gpu_library_path "$bundle_dir" "$(timeout -k 2 15 "$PYTHON" -c "$gpu_site_py" 2> /dev/null)")

# The kernels of a CSV from ncu (one row per kernel launch) by name: count,
# mean and total microseconds, and the share of the window.
summarize() {
  "$PYTHON" - "$1" << 'EOF'
import csv, sys, collections
rows = []
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "")
    us = v / 1000.0 if unit in ("nsecond", "ns") else v * 1000.0 if unit in ("msecond", "ms") else v
    rows.append((r["Kernel Name"], us))
if not rows:
    print("  no kernels measured")
    sys.exit(0)
agg = collections.OrderedDict()
for name, us in rows:
    c, t = agg.get(name, (0, 0.0))
    agg[name] = (c + 1, t + us)
steps = min(c for c, _ in agg.values())
total = sum(t for _, t in agg.values())
print(f"  {len(rows)} kernels, {total:.1f} us; about {steps} steps: {total / steps:.1f} us of kernels a step")
for name, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"  {t / steps:9.1f} us/step {100 * t / total:5.1f}%  x{c / steps:.0f}  {c:4d} at {t / c:8.2f} us  {name[:90]}")
EOF
}

start=$(date +%s)
say "== gpu-profile $workload $(date -u '+%Y-%m-%d %H:%M:%S UTC'), ncu: ${ncu:-none}"
# TACH_CUDA_PLAIN=persist changes only the LSTM workloads.
plains=("" persist)
[ "$workload" = cnn ] && plains=("")
for plain in "${plains[@]}"; do
  say "== Tach tuned fp32${plain:+, TACH_CUDA_PLAIN=$plain}: kernels of a window of steps after warm-up"
  if [ -z "$ncu" ]; then
    say "  Nsight Compute (ncu) is not installed here"
    break
  fi
  timeout -k 5 80 env LD_LIBRARY_PATH="$tachlib" TACH_CUDA_PLAIN="$plain" "$ncu" --clock-control none \
    --metrics gpu__time_duration.sum --csv --launch-skip 400 --launch-count 120 \
    "$cli" run --device cuda --workload "$workload" --preset tuned --batch "$batch" --steps 120 \
    --warmup 20 > "$work/ncu.csv" 2> "$work/ncu.err"
  rc=$?
  grep -m 3 -i "error\|==WARNING==" "$work/ncu.err" "$work/ncu.csv" | tee -a "$log"
  grep -m 1 "steps/s" "$work/ncu.csv" | tee -a "$log"
  [ "$rc" = 0 ] || say "  ncu exited $rc"
  summarize "$work/ncu.csv" 2>&1 | head -n 30 | tee -a "$log"
done

say "== PyTorch eager fp32 (TF32 off): torch.profiler over 20 steps after 10"
timeout -k 5 90 "$PYTHON" - "$root/bench" "$torch_case" "$batch" << 'EOF' 2>&1 | tee -a "$log"
import sys
sys.path.insert(0, sys.argv[1])
import torch
import torch_workloads as tw
case, batch = sys.argv[2], int(sys.argv[3])
device = torch.device("cuda")
tw.set_tf32(device, "fp32")
_, step, _, _ = tw.build_case(case, batch, device, graphs=False)
for _ in range(10):
    step()
torch.cuda.synchronize()
steps = 20
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
def dev(e):
    return getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
events = [e for e in prof.key_averages() if dev(e) > 0]
total = sum(dev(e) for e in events)
print(f"  {total / steps:.1f} us of kernels a step")
for e in sorted(events, key=lambda e: -dev(e))[:25]:
    print(f"  {dev(e) / steps:9.1f} us/step {100 * dev(e) / total:5.1f}%  x{e.count / steps:.0f}  {e.key[:90]}")
EOF
say "gpu-profile: done in $(( $(date +%s) - start )) s"
