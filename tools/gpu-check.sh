#!/bin/bash
# gpu-check.sh: Tach's whole GPU check in one run of at most 6 minutes
# (see ../shared/gpu.md and the README's "GPU" section).
#
#   tools/gpu-check.sh --bundle [BUILD]   on the build machine: strips the
#       binaries the check runs (tach-cli and the GPU tests) and the shared
#       libraries a bare GPU host may lack (GLib, oneDNN, ...) into one
#       archive, BUILD/gpu-bundle.tar.gz, and says what must travel and
#       how big it is (the working tree plus that archive: under 64 MiB).
#       It refuses a build older than the tree (ninja would rebuild
#       something) and records the commit it was built from and a hash of
#       each source file (SOURCES).
#   tools/gpu-check.sh --dry-run [BUILD]  anywhere: the steps below in
#       their order, each GPU command with its cap, none run (the presets'
#       list excepted); GPU_CHECK_DRY_GPUS (default 2) devices made up.
#   tools/gpu-check.sh [BUILD]            on the GPU host: everything below,
#       then $OUT/gpu-check.log and $OUT/gpu-check.tar.gz (two files; the
#       archive holds every log and CSV).  It prints the bundle's commit
#       and refuses, before any GPU work, a bundle whose sources differ
#       from the tree's (built from an older tree): bundle again.
#
# BUILD defaults to "build", the folder the README builds (with nvcc
# present, meson's cuda=auto builds the CUDA backend there).  The binaries
# come from BUILD/gpu-bundle.tar.gz when it is there, else from BUILD.
# OUT defaults to ./out.  GPU_CHECK_BUDGET (seconds, default 345) is the
# deadline of the whole run; every step has its own cap within it, so a
# hanging device costs its caps and no more.  PYTHON (default python3) runs
# the PyTorch side.
#
# A GPU is found by nvidia-smi when it is on PATH, else by the driver's
# device nodes (/dev/nvidia0, ...), else by asking the CUDA driver
# (cuDeviceGetCount) or runtime (cudaGetDeviceCount) through PYTHON.
#
# What it does, the most valuable first, each step in its own process so
# that a failure hides nothing after it:
#   1. the device, the bundle's commit, the library path Tach runs with and
#      ldd of each binary;
#   2. a 3-step fused-LSTM smoke run (cuDNN logging at its most verbose);
#   3. every GPU test binary in one process, then each path that did not
#      pass there in its own process, each binary within the time meson
#      gives it (test-gpu-modes 300 s) as far as the budget allows after
#      keeping the shares of the steps after it (the NCCL step's 30 s, the
#      sweep's 30% of the budget, about 100 s, PyTorch's 15%); the GPU
#      tests run the NCCL path that needs no MPI (a communicator of one);
#   4. ranks through NCCL under mpirun: tests/test-nccl.py with its loss
#      comparison, one rank (and two, with two GPUs), 30 s in all, stopping
#      at the first failure; an MPI that cannot start a process is said to
#      be the environment's failure, not Tach's;
#   5. gpt at a small shape (train, generate per kv-cache mode, the static
#      cache as a graph, whose tokens must equal eager's), then every
#      preset of every workload (lstm-lm for --task train and
#      generate) that one process runs (not the data-parallel ones, which
#      alone run as tuned), 100 steps each, each workload's tuned preset at precision=tf32 and once
#      more with TACH_CUDA_PLAIN=all (every lean path of the GPU step off:
#      the "before" of issue 10's changes, all but the softmax_ce and
#      bias_grad rewrites, which have no plain path), each stopped at its
#      time cap with SIGINT (tach-cli then writes what ran);
#   6. PyTorch eager and CUDA-graphed, TF32 off and PyTorch's default, with
#      the environment this script was started with (Tach's library path
#      can break 'import torch'), in what is left of the budget;
#   7. the short table, last: per workload, task and preset, steps/s from
#      the device timeline, end-to-end steps/s, the speed-up over the
#      workload's first preset, the ratios to PyTorch and the CUDA API calls
#      per step; then tuned against tuned with TACH_CUDA_PLAIN=all, =wspace,
#      =persist (cuDNN's standard LSTM algorithm) and =wgrad (cuDNN's
#      backward filter for the cnn); then each GPU target of the CUDA
#      issues, met or NOT MET (tools/gpu-check-summary.py).
# cuDNN's own log (CUDNN_LOGLEVEL_DBG, CUDNN_LOGDEST_DBG) goes to one file
# per process under cudnn/ in the archive, for every process but the timed
# runs of step 5, which run with cuDNN's logging off (as PyTorch's do).
# Without a GPU it says "no GPU" and exits 77 within seconds.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tools/gpu-lib.sh"
bundle_mode=0
dry=0
if [ "${1:-}" = "--bundle" ]; then
  bundle_mode=1
  shift
