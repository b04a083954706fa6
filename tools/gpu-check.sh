#!/bin/bash
# gpu-check.sh: Tach's whole GPU check in one run (see ../shared/gpu.md).
#
#   tools/gpu-check.sh --bundle [BUILD]   on the build machine: copy the
#                                         shared libraries a bare GPU host
#                                         may lack (GLib, oneDNN, ...) into
#                                         BUILD/gpu-libs, to carry along
#   tools/gpu-check.sh [BUILD]            on the GPU host: device and versions,
#                                         GPU tests, every workload's presets,
#                                         PyTorch eager and CUDA-graphed, and a
#                                         short table printed last
#
# BUILD defaults to build-cuda (configured with -Dcuda=enabled).  Logs and
# CSVs go to ${OUT:-out}.  Without a GPU it says "no GPU" and exits 77.
# Every step has a time limit, and all of them share one deadline (7 min
# 30 s after the start, leaving the summary its time), so the whole run
# stays under 8 minutes whatever hangs.
# cuDNN and cuBLAS come from the system or from a PyTorch wheel's
# site-packages/nvidia/*/lib; the CUDA runtime is linked statically.
set -u -o pipefail

bundle=0
if [ "${1:-}" = "--bundle" ]; then
  bundle=1
  shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-cuda}
case $build in
  /*) ;;
  *) build=$root/$build ;;
esac
out=${OUT:-out}
cli=$build/app/tach-cli

# Libraries that every Linux host has, or that must come from the host's
# own driver and CUDA installation: never bundled.
is_host_lib() {
  case $1 in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|\
    libgcc_s.so*|libz.so*|libcuda.so*|libcudnn*|libcublas*|libcudart*|linux-vdso*)
      return 0 ;;
  esac
  return 1
}

if [ "$bundle" = 1 ]; then
  dest=$build/gpu-libs
  mkdir -p "$dest" || exit 1
  for bin in "$cli" "$build"/tests/test-gpu "$build"/tests/test-gpu-ops; do
    [ -x "$bin" ] || continue
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
      while read -r name path; do
        is_host_lib "$name" || cp -L -u "$path" "$dest/$name"
      done
  done
  echo "gpu-check: bundled into $dest:"
  du -sh "$dest"
  exit 0
fi

mkdir -p "$out" || exit 1
log=$out/gpu-check.log
: > "$log"
say() { echo "$@" | tee -a "$log"; }

deadline=$(( $(date +%s) + ${GPU_CHECK_BUDGET:-450} ))
# limit MAX: seconds a step may take, at most MAX and at most what is left
# before the deadline (0 when too little is left to start it).
limit() {
  local left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt 10 ]; then
    echo 0
  elif [ "$left" -lt "$1" ]; then
    echo "$left"
  else
    echo "$1"
  fi
}
# run_limited MAX CMD...: runs CMD under limit MAX; 124 when out of time.
run_limited() {
  local t
  t=$(limit "$1")
  shift
  if [ "$t" = 0 ]; then
    say "gpu-check: out of time, skipped: $*"
    return 124
  fi
  timeout -k 5 "$t" "$@"
}

# A quick "no GPU" before anything slow.
if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
  say "gpu-check: no GPU (nvidia-smi finds no device); nothing to check"
  exit 77
fi

# Libraries: the bundle first, then the CUDA toolkit, then PyTorch's wheels.
libpath=$build/gpu-libs
[ -d /usr/local/cuda/lib64 ] && libpath=$libpath:/usr/local/cuda/lib64
if command -v python3 > /dev/null 2>&1; then
  for d in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
    for lib in "$d"/nvidia/*/lib; do
      [ -d "$lib" ] && libpath=$libpath:$lib
    done
  done
fi
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if [ ! -x "$cli" ]; then
  say "gpu-check: $cli is missing: build with 'meson setup build-cuda -Dcuda=enabled && ninja -C build-cuda'"
  exit 1
fi

say "== device"
run_limited 20 nvidia-smi --query-gpu=name,driver_version,memory.total,multiprocessor_count \
  --format=csv,noheader 2>&1 | tee -a "$log"
