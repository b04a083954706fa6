#!/bin/sh
# run-cpu.sh: Tach against PyTorch, TensorFlow, JAX, ONNX Runtime and
# llama.cpp on the CPU, side by side.
#
# Runs each workload's `tuned` preset in Tach and the same model in each
# peer: PyTorch eager and torch.compile (bench/torch_workloads.py),
# TensorFlow 2 / Keras 3 (bench/tf_workloads.py: `fit` for training, a
# tf.function for generation), JAX (bench/jax_workloads.py: jit, the LSTMs
# as lax.scan, optax's Adam and SGD) and ONNX Runtime (generation only,
# bench/onnx_workloads.py: the same forward as an ONNX graph with the LSTM
# operator, one run per token, host sampling), each peer at its best of 1
# and 2 threads, alternating who goes first, for several rounds.  The gpt
# cases (issue 44) run a GPT-2-architecture model of one shape on every
# side: PyTorch eager (SDPA) and torch.compile, JAX, ONNX Runtime
# (generation, the KV cache as the graphs' inputs and outputs) and
# llama.cpp (llama_workloads.py: generation from a GGUF file of the same
# f32 weights).  Then it
# names the CPU, its vector extensions, the level Tach's kernels run at and
# the sgemm peak at that level, and prints per workload every side's
# median, the best peer, Tach's ratio to the best of all peers against the
# target, and Tach's achieved GFLOP/s as a share of the sgemm peak as
# Tach's device reports it (measured on an idle machine and cached; see
# `tach-cli devices`).
#
# Usage: bench/run-cpu.sh [--rounds N] [--quick] [--cases LIST] [--peers LIST] [--isa avx2]
#                         [--busy N] [--peers-only] [--out DIR]
#   --rounds N    rounds of alternating runs (default 3)
#   --quick       fewer steps per run, for a check in a few minutes
#   --cases LIST  comma-separated: bilstm, lstm-lm-generate, lstm-lm-train, cnn,
#                 cnn-bf16 (every side in bf16; needs AVX-512 BF16; PyTorch
#                 and TensorFlow only), gpt-train, gpt-generate (on request)
#   --peers LIST  comma-separated: torch, torch-compile, tf, jax, onnx, llama
#                 (default: all; a peer whose Python packages are not
#                 installed is skipped, with a note)
#   --peers-only  run the peers alone, not Tach (the gpt cases before
#                 tach-cli has the gpt workload): their rates, no ratios
#   --busy N      keep N processes spinning (N of the machine's cores busy)
#                 during every side's runs: started before the first run,
#                 killed after the last, on an error or an interrupt too
#   --isa avx2    every side at AVX2 on an AVX-512 machine, as on an AVX2-only
#                 CPU: Tach by TACH_CPU_ISA, the peers by oneDNN's, ATen's
#                 (eager and torch.compile's code) and MKL's own caps
#   --out DIR     keep the CSVs and logs there (default: a new temporary folder)
# Environment: TACH_CLI (default build/app/tach-cli), PYTHON (default
# bench/.venv/bin/python, else python3); TACH_CPU_ISA=avx2 alone times
# Tach's AVX2 path on an AVX-512 machine (the peers keep theirs).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cli=${TACH_CLI:-$root/build/app/tach-cli}
rounds=3
quick=no
cases="bilstm,lstm-lm-generate,lstm-lm-train,cnn"
peers="torch,torch-compile,tf,jax,onnx,llama"
isa_cap=
busy=0
out=
peers_only=no

while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --cases) cases=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --isa) isa_cap=$2; shift 2 ;;
    --peers-only) peers_only=yes; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-cpu.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

case $isa_cap in
  '') ;;
  avx2)
    if ! grep -q -w avx2 /proc/cpuinfo; then
      echo "run-cpu.sh: --isa avx2: this CPU has no AVX2" >&2
      exit 2
    fi
    # Each library's own cap: Tach's kernels and its oneDNN; the peers'
    # oneDNN (TensorFlow's and PyTorch's), ATen's kernels and the C++ that
    # torch.compile generates, MKL's sgemm in PyTorch.
    export TACH_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 \
      ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
    # torch.compile's cache of its compiled kernels does not tell the
    # capped code from the AVX-512 code: reusing the default cache, the
    # bilstm's backward failed ("returned a result with an exception set").
    export TORCHINDUCTOR_CACHE_DIR="${TMPDIR:-/tmp}/torchinductor-$(id -u)-avx2" ;;
  *) echo "run-cpu.sh: --isa takes avx2 (to run every side at AVX2), not '$isa_cap'" >&2; exit 2 ;;