elif [ "${1:-}" = "--dry-run" ]; then
  dry=1
  shift
fi
build=${1:-build}
case $build in
  /*) ;;
  *) build=$PWD/$build ;;
esac
PYTHON=${PYTHON:-python3}

# Binaries the check runs, relative to BUILD.
binaries="app/tach-cli tests/test-ops tests/test-gpu-modes tests/test-cuda-host"
# The GPU tests, NAME:SECONDS:BINARY[:ARGUMENT]: the host-side logic, the
# op table on the CUDA device (as meson's test-ops-cuda), the workloads'
# modes; SECONDS is the timeout tests/meson.build gives each (30, meson's
# default, where it names none).
gpu_tests="test-cuda-host:30:test-cuda-host test-ops-cuda:60:test-ops:--device=cuda:0 \
test-gpu-modes:300:test-gpu-modes"

# Libraries that every Linux host has, or that must come from the host's
# own driver and CUDA installation (or PyTorch's wheels): never bundled.
is_host_lib() {
  case $1 in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|\
    libgcc_s.so*|libz.so*|libcuda.so*|libcudnn*|libcublas*|libcudart*|linux-vdso*)
      return 0 ;;
  esac
  return 1
}

# The source files the bundled binaries are built from, relative to the
# tree's root: what a bundle records the hash of.
source_files() {
  git -C "$root" ls-files -co --exclude-standard -- meson.build meson_options.txt app engine \
    include tests ui resources ':!:*.md' ':!:*.sh' ':!:*.py'
}

if [ "$bundle_mode" = 1 ]; then
  if ! commit=$(git -C "$root" rev-parse HEAD 2> /dev/null); then
    echo "gpu-check: --bundle needs the tree's git history (git rev-parse HEAD fails in $root)" >&2
    exit 1
  fi
  for b in $binaries; do
    if [ ! -x "$build/$b" ]; then
      echo "gpu-check: $build/$b is missing: build with 'meson setup build && meson compile -C build'" \
           "where nvcc is installed (tach-cli devices must list the CUDA backend's build)" >&2
      exit 1
    fi
  done
  # A build older than its tree would carry old code under the new commit.
  if [ -f "$build/build.ninja" ] && command -v ninja > /dev/null 2>&1; then
    # shellcheck disable=SC2086 # the binaries are words on purpose
    if ! ninja -C "$build" -n $binaries 2>&1 | grep -q 'no work to do'; then
      echo "gpu-check: $build is older than the tree (ninja would rebuild some of: $binaries):" \
           "run 'meson compile -C ${build#"$PWD"/}' first" >&2
      exit 1
    fi
  fi
  stage=$(mktemp -d "${TMPDIR:-/tmp}/tach-gpu-bundle.XXXXXX") || exit 1
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bin" "$stage/lib"
  for b in $binaries; do
    # A script (the tests' stand-ins) has nothing to strip.
    strip --strip-unneeded -o "$stage/bin/$(basename "$b")" "$build/$b" 2> /dev/null ||
      cp "$build/$b" "$stage/bin/$(basename "$b")" || exit 1
    ldd "$build/$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
      while read -r name path; do
        is_host_lib "$name" || [ -e "$stage/lib/$name" ] ||
          strip --strip-unneeded -o "$stage/lib/$name" "$path" 2> /dev/null ||
          cp -L "$path" "$stage/lib/$name"
      done
  done
  (cd "$stage" && ls -l bin lib) > "$stage/MANIFEST"
  # The commit, and each source file's hash as built (uncommitted changes
  # included): the check compares them with the tree it runs in.
  changed=$(source_files | tr '\n' '\0' | xargs -0 git -C "$root" status --porcelain -- | wc -l)
  {
    echo "commit $commit"
    git -C "$root" log -1 --format='date %cI%nsubject %s' "$commit"
    echo "uncommitted $changed"
  } > "$stage/COMMIT"
  (cd "$root" && source_files | tr '\n' '\0' | xargs -0 sha256sum) > "$stage/SOURCES" || exit 1
  tar -czf "$build/gpu-bundle.tar.gz" -C "$stage" . || exit 1
  bundle_bytes=$(stat -c %s "$build/gpu-bundle.tar.gz")
  tree_bytes=$(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2> /dev/null |
               awk '{ s += $1 } END { print s + 0 }')
  total=$(( bundle_bytes + tree_bytes ))
  limit=$(( 64 * 1024 * 1024 ))
  echo "gpu-check: $build/gpu-bundle.tar.gz: $(( bundle_bytes / 1024 )) KiB ($(du -sk "$stage" | cut -f1) KiB unpacked)"
  echo "gpu-check: working tree $(( tree_bytes / 1024 )) KiB; together $(( total / 1024 )) KiB of the $(( limit / 1024 )) KiB that may travel"
  if [ "$total" -gt "$limit" ]; then
    echo "gpu-check: too big to carry" >&2
    exit 1
  fi
  echo "gpu-check: built from commit $commit$([ "$changed" = 0 ] || echo " with $changed uncommitted source files")"
  echo "gpu-check: carry '${build#"$root"/}/gpu-bundle.tar.gz' and run tools/gpu-check.sh there"
  exit 0
fi

# ------------------------------------------------------------ the GPU host

start=$(date +%s)
# Every step before the table ends by the deadline; the table gets the
# last 15 s of the budget.
budget=${GPU_CHECK_BUDGET:-345}
deadline=$(( start + budget - 15 ))
# What the steps after the GPU tests keep of the budget: the NCCL step 30 s
# at most (a tenth of a smaller budget), the sweep 30% (about 100 s of
# 345), PyTorch, last, 15%.
nccl_cap=$(( budget / 10 ))
[ "$nccl_cap" -gt 30 ] && nccl_cap=30
sweep_share=$(( budget * 30 / 100 ))
torch_share=$(( budget * 15 / 100 ))
# A failure of the host's, not of Tach's (said at the end; not in status).
environment=
out=${OUT:-$PWD/out}
mkdir -p "$out" || exit 1
log=$out/gpu-check.log
: > "$log"
say() {
  if [ "$dry" = 1 ]; then
    # A dry run passes nothing: what it did not run is not said to pass.
    printf '%s\n' "$*" | sed 's/: passed.*/: not run (dry run)/' | tee -a "$log"
  else
    printf '%s\n' "$*" | tee -a "$log"
  fi
}

