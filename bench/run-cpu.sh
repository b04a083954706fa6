#!/bin/sh
# run-cpu.sh: Tach against PyTorch on the CPU, side by side.
#
# Runs each workload's `tuned` preset in Tach and the same model in PyTorch
# (bench/torch_workloads.py: same shapes, optimizer and batch, PyTorch's
# best of 1 and 2 threads), alternating, for several rounds, then prints
# per workload both medians, their ratio, and Tach's achieved GFLOP/s as a
# share of the machine's sgemm peak as Tach's device reports it (measured
# once on an idle machine and cached; see `tach-cli devices`).
#
# Usage: bench/run-cpu.sh [--rounds N] [--quick] [--cases LIST] [--out DIR]
#   --rounds N    rounds of alternating runs (default 3)
#   --quick       fewer steps per run, for a check in about a minute
#   --cases LIST  comma-separated: bilstm, lstm-lm-generate, lstm-lm-train, cnn,
#                 cnn-bf16 (both sides in bf16; needs AVX-512 BF16)
#   --out DIR     keep the CSVs and logs there (default: a new temporary folder)
# Environment: TACH_CLI (default build/app/tach-cli), PYTHON (default
# bench/.venv/bin/python, else python3).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cli=${TACH_CLI:-$root/build/app/tach-cli}
rounds=3
quick=no
cases="bilstm,lstm-lm-generate,lstm-lm-train,cnn"
out=

while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --cases) cases=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-cpu.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

if [ -n "${PYTHON:-}" ]; then
  python=$PYTHON
elif [ -x "$here/.venv/bin/python" ]; then
  python=$here/.venv/bin/python
else
  python=python3
fi
if ! "$python" -c 'import torch, pandas' 2>/dev/null; then
  echo "run-cpu.sh: $python cannot import torch and pandas; see bench/README.md" >&2
  exit 1
fi
if [ ! -x "$cli" ]; then
  echo "run-cpu.sh: no tach-cli at $cli: build it (meson setup build && meson compile -C build) or set TACH_CLI" >&2
  exit 1
fi
if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/tach-bench.XXXXXX")
fi
mkdir -p "$out"

# Measured steps per run, sized so that each run takes a few seconds.
steps_for () {
  if [ "$quick" = yes ]; then
    case $1 in bilstm) echo 10 ;; lstm-lm-generate) echo 500 ;; lstm-lm-train) echo 50 ;; cnn*) echo 5 ;; esac
  else
    case $1 in bilstm) echo 40 ;; lstm-lm-generate) echo 3000 ;; lstm-lm-train) echo 200 ;; cnn*) echo 20 ;; esac
  fi
}

# Tach's arguments for each case: the workload's batch and task.
tach_args_for () {
  case $1 in
    bilstm) echo "--workload bilstm --batch 1024" ;;
    lstm-lm-generate) echo "--workload lstm-lm --task generate --batch 1" ;;
    lstm-lm-train) echo "--workload lstm-lm --task train --batch 256" ;;
    cnn) echo "--workload cnn --batch 256" ;;
    cnn-bf16) echo "--workload cnn --batch 256 --precision bf16" ;;
    *) echo "run-cpu.sh: unknown case '$1'" >&2; return 1 ;;
  esac
}

# PyTorch's case and precision for each of ours.
torch_case_for () {
  case $1 in cnn-bf16) echo cnn ;; *) echo "$1" ;; esac
}
precision_for () {
  case $1 in *-bf16) echo bf16 ;; *) echo fp32 ;; esac
}

run_tach () {
  case=$1
  args=$(tach_args_for "$case")
  # shellcheck disable=SC2086 # the arguments are words on purpose
  "$cli" run $args --device cpu --preset tuned --steps "$(steps_for "$case")" --warmup 3 \
    --csv "$out/tach-$case" >>"$out/tach.log" 2>&1 ||
    { echo "run-cpu.sh: tach-cli failed on $case; see $out/tach.log" >&2; return 1; }
}

run_torch () {
  case=$1
  header=--no-header
  [ -f "$out/torch.csv" ] || header=
  "$python" "$here/torch_workloads.py" --device cpu --cases "$(torch_case_for "$case")" \
    --precision "$(precision_for "$case")" --threads 1,2 \
    --steps "$(steps_for "$case")" --warmup 3 $header >>"$out/torch.csv" 2>>"$out/torch.log" ||
    { echo "run-cpu.sh: PyTorch failed on $case; see $out/torch.log" >&2; return 1; }
}

echo "Tach: $cli"
echo "PyTorch: $("$python" -c 'import torch; print(torch.__version__)') ($python)"
echo "Output: $out"

round=1
while [ "$round" -le "$rounds" ]; do
  for case in $(echo "$cases" | tr ',' ' '); do
    tach_args_for "$case" >/dev/null
    echo "round $round/$rounds: $case"
    # Alternate who goes first, so that a slow drift of the machine (heat,
    # other load) does not favour one side.
    if [ $((round % 2)) -eq 1 ]; then
      run_tach "$case"; run_torch "$case"
    else
      run_torch "$case"; run_tach "$case"
    fi
  done
  round=$((round + 1))
done

"$python" - "$out" "$cases" <<'EOF'
import os
import sys

import pandas as pd

out, cases = sys.argv[1], sys.argv[2].split(",")
torch_runs = pd.read_csv(os.path.join(out, "torch.csv"))
peaks = []


def column(frame, *names):
    for name in names:
        if name in frame.columns:
            return frame[name]
    raise SystemExit(f"run-cpu.sh: runs.csv has none of {names}; its columns: "
                     + ", ".join(frame.columns))


def torch_median(case, precision):
    runs = torch_runs[(torch_runs["case"] == case) & (torch_runs["precision"] == precision)]
    return runs, runs["steps_per_s_median"].median()


rows = []
for case in cases:
    tach = pd.read_csv(os.path.join(out, f"tach-{case}", "runs.csv"))
    tach_median = column(tach, "median_steps_per_s").median()
    gflops = column(tach, "achieved_gflops").median()
    # The device's fp32 sgemm peak, as Tach measured it on an idle machine
    # and recorded with each run: achieved / share.
    share = column(tach, "peak_share")
    peaks.extend((column(tach, "achieved_gflops") / share)[share > 0])
    torch_case = case.removesuffix("-bf16")
    precision = "bf16" if case.endswith("-bf16") else "fp32"
    torch, median = torch_median(torch_case, precision)
    _, fp32_median = torch_median(torch_case, "fp32")
    rows.append({
        "case": case,
        "rounds": len(tach),
        "Tach steps/s": tach_median,
        "PyTorch steps/s": median,
        "PyTorch threads": int(torch["threads"].mode().iloc[0]),
        "ratio": tach_median / median,
        "vs PyTorch fp32": tach_median / fp32_median,
        "Tach GFLOP/s": gflops,
        "% sgemm peak": 100.0 * share.median(),
    })

table = pd.DataFrame(rows)
table.to_csv(os.path.join(out, "summary.csv"), index=False)
print()
peak = pd.Series(peaks).median() if peaks else float("nan")
print(f"sgemm peak: {peak:.1f} GFLOP/s fp32 (Tach's device figure, measured on 1024^3 "
      "products and cached per CPU model; tach-cli devices)")
print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
EOF