if ! run_limited 30 "$cli" devices 2>&1 | tee "$out/devices.txt" | tee -a "$log" | grep -q '^cuda:'; then
  say "gpu-check: no GPU usable by Tach (tach-cli devices lists none; see $out/devices.txt:"
  say "  a driver older than CUDA 13 or a missing libcudnn.so.9/libcublas.so.13 are the usual causes)"
  exit 77
fi

status=0
say "== GPU tests"
for t in test-gpu test-gpu-ops; do
  bin=$build/tests/$t
  [ -x "$bin" ] || { say "$t: not built"; status=1; continue; }
  run_limited "$([ "$t" = test-gpu ] && echo 150 || echo 60)" "$bin" --tap > "$out/$t.log" 2>&1
  rc=$?
  case $rc in
    0) say "$t: passed ($(grep -c '^ok' "$out/$t.log") ok)" ;;
    77) say "$t: skipped" ;;
    124|137) say "$t: TIMED OUT, see $out/$t.log"; status=1 ;;
    *) say "$t: FAILED (exit $rc), see $out/$t.log"; grep -E '^not ok|ERROR|error' "$out/$t.log" | head -5 | tee -a "$log"; status=1 ;;
  esac
done

say "== Tach presets"
for w in bilstm lstm-lm cnn; do
  run_limited 50 "$cli" sweep --device cuda --workload "$w" --presets all --steps 100 --warmup 10 \
    --csv "$out/tach" \
    > "$out/sweep-$w.txt" 2>&1 || { say "sweep $w: FAILED, see $out/sweep-$w.txt"; status=1; }
done

say "== PyTorch"
if run_limited 30 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  run_limited 45 python3 "$root/bench/torch_workloads.py" --device cuda --cases all --format csv \
    > "$out/torch-eager.csv" 2> "$out/torch-eager.log" || say "torch eager: FAILED, see $out/torch-eager.log"
  run_limited 45 python3 "$root/bench/torch_workloads.py" --device cuda --graphs --cases all --format csv \
    > "$out/torch-graphs.csv" 2> "$out/torch-graphs.log" || say "torch graphs: FAILED, see $out/torch-graphs.log"
else
  say "PyTorch with CUDA is not installed here: no PyTorch comparison"
fi

say "== summary"
for w in bilstm lstm-lm cnn; do
  [ -s "$out/sweep-$w.txt" ] && tail -n 12 "$out/sweep-$w.txt" | tee -a "$log"
done
python3 - "$out" << 'EOF' 2>&1 | tee -a "$log"
import csv, os, sys
out = sys.argv[1]

def rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []

tach = {}
for r in rows(os.path.join(out, "tach", "runs.csv")):
    key = (r.get("workload"), r.get("task"))
    try:
        rate = float(r.get("items_per_s") or "nan")
    except ValueError:
        continue
    tach.setdefault(key, {})[r.get("preset")] = rate

case_key = {"bilstm": ("bilstm", "train"), "lstm-lm-generate": ("lstm-lm", "generate"),
            "lstm-lm-train": ("lstm-lm", "train"), "cnn": ("cnn", "train")}
torch = {}
for mode in ("eager", "graphs"):
    for r in rows(os.path.join(out, f"torch-{mode}.csv")):
        try:
            torch[(r["case"], mode)] = float(r.get("items_per_s") or r["steps_per_s_median"])
        except (KeyError, ValueError):
            pass

print(f"{'case':18} {'tach tuned':>12} {'torch eager':>12} {'torch graph':>12} {'vs eager':>9} {'vs graph':>9}")
for case, key in case_key.items():
    tuned = tach.get(key, {}).get("tuned")
    eager, graph = torch.get((case, "eager")), torch.get((case, "graphs"))
    fmt = lambda v: f"{v:12.1f}" if v else f"{'-':>12}"
    ratio = lambda a, b: f"{a / b:9.2f}" if a and b else f"{'-':>9}"
    print(f"{case:18} {fmt(tuned)} {fmt(eager)} {fmt(graph)} {ratio(tuned, eager)} {ratio(tuned, graph)}")
print("items/s (samples/s or tokens/s); ratios are Tach over PyTorch")
EOF
exit $status