# A quick "no GPU" before anything slow.
if [ "$dry" = 1 ]; then
  gpu_found_by="nothing: a dry run (--dry-run) uses no GPU; each GPU step says what it would
  run and its cap instead, in order, and the presets are the ones tach-cli lists"
elif ! gpu_present; then
  say "gpu-check: no GPU (no nvidia-smi listing one, no /dev/nvidia0, the CUDA driver counts none);" \
      "nothing to check"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tach-gpu-check.XXXXXX") || exit 1
mkdir -p "$work/logs" "$work/cudnn" "$work/tach" "$work/tach-plain" "$work/tach-plain-wspace" \
  "$work/tach-plain-persist" "$work/tach-plain-wgrad"
status=0
packed=0
# Whatever ends the run (its end, a failure, a signal), the archive is
# written: at most two files come back.
pack() {
  [ "$packed" = 1 ] && return
  packed=1
  cp "$log" "$work/gpu-check.log"
  tar -czf "$out/gpu-check.tar.gz" -C "$work" . 2> /dev/null
  rm -rf "$work" "${bundle_dir:-}"
}
trap 'pack' EXIT
trap 'say "gpu-check: interrupted"; pack; exit 130' INT TERM

# within CAP CMD...: CMD with at most CAP seconds, never past the deadline.
within() {
  local cap=$1 left
  shift
  left=$(( deadline - $(date +%s) - 5 ))
  [ "$left" -lt "$cap" ] && cap=$left
  [ "$cap" -lt 1 ] && return 124
  if [ "$dry" = 1 ]; then
    # Not on stdout, which a caller may be reading.
    printf '[dry run] at most %s s: %s\n' "$cap" "$*" | tee -a "$log" >&2
    return 0
  fi
  timeout -k 2 "$cap" "$@"
}