esac

case $rounds in
  ''|0|*[!0-9]*) echo "run-cpu.sh: --rounds takes a number of rounds, 1 or more, not '$rounds'" >&2; exit 2 ;;
esac
cores=$(getconf _NPROCESSORS_ONLN)
case $busy in
  ''|*[!0-9]*) echo "run-cpu.sh: --busy takes a number of cores (0 to $cores), not '$busy'" >&2; exit 2 ;;
esac
if [ "$busy" -gt "$cores" ]; then
  echo "run-cpu.sh: --busy $busy: this machine has $cores cores; give 0 to $cores" >&2
  exit 2
fi

for case in $(echo "$cases" | tr ',' ' '); do
  case $case in
    bilstm|lstm-lm-generate|lstm-lm-train|cnn|cnn-bf16|gpt-train|gpt-generate) ;;
    *) echo "run-cpu.sh: unknown case '$case' (bilstm, lstm-lm-generate, lstm-lm-train, cnn, cnn-bf16, gpt-train, gpt-generate)" >&2
       exit 2 ;;
  esac
done
if [ "$peers_only" = no ] && [ ! -x "$cli" ]; then
  echo "run-cpu.sh: no tach-cli at $cli: build it (meson setup build && meson compile -C build) or set TACH_CLI" >&2
  exit 1
fi
# The gpt cases need tach-cli's gpt workload (issue 44) and its tuned
# preset: say so before any run rather than fail in the first round.
case ",$cases," in
  *,gpt-*)
    if [ "$peers_only" = no ]; then
      gpt_presets=$("$cli" presets 2>/dev/null | awk '/^[^ ]/ { w = $1; next } w == "gpt" { print $1 }')
      if ! "$cli" presets 2>/dev/null | grep -qx gpt; then
        echo "run-cpu.sh: $cli has no gpt workload ('tach-cli presets' lists none; issue 44's" \
          "workload, built on the gpt-model branch): the gpt cases need it. Build a tach-cli" \
          "that has it (TACH_CLI=...), or run the peers alone with --peers-only" >&2
        exit 1
      fi
      if ! echo "$gpt_presets" | grep -qx tuned; then
        echo "run-cpu.sh: $cli's gpt workload has no tuned preset (its presets: $(echo "$gpt_presets" | tr "\n" " ")):" \
          "the gpt cases run Tach's tuned preset, as every other case; or run --peers-only" >&2
        exit 1
      fi
    fi ;;
esac
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
# The Python modules each peer needs (ONNX Runtime's gpt graphs are
# exported from PyTorch by onnxscript's exporter).
modules_for () {
  case $1 in
    torch|torch-compile) echo torch ;;
    tf) echo tensorflow ;;
    jax) echo "jax optax" ;;
    onnx)
      case ",$cases," in
        *,gpt-generate,*) echo "onnx onnxruntime onnxscript" ;;
        *) echo "onnx onnxruntime" ;;
      esac ;;
    llama) echo "llama_cpp gguf" ;;
  esac
}
skipped=
kept=
# Whether every case is a gpt case: then TensorFlow, which runs none of
# them, is left out without a note.
only_gpt=yes
for case in $(echo "$cases" | tr ',' ' '); do
  case $case in gpt-*) ;; *) only_gpt=no ;; esac