# A dry run runs the commands that touch no GPU (the presets' list) and
# says, for every other, what it would run and with what cap; the devices
# are GPU_CHECK_DRY_GPUS (2) made-up ones, so that every step shows.
dry_run() {
  local cap=$1 sig=$2 name=$3
  shift 3
  case $name in
    presets) timeout -s "$sig" -k 5 "$cap" "$@" >> "$work/logs/$name.log" 2>&1; return ;;
    devices) seq 0 $(( ${GPU_CHECK_DRY_GPUS:-2} - 1 )) | sed 's/.*/cuda:&  (dry run)/' \
               >> "$work/logs/$name.log" ;;
  esac
  : >> "$work/logs/$name.log"
  # The command as a reader wants it: without run_tach's library path and
  # cuDNN's logging, which every Tach command gets.
  say "[dry run] $name: at most $cap s, $sig at the cap: $(printf '%s\n' "$*" |
    sed -E 's/(env )?(-u CUDNN_[A-Z_]+ |LD_LIBRARY_PATH=[^ ]* |CUDNN_LOG[A-Z_]+=[^ ]* )+//g')"
}

# run_capped CAP SIGNAL NAME CMD...: runs CMD with at most CAP seconds (and
# never past the deadline, keeping 5 s to spare), output to logs/NAME.log;
# SIGNAL at the cap, SIGKILL 5 s later.  Returns CMD's status, 124 when out
# of time (137 when killed).
run_capped() {
  local cap=$1 sig=$2 name=$3 left
  shift 3
  left=$(( deadline - $(date +%s) - 5 ))
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -lt 2 ]; then
    echo "gpu-check: out of time, not run: $*" >> "$work/logs/$name.log"
    return 124
  fi
  if [ "$dry" = 1 ]; then
    dry_run "$cap" "$sig" "$name" "$@"
    return
  fi
  timeout -s "$sig" -k 5 "$cap" "$@" >> "$work/logs/$name.log" 2>&1
}

# run_tach CAP SIGNAL NAME CMD...: run_capped for Tach's commands, which
# get the bundled libraries, cuDNN and cuBLAS on their own library path and
# cuDNN's log at cudnn_level (2, warnings, unless set for the call) in
# their own file; nothing else does.  cudnn_level=off: cuDNN logs nothing
# (the timed runs: its logging costs time that PyTorch's runs do not pay).
run_tach() {
  local cap=$1 sig=$2 name=$3
  shift 3
  if [ "${cudnn_level:-2}" = off ]; then
    run_capped "$cap" "$sig" "$name" env -u CUDNN_LOGLEVEL_DBG -u CUDNN_LOGDEST_DBG \
      -u CUDNN_LOGINFO_DBG -u CUDNN_LOGWARN_DBG -u CUDNN_LOGERR_DBG LD_LIBRARY_PATH="$tachlib" "$@"
  else
    run_capped "$cap" "$sig" "$name" env LD_LIBRARY_PATH="$tachlib" \
      CUDNN_LOGLEVEL_DBG="${cudnn_level:-2}" CUDNN_LOGDEST_DBG="$work/cudnn/$name.log" "$@"
  fi
}

say "== gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), budget $budget s"
say "GPU found by $gpu_found_by"
if [ "$gpu_found_by" = nvidia-smi ]; then
  within 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader 2>&1 | tee -a "$log"
fi
tree_commit=$(git -C "$root" rev-parse HEAD 2> /dev/null) || tree_commit="unknown (no git history here)"

# The binaries: from the bundle when there is one.
bindir=
bundle_dir=
if [ -f "$build/gpu-bundle.tar.gz" ]; then
  bundle_dir=$(mktemp -d "${TMPDIR:-/tmp}/tach-gpu-bundle.XXXXXX")
  if tar -xzf "$build/gpu-bundle.tar.gz" -C "$bundle_dir"; then
    bindir=$bundle_dir/bin
    say "binaries: $build/gpu-bundle.tar.gz"
  else
    say "gpu-check: $build/gpu-bundle.tar.gz does not unpack"
    status=1
  fi
  # The bundle's commit, and its sources against the tree's: a bundle from
  # an older tree would spend the one GPU run on old code.
  if [ ! -f "$bundle_dir/COMMIT" ] || [ ! -f "$bundle_dir/SOURCES" ]; then
    say "gpu-check: REFUSED: $build/gpu-bundle.tar.gz records no commit (an older gpu-check.sh" \
        "made it); bundle again on the build machine: tools/gpu-check.sh --bundle"
    exit 1
  fi
  bundle_commit=$(sed -n 's/^commit //p' "$bundle_dir/COMMIT")
  # Where the tree has its history: the bundle's commit against the tree's.
  relation=
  if git -C "$root" cat-file -e "$bundle_commit^{commit}" 2> /dev/null; then
    if [ "$bundle_commit" = "$tree_commit" ]; then
      relation=" (the tree's own)"
    elif git -C "$root" merge-base --is-ancestor "$bundle_commit" HEAD 2> /dev/null; then
      behind=$(git -C "$root" rev-list --count "$bundle_commit..HEAD")
      relation=" ($behind commit$([ "$behind" = 1 ] || echo s) older than the tree's)"
    else
      relation=" (not in the tree's history)"
    fi
  fi
  say "bundle built from commit $bundle_commit$relation" \
      "($(sed -n 's/^date //p' "$bundle_dir/COMMIT"): $(sed -n 's/^subject //p' "$bundle_dir/COMMIT" | cut -c1-70))," \
      "$(sed -n 's/^uncommitted //p' "$bundle_dir/COMMIT") uncommitted source files; the tree: commit $tree_commit"
  differ=$(cd "$root" && sha256sum -c --quiet "$bundle_dir/SOURCES" 2>&1 | grep -v '^sha256sum: WARNING')
  if [ -n "$differ" ]; then
    say "gpu-check: REFUSED: the bundle is older than the tree (or of another tree):" \
        "$(echo "$differ" | wc -l) of its $(wc -l < "$bundle_dir/SOURCES") source files differ here" \
        "(first: $(echo "$differ" | head -n 1));" \
        "build and bundle again on the build machine: meson compile -C build &&" \
        "tools/gpu-check.sh --bundle build"
    exit 1
  fi
  say "bundle: its $(wc -l < "$bundle_dir/SOURCES") source files match the tree's"
else
  say "binaries: $build (no bundle); the tree: commit $tree_commit"
fi
bin() {
  if [ -n "$bindir" ]; then echo "$bindir/$(basename "$1")"; else echo "$build/$1"; fi
}
cli=$(bin app/tach-cli)

# The library path: the bundle, the CUDA toolkit, then PyTorch's wheels
# (cuDNN 9 and cuBLAS 13 as nvidia/*/lib), then what the caller had.
tachlib=$(gpu_library_path "$bundle_dir" "$(within 15 "$PYTHON" -c "$gpu_site_py" 2> /dev/null)")
say "library path for Tach: $tachlib"
for b in $binaries; do
  f=$(bin "$b")
  {
    echo "-- ldd $f"
    if [ -x "$f" ]; then env LD_LIBRARY_PATH="$tachlib" ldd "$f"; else echo "missing"; fi
  } >> "$log" 2>&1
done
if [ ! -x "$cli" ]; then
  say "gpu-check: $cli is missing: build ('meson setup build && meson compile -C build', nvcc present)" \
      "and bundle ('tools/gpu-check.sh --bundle build') on the build machine"
  status=1
fi
run_tach 20 TERM devices "$cli" devices
cat "$work/logs/devices.log" >> "$log"
if ! grep -q '^cuda:' "$work/logs/devices.log"; then
  say "gpu-check: tach-cli lists no CUDA device (a driver older than CUDA 13, or libcudnn.so.9 /" \
      "libcublas.so.13 missing from the path above, are the usual causes); going on to see the rest"
  status=1
fi

say "== smoke: 3 steps of the fused LSTM"
cudnn_level=3 run_tach 30 INT smoke "$cli" run --device cuda --workload bilstm --rnn fused \
  --batch 64 --steps 3 --warmup 1
rc=$?
tail -n 12 "$work/logs/smoke.log" | tee -a "$log"
[ "$rc" = 0 ] && say "smoke: passed" || { say "smoke: FAILED (exit $rc)"; status=1; }