done
for peer in $(echo "$peers" | tr ',' ' '); do
  case $peer in torch|torch-compile|tf|jax|onnx|llama) ;;
    *) echo "run-cpu.sh: unknown peer '$peer' (torch, torch-compile, tf, jax, onnx, llama)" >&2; exit 2 ;;
  esac
  [ "$peer:$only_gpt" != tf:yes ] || continue
  # shellcheck disable=SC2046 # the modules are words on purpose
  missing=$("$python" -c 'import importlib.util, sys
def absent(m):
    try:
        return importlib.util.find_spec(m) is None
    except Exception:
        return True
print("".join(" " + m for m in sys.argv[1:] if absent(m)))' $(modules_for "$peer"))
  if [ -n "$missing" ]; then
    echo "run-cpu.sh: note: $python has no$missing, so $peer is skipped (pip install$missing; see bench/README.md)"
    skipped="${skipped:+$skipped, }$peer (no$missing)"
  else
    kept="${kept:+$kept,}$peer"
  fi
done
peers=$kept
if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/tach-bench.XXXXXX")
fi
mkdir -p "$out"

# Measured steps per run, sized so that each run takes a few seconds.
steps_for () {
  if [ "$quick" = yes ]; then
    case $1 in bilstm) echo 10 ;; lstm-lm-generate) echo 500 ;; lstm-lm-train) echo 50 ;; cnn*) echo 5 ;;
      gpt-train) echo 3 ;; gpt-generate) echo 1 ;; esac
  else
    case $1 in bilstm) echo 40 ;; lstm-lm-generate) echo 3000 ;; lstm-lm-train) echo 200 ;; cnn*) echo 20 ;;
      gpt-train) echo 10 ;; gpt-generate) echo 3 ;; esac
  fi
}

# The gpt cases' shape, the same on every side: nanoGPT's shakespeare-char
# (bench/gpt_common.py), training at batch 8, generation of one stream
# from a 64-token prompt to the context.  A gpt-generate "step" of the
# peers is one whole sequence (prefill, then decoding); of Tach, one token
# (a request is 1 + new tokens steps: the prefill, then each decoded one).
gpt_shape="--layers 6 --heads 6 --embed 384 --context 256 --vocab 256"
gpt_batch=8
gpt_prompt=64
gpt_request_steps=$((1 + 256 - gpt_prompt))

# Tach's arguments for each case: the workload's batch and task.
tach_args_for () {
  case $1 in
    bilstm) echo "--workload bilstm --batch 1024" ;;
    lstm-lm-generate) echo "--workload lstm-lm --task generate --batch 1" ;;
    lstm-lm-train) echo "--workload lstm-lm --task train --batch 256" ;;
    cnn) echo "--workload cnn --batch 256" ;;
    cnn-bf16) echo "--workload cnn --batch 256 --precision bf16" ;;
    gpt-train) echo "--workload gpt --task train --batch $gpt_batch $gpt_shape" ;;
    gpt-generate) echo "--workload gpt --task generate --batch 1 $gpt_shape --prompt $gpt_prompt --new-tokens 0" ;;
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

# Tach at 1 thread and at all cores, as the peers try 1 and 2: on a
# shared machine a preempted partner holds up every parallel region of a
# step, and one thread can win.
run_tach () {
  case=$1
  [ "$peers_only" = no ] || return 0
  args=$(tach_args_for "$case")
  steps=$(steps_for "$case") warmup=3
  # Tach's generation steps are tokens: whole requests, one to warm up
  # (tach-cli's --steps count the warm-up's too).
  if [ "$case" = gpt-generate ]; then
    steps=$(((steps + 1) * gpt_request_steps)) warmup=$gpt_request_steps
  fi
  counts=1
  [ "$cores" -le 1 ] || counts="1 $cores"
  for threads in $counts; do
    # shellcheck disable=SC2086 # the arguments are words on purpose
    "$cli" run $args --device cpu --preset tuned --threads "$threads" \
      --steps "$steps" --warmup "$warmup" --csv "$out/tach-$case" >>"$out/tach.log" 2>&1 ||
      { echo "run-cpu.sh: tach-cli failed on $case; see $out/tach.log" >&2; return 1; }
  done
}