say "== GPU tests, each binary in one process, then what did not pass there one path per process"
# Each binary gets the time meson gives it, up to the point that leaves the
# NCCL step, the sweep and PyTorch their shares (see the top).
tests_stop=$(( deadline - nccl_cap - sweep_share - torch_share ))
for spec in $gpu_tests; do
  t=${spec%%:*}
  rest=${spec#*:}
  meson_cap=${rest%%:*}
  rest=${rest#*:}
  exe=${rest%%:*}
  arg=
  [ "$rest" != "$exe" ] && arg=${rest#*:}
  f=$(bin "tests/$exe")
  if [ "$dry" = 1 ]; then
    end=$(( $(date +%s) + meson_cap ))
    [ "$end" -gt "$tests_stop" ] && end=$tests_stop
    say "[dry run] $t: $f${arg:+ $arg}, the whole binary in one process, at most" \
        "$(( (end - $(date +%s)) * 3 / 4 )) s (3/4 of meson's $meson_cap s or of what is left" \
        "before the later steps' shares), then each path that did not pass, alone, 30 s at most each"
    continue
  fi
  if [ ! -x "$f" ]; then
    say "$t: not built"
    status=1
    continue
  fi
  run_tach 20 TERM "$t-list" "$f" ${arg:+"$arg"} -l
  rc=$?
  paths=$(grep '^/' "$work/logs/$t-list.log")
  if [ "$rc" = 77 ]; then
    say "$t: skipped (no GPU usable by the test)"
    status=1
    continue
  fi
  [ -z "$paths" ] && { say "$t: lists no tests (exit $rc)"; status=1; continue; }
  # The whole binary in one process first (one CUDA start-up, not one per
  # path), with three quarters of its time; each path it did not report as
  # passed or skipped (a failure, a crash and every path after it, the
  # cap) then runs again in its own process, so that a failure hides
  # nothing and has its own log.
  tests_end=$(( $(date +%s) + meson_cap ))
  [ "$tests_end" -gt "$tests_stop" ] && tests_end=$tests_stop
  cap=$(( (tests_end - $(date +%s)) * 3 / 4 ))
  [ "$cap" -gt 1 ] && run_tach "$cap" TERM "$t-all" "$f" ${arg:+"$arg"} --tap
  done_ok=$(awk '$1 == "ok" && $3 ~ /^\// { print $3 (/# SKIP/ ? " skip" : " pass") }
                $1 == "not" && $2 == "ok" && $4 ~ /^\// { print $4 " fail" }' \
            "$work/logs/$t-all.log" 2> /dev/null)
  pass=0 fail=0
  for p in $paths; do
    name="$t$(echo "$p" | tr '/' '_')"
    case $(printf '%s\n' "$done_ok" | awk -v p="$p" '$1 == p { print $2; exit }') in
      pass) pass=$((pass + 1)); continue ;;
      skip) say "$t $p: skipped"; continue ;;
      fail) say "$t $p: failed in the whole binary's run (logs/$t-all.log); again alone:" ;;
    esac
    if [ "$(date +%s)" -ge "$tests_end" ]; then
      say "$t $p: NOT RUN (its $meson_cap s, or the budget before the sweep's share, are spent)"
      fail=$((fail + 1))
      continue
    fi
    cap=$(( tests_end - $(date +%s) ))
    [ "$cap" -gt 30 ] && cap=30
    run_tach "$cap" TERM "$name" "$f" ${arg:+"$arg"} -p "$p" --tap
    rc=$?
    case $rc in
      0) if grep -q '^ok .*# SKIP' "$work/logs/$name.log"; then say "$t $p: skipped"
         else pass=$((pass + 1)); fi ;;
      77) say "$t $p: skipped" ;;
      124|137) say "$t $p: TIMED OUT"; fail=$((fail + 1)) ;;
      *) say "$t $p: FAILED (exit $rc)"; grep -E '^not ok|ERROR|failed|nmse|NMSE' "$work/logs/$name.log" |
           head -n 4 | tee -a "$log"; fail=$((fail + 1)) ;;
    esac
  done
  say "$t: $pass passed, $fail failed or not run"
  [ "$fail" = 0 ] || status=1
done

# Ranks through NCCL (issue 34): the communicator made over MPI, every
# gradient all-reduce NCCL's.  tests/test-nccl.py runs them with its loss
# comparison: one rank, then two (one GPU each) where the host has two
# GPUs.  ncclCommInitRank has no deadline, so the step has nccl_cap
# seconds in all and stops at its first failure.  A host may have an
# mpirun whose MPI cannot start a process (the bundle carries libmpi but
# not Open MPI's plugins or PMIx): asked first, with a command that runs
# nothing, and reported as the environment's failure, not Tach's (the
# GPU tests ran the NCCL path without MPI).
say "== nccl: ranks through NCCL under mpirun (tests/test-nccl.py; $nccl_cap s in all, stops at the first failure)"
nccl_end=$(( $(date +%s) + nccl_cap ))
n_gpus=$(grep -c '^cuda:' "$work/logs/devices.log")
mpi_env="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
if ! command -v mpirun > /dev/null 2>&1; then
  say "nccl: skipped: no mpirun on this host (apt-get install openmpi-bin)"
elif ! run_tach 10 TERM mpi-start $mpi_env mpirun -np 1 "$cli" presets; then
  say "nccl: NOT RUN: MPI cannot start a process here (mpirun -np 1 tach-cli presets fails:" \
      "$(grep -m 1 -E 'failed|error|Error' "$work/logs/mpi-start.log" | cut -c1-120));" \
      "the environment's failure, not Tach's (a host without Open MPI's plugins or PMIx);" \
      "the GPU tests ran the NCCL path without MPI"
  environment="MPI cannot start a process"
else
  for np in 1 2; do
    if [ "$np" -gt "$n_gpus" ]; then
      say "nccl-$np: skipped: $n_gpus GPU(s) here"
      continue
    fi
    cap=$(( nccl_end - $(date +%s) ))
    if [ "$cap" -lt 2 ]; then
      say "nccl-$np: NOT RUN (the step's $nccl_cap s are spent)"
      status=1
      break
    fi
    run_tach "$cap" TERM "nccl-$np" python3 "$root/tests/test-nccl.py" "$cli" mpi cuda nccl "$np"
    rc=$?
    grep -E '^FAIL ' "$work/logs/nccl-$np.log" | head -n 4 | tee -a "$log"
    case $rc in
      0) say "nccl-$np: passed ($(grep -c '^ok ' "$work/logs/nccl-$np.log") checks)" ;;
      77) say "nccl-$np: skipped: $(tail -n 1 "$work/logs/nccl-$np.log")" ;;
      124|137) say "nccl-$np: TIMED OUT at the step's $nccl_cap s; not going on"; status=1; break ;;
      *) say "nccl-$np: FAILED (exit $rc), see logs/nccl-$np.log; not going on"; status=1; break ;;
    esac
  done
fi

# The gpt step and the presets' sweep share the sweep's time; PyTorch,
# after them, keeps its share.
sweep_end=$(( deadline - torch_share ))
# sweep_one NAME ARGS...; sweep_env (an environment entry) and sweep_csv (the
# results folder, default tach/) may be set for one call.
sweep_one() {
  local name=$1 cap
  shift
  if [ "$(date +%s)" -ge "$sweep_end" ]; then
    say "run $name: NOT RUN (the budget is spent)"
    status=1
    return
  fi
  cap=$(( sweep_end - $(date +%s) ))
  [ "$cap" -gt 6 ] && cap=6
  cudnn_level=off run_tach "$cap" INT "run-$name" env ${sweep_env:+"$sweep_env"} "$cli" run --device cuda \
    --csv "${sweep_csv:-$work/tach}" "$@"
  case $? in
    0) ;;
    3|124|130) say "run $name: stopped at its cap" ;;
    *) say "run $name: FAILED, see logs/run-$name.log"; tail -n 2 "$work/logs/run-$name.log" | tee -a "$log"
       status=1 ;;
  esac
}
# In English whatever the host's language: presets_of reads its words.
run_tach 10 TERM presets env LANGUAGE=C LC_ALL=C "$cli" presets
# presets_of WORKLOAD: the presets tach-cli lists for it (a name starts a
# line after two spaces, however long it is), less the data-parallel ones,
# which one process runs as tuned.
presets_of() {
  awk -v w="$1" '
    /^[a-z]/ { cur = $1; next }
    cur != w { next }
    /^  [^ ]/ { names[++n] = $1; next }
    /between ranks only/ { apart[names[n]] = 1 }
    END { for (i = 1; i <= n; i++) if (!(names[i] in apart)) print names[i] }' \
    "$work/logs/presets.log"
}
# The gpt workload (issue 44; GPU code never run on a GPU before), at a
# small shape so that each run takes seconds: training eagerly and as a
# graph, generation in each kv-cache mode, the static cache also as a
# graph (its decode step at a device position) and as the preset that
# reproduces Hugging Face's compiled static cache.  The graph's tokens must
# be the eager static cache's (same seed): a replay that froze the
# position would draw others.
say "== gpt: train, generate per kv-cache mode, the static cache eager and as a graph (each stopped at its cap)"
gpt_shape="--workload gpt --layers 2 --heads 4 --embed 128 --context 128 --batch 4 --precision fp32 --steps 60 --warmup 5"
gpt_gen="--task generate --prompt 16 --new-tokens 24 --sampling device --print-text true"
sweep_one gpt-train $gpt_shape --task train
sweep_one gpt-train-graph $gpt_shape --task train --launch graph
for kv in none dynamic static; do
  sweep_one "gpt-generate-$kv" $gpt_shape $gpt_gen --kv-cache "$kv"