# One peer's run of one case, appended to PEER.csv (the peers' columns
# differ a little: the summary reads what they share).  A case the peer
# does not run (ONNX Runtime trains nothing; JAX and ONNX Runtime run no
# bf16) is left out.
# The gpt cases' rows have columns of their own, each case's: they go to
# CASE-PEER.csv (gpt-train-torch.csv, ...).
run_peer () {
  peer=$1 case=$2
  csv=$out/$peer.csv
  gpt_args=
  case $case in
    gpt-train) csv=$out/$case-$peer.csv gpt_args="$gpt_shape --batch $gpt_batch" ;;
    gpt-generate) csv=$out/$case-$peer.csv gpt_args="$gpt_shape --prompt $gpt_prompt --new-tokens 0" ;;
  esac
  header=--no-header
  [ -f "$csv" ] || header=
  case $peer:$case in
    onnx:lstm-lm-generate|onnx:gpt-generate|llama:gpt-generate) ;;
    onnx:*|llama:*|jax:*-bf16|tf:gpt-*) return 0 ;;
  esac
  case $peer in
    torch) script=torch_workloads.py; extra="--device cpu" ;;
    torch-compile) script=torch_workloads.py; extra="--device cpu --compile" ;;
    tf) script=tf_workloads.py; extra= ;;
    jax) script=jax_workloads.py; extra= ;;
    onnx) script=onnx_workloads.py; extra= ;;
    llama) script=llama_workloads.py; extra= ;;
  esac
  # shellcheck disable=SC2086 # the arguments are words on purpose
  "$python" "$here/$script" $extra --cases "$(torch_case_for "$case")" $gpt_args \
    --precision "$(precision_for "$case")" --threads 1,2 \
    --steps "$(steps_for "$case")" --warmup "$(warmup_for "$case")" $header >>"$csv" 2>>"$out/$peer.log" ||
    { echo "run-cpu.sh: $peer failed on $case; see $out/$peer.log" >&2; return 1; }
}

# Warm-up steps of a peer: a generation's is a whole sequence.
warmup_for () {
  case $1 in gpt-generate) echo 1 ;; gpt-train) echo 2 ;; *) echo 3 ;; esac
}

run_peers () {
  for peer in $(echo "$peers" | tr ',' ' '); do
    run_peer "$peer" "$1"
  done
}

# The CPU: its model, its vector extensions and the level Tach runs at.
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
cpu_flags=$(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' '\n' |
  grep -E '^(sse4_2|avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx_vnni|amx_tile|amx_bf16)$' |
  tr '\n' ' ')
devices=
[ ! -x "$cli" ] || devices=$("$cli" devices 2>/dev/null)
tach_device=$(echo "$devices" | sed -n 's/^ *libraries *//p' | head -n 1)
tach_peak=$(echo "$devices" | sed -n 's/^ *peak *//p' | head -n 1)
# The level Tach's kernels and oneDNN's run at: the last word of the
# backend's libraries, "oneDNN X.Y.Z, LEVEL[ (TACH_CPU_ISA)]".
tach_isa=$(echo "$tach_device" | sed -n 's/.*, \([a-z0-9]*\)\( (TACH_CPU_ISA)\)\{0,1\}$/\1/p')
case " $cpu_flags " in
  *" avx512f "*) cpu_isa=avx512 ;;
  *" avx2 "*) cpu_isa=avx2 ;;
  *) cpu_isa=baseline ;;
esac
if [ -n "$isa_cap" ]; then
  isa_note="$tach_isa, every side capped below the CPU's $cpu_isa by --isa $isa_cap"
elif [ -n "$tach_isa" ] && [ "$tach_isa" != "$cpu_isa" ]; then
  isa_note="$tach_isa, capped by TACH_CPU_ISA below the CPU's $cpu_isa (the peers keep theirs)"
else
  isa_note="${tach_isa:-unknown}, the CPU's widest"
fi
echo "CPU: ${cpu_model:-unknown}, $(getconf _NPROCESSORS_ONLN) cores; vector extensions: $cpu_flags"
echo "Tach's CPU backend: $tach_device; kernels at $isa_note"
echo "sgemm peak at ${tach_isa:-Tach's level} (all cores, measured by Tach): $tach_peak"
if [ "$peers_only" = yes ]; then
  echo "Tach: not run (--peers-only)"
else
  echo "Tach: $cli"
fi
echo "PyTorch: $("$python" -c 'import torch; print(torch.__version__, "at", torch.backends.cpu.get_cpu_capability())') ($python)"
case ",$peers," in *,tf,*)
  echo "TensorFlow: $("$python" -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"; import tensorflow as tf, keras; print(tf.__version__, "keras", keras.__version__)' 2>/dev/null)" ;;
esac
case ",$peers," in *,jax,*)
  echo "JAX: $(JAX_PLATFORMS=cpu "$python" -c 'import jax, optax; print(jax.__version__, "optax", optax.__version__)' 2>/dev/null)" ;;