done
sweep_one gpt-generate-static-graph $gpt_shape $gpt_gen --kv-cache static --launch graph
sweep_one gpt-generate-hf-static-compiled $gpt_shape $gpt_gen --preset hf-static-compiled
# gpt_text NAME: the text a run printed (its "text" line and the streams' after it).
gpt_text() {
  sed -n '/^  text /,$p' "$work/logs/run-$1.log" 2> /dev/null
}
if [ -n "$(gpt_text gpt-generate-static)" ] && [ -n "$(gpt_text gpt-generate-static-graph)" ]; then
  if [ "$(gpt_text gpt-generate-static)" = "$(gpt_text gpt-generate-static-graph)" ]; then
    say "gpt: launch=graph drew the eager static cache's tokens"
  else
    say "gpt: launch=graph drew OTHER tokens than the eager static cache (a replay at a stale position?)"
    gpt_text gpt-generate-static | head -n 2 | tee -a "$log"
    gpt_text gpt-generate-static-graph | head -n 2 | tee -a "$log"
    status=1
  fi
fi

say "== Tach presets, 100 steps each (each stopped at its cap with SIGINT; cuDNN's logging off)"
for spec in bilstm:train lstm-lm:generate lstm-lm:train cnn:train; do
  w=${spec%%:*}
  task=${spec#*:}
  for p in $(presets_of "$w"); do
    sweep_one "$w-$task-$p" --workload "$w" --task "$task" --preset "$p" --steps 100 --warmup 10
  done
  sweep_one "$w-$task-tuned-tf32" --workload "$w" --task "$task" --preset tuned --precision tf32 \
    --steps 100 --warmup 10
  # The "before": tuned with every lean path of the GPU step turned off.
  sweep_env=TACH_CUDA_PLAIN=all sweep_csv=$work/tach-plain \
    sweep_one "$w-$task-tuned-plain" --workload "$w" --task "$task" --preset tuned --steps 100 \
    --warmup 10
  # And with only the LSTM weights copied per step (the weight-space views off).
  if [ "$spec" = bilstm:train ] || [ "$spec" = lstm-lm:train ]; then
    sweep_env=TACH_CUDA_PLAIN=wspace sweep_csv=$work/tach-plain-wspace \
      sweep_one "$w-$task-tuned-plain-wspace" --workload "$w" --task "$task" --preset tuned \
      --steps 100 --warmup 10
  fi
  # And with one more lean path off: the LSTM's persistent algorithm; the
  # cnn's weight gradient as a GEMM.
  one=persist
  [ "$w" = cnn ] && one=wgrad
  sweep_env=TACH_CUDA_PLAIN=$one sweep_csv=$work/tach-plain-$one \
    sweep_one "$w-$task-tuned-plain-$one" --workload "$w" --task "$task" --preset tuned \
    --steps 100 --warmup 10
done

say "== PyTorch, last (TF32 off = fp32, PyTorch's default = beside Tach's tf32; its figures exist from dbcfbfa)"
if within 20 "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
     > "$work/logs/torch-check.log" 2>&1; then
  for mode in eager graphs; do
    flag=
    [ "$mode" = graphs ] && flag=--graphs
    run_capped 40 TERM "torch-$mode" "$PYTHON" "$root/bench/torch_workloads.py" --device cuda $flag \
      --cases all --both-tf32 --steps 40 --warmup 10 --format csv
    rc=$?
    grep -v '^pytorch,\|^framework,' "$work/logs/torch-$mode.log" | tail -n 3 >> "$log"
    grep '^framework,\|^pytorch,' "$work/logs/torch-$mode.log" > "$work/torch-$mode.csv"
    [ "$rc" = 0 ] || { say "torch $mode: FAILED or out of time (exit $rc), see logs/torch-$mode.log"; status=1; }
  done
else
  say "PyTorch with CUDA is not usable by $PYTHON here: no PyTorch comparison ($(tail -n 1 "$work/logs/torch-check.log"))"
fi

say "== summary"
deadline=$(( start + budget ))
within 20 "$PYTHON" "$root/tools/gpu-check-summary.py" "$work" 2>&1 | tee "$work/table.txt" |
  tee -a "$log"
[ -n "$environment" ] && environment=" (the environment's failure, not Tach's: $environment)"
say "gpu-check: done in $(( $(date +%s) - start )) s, status $status$environment;" \
    "everything else is in $out/gpu-check.tar.gz"
exit $status