esac
case ",$peers," in *,onnx,*)
  echo "ONNX Runtime: $("$python" -c 'import onnxruntime, onnx; print(onnxruntime.__version__, "onnx", onnx.__version__)' 2>/dev/null)" ;;
esac
case ",$peers," in *,llama,*)
  echo "llama.cpp: $("$python" -c 'import llama_cpp, importlib.metadata as m; print("llama-cpp-python", llama_cpp.__version__, "gguf", m.version("gguf"))' 2>/dev/null)" ;;
esac
echo "Peers: $peers${skipped:+; skipped: $skipped}"

# gpt-generate's decode bound: the bytes a token reads (its weights and its
# keys and values) at the machine's read rate, measured by l2-read on a
# buffer of that size (past the caches: memory's rate), on one core and on
# every core at once (a process pinned to each, their rates summed), the
# better kept.  Measured here, before any --busy spinner starts.
read_rate=
read_kb=
case ",$cases," in *,gpt-generate,*)
  l2_read=$(dirname "$(dirname "$cli")")/bench/l2-read
  [ -x "$l2_read" ] || l2_read=$root/build/bench/l2-read
  read_kb=$("$python" -c "import sys; sys.path.insert(0, '$here'); import gpt_common as g; \
print(int(g.decode_bytes(g.LAYERS, g.EMBED, g.VOCAB, g.PROMPT, g.CONTEXT - g.PROMPT) / 1024))")
  if [ -x "$l2_read" ]; then
    rate_of () { awk 'NF == 3 && $1 ~ /^[0-9]+$/ { r = $2 } END { print r }'; }
    one=$("$l2_read" "$read_kb" | rate_of)
    all=0
    core=0
    while [ "$core" -lt "$cores" ]; do
      taskset -c "$core" "$l2_read" "$read_kb" >"$out/l2-read-$core.txt" &
      core=$((core + 1))
    done
    wait
    for f in "$out"/l2-read-*.txt; do
      all=$(awk -v a="$all" -v r="$(rate_of <"$f")" 'BEGIN { print a + r }')
    done
    read_rate=$(awk -v a="$one" -v b="$all" 'BEGIN { print (b > a ? b : a) }')
    echo "Read rate (l2-read, $read_kb KB, a gpt token's bytes): $one bytes/ns on one core, $all on $cores at once"
  else
    echo "run-cpu.sh: note: no l2-read at $l2_read (meson compile -C build bench/l2-read): gpt-generate's decode bound is left out"
  fi ;;
esac
echo "Output: $out"
{
  echo "cpu=$cpu_model"
  echo "flags=$cpu_flags"
  echo "tach_device=$tach_device"
  echo "tach_isa=$tach_isa"
  echo "isa_cap=${isa_cap:-none}"
  echo "peak=$tach_peak"
  echo "busy=$busy"
  echo "cores=$cores"
  echo "skipped=$skipped"
  echo "peers_only=$peers_only"
  echo "read_rate=$read_rate"
  echo "read_kb=$read_kb"
} >"$out/machine.txt"

# --busy: N processes spinning through every side's runs (bench/busy.sh);
# killed whatever ends this script.
. "$here/busy.sh"
trap stop_busy EXIT
trap 'stop_busy; echo "run-cpu.sh: interrupted" >&2; exit 130' INT TERM HUP
start_busy "$busy"
if [ "$busy" -gt 0 ]; then
  echo "Busy: $busy of $cores cores spinning during every run (processes$busy_pids)"
fi

round=1
while [ "$round" -le "$rounds" ]; do
  for case in $(echo "$cases" | tr ',' ' '); do
    tach_args_for "$case" >/dev/null
    echo "round $round/$rounds: $case"
    # Alternate who goes first, so that a slow drift of the machine (heat,
    # other load) does not favour one side.
    if [ $((round % 2)) -eq 1 ]; then
      run_tach "$case"; run_peers "$case"
    else
      run_peers "$case"; run_tach "$case"
    fi
  done
  round=$((round + 1))
done

# The load held to the end: a spinner that died took its core back.
if ! busy_alive; then
  echo "run-cpu.sh: a busy process ended before the runs did: the figures are not all under --busy $busy" >&2
  exit 1
fi
stop_busy

"$python" "$here/run_cpu_report.py" "$out" "$cases"
