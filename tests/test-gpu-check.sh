#!/bin/sh
# test-gpu-check.sh: tools/gpu-check.sh keeps its promises without a GPU.
#   1. No GPU (no nvidia-smi on PATH, no device node, no CUDA driver): "no
#      GPU" and exit 77 within seconds.
#   2. A fake device on which everything hangs (nvidia-smi that lists a
#      GPU, a tach-cli and GPU tests that never return, a Python that
#      hangs): the run keeps to its budget (GPU_CHECK_BUDGET) and still
#      leaves at most 8 files in $OUT (the log and one archive).
#   3. A fast fake device: each GPU test binary runs once, then only the
#      paths that did not pass there, one per process.
#   4. The steps in their order (devices, smoke, GPU tests, the NCCL step,
#      gpt, the sweep, PyTorch last); gpt trains and generates in each
#      kv-cache mode and as a graph, whose text must be the eager static
#      cache's (a fake that draws others fails the check); the sweep runs
#      every one-process preset (an
#      18-character name followed by one space too) and none of the
#      data-parallel ones; the NCCL step (mpirun and test-nccl.py stubbed)
#      asks MPI first, then runs 1 rank, then 2.
#   5. The NCCL step stops at its first failure, and at its cap when it
#      hangs; an MPI that cannot start is the environment's failure.
#   6. --dry-run: the order and the caps, without a GPU, nothing run.
#   7. A bundle: refused from a build older than its tree; it records the
#      commit, which the check prints.
#   8. A GPU found without nvidia-smi (a failing one on PATH), by its device
#      node; the bundle's sources no longer those of the tree: refused
#      before any test or run.
#   9. A GPU found by the CUDA driver alone (no node): a bundle that matches
#      its tree runs; the timed runs have cuDNN's logging off, the smoke
#      run has it on; a commit later, the check says the bundle's is one
#      commit older than the tree's.
# Usage: test-gpu-check.sh SRCDIR
set -u
src=$1
script=$src/tools/gpu-check.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }

# 1. No GPU.
mkdir -p "$tmp/nogpu-bin"
for tool in bash date mkdir tee printf cat env timeout mktemp dirname sleep; do
  p=$(command -v "$tool") && ln -s "$p" "$tmp/nogpu-bin/$tool"
done
t0=$(date +%s)
OUT=$tmp/out1 PATH=$tmp/nogpu-bin GPU_DEV_DIR=$tmp/nodev PYTHON=$tmp/none \
  bash "$script" "$tmp/none" > "$tmp/nogpu.txt" 2>&1
rc=$?
t1=$(date +%s)
[ "$rc" = 77 ] || fail "no GPU: exit $rc, expected 77: $(cat "$tmp/nogpu.txt")"
grep -q "no GPU" "$tmp/nogpu.txt" || fail "no GPU: the output does not say 'no GPU'"
# Seconds, not the budget (345 s): 30 s is far from both, so that a busy
# machine's slow forks cannot fail it and a wait for the budget still does.
[ $((t1 - t0)) -le 30 ] || fail "no GPU: took $((t1 - t0)) s"
echo "ok 1 no GPU: exit 77 in $((t1 - t0)) s"

# 2. A device on which everything hangs.
fake=$tmp/fake-bin
build=$tmp/build
mkdir -p "$fake" "$build/app" "$build/tests"
cat > "$fake/nvidia-smi" << 'SH'
#!/bin/sh
echo "GPU 0: Fake H200 (UUID: GPU-fake)"
SH
cat > "$build/app/tach-cli" << 'SH'
#!/bin/sh
case "$1" in
  devices) echo "cuda:0  Fake H200" ;;
  presets) printf 'bilstm\n  tf1-feed-dict    x\n  tuned            y\ncnn\n  estimator        z\n' ;;
  *) exec sleep 1000 ;;
esac
SH
for t in test-ops test-gpu-modes test-cuda-host; do
  cat > "$build/tests/$t" << 'SH'
#!/bin/sh
for a in "$@"; do [ "$a" = -l ] && { printf '/gpu/a\n/gpu/b\n/gpu/c\n'; exit 0; }; done
exec sleep 1000
SH
done
cat > "$fake/python3" << 'SH'
#!/bin/sh
exec sleep 1000
SH
chmod +x "$fake"/* "$build"/app/* "$build"/tests/*
budget=30
t0=$(date +%s)
OUT=$tmp/out2 GPU_CHECK_BUDGET=$budget PYTHON=$fake/python3 PATH=$fake:$PATH \
  bash "$script" "$build" > "$tmp/hang.txt" 2>&1
rc=$?
t1=$(date +%s)
[ "$rc" != 0 ] || fail "hanging device: exit 0"
[ $((t1 - t0)) -le $((budget + 10)) ] || fail "hanging device: took $((t1 - t0)) s of a $budget s budget"
n=$(find "$tmp/out2" -type f | wc -l)
[ "$n" -le 8 ] || fail "hanging device: $n files in OUT"
[ -s "$tmp/out2/gpu-check.log" ] || fail "hanging device: no log"
tar -tzf "$tmp/out2/gpu-check.tar.gz" > "$tmp/list.txt" || fail "hanging device: no archive"
grep -q "logs/smoke.log" "$tmp/list.txt" || fail "hanging device: the archive lacks the smoke log"
grep -q "ldd" "$tmp/out2/gpu-check.log" || fail "hanging device: the log lacks ldd"
grep -q "library path for Tach" "$tmp/out2/gpu-check.log" || fail "hanging device: no library path"
echo "ok 2 hanging device: exit $rc after $((t1 - t0)) s of $budget, $n files"

# 3. A fast device whose GPU tests report in TAP: each binary runs once in
#    one process; only what did not pass there runs again, one path per
#    process (/gpu/b fails in the whole run and alone, the whole run stops
#    before /gpu/c, which passes alone).
fast=$tmp/fast-bin
build3=$tmp/build3
mkdir -p "$fast" "$build3/app" "$build3/tests"
cp "$fake/nvidia-smi" "$fast/nvidia-smi"
cat > "$fast/python3" << 'SH'
#!/bin/sh
exit 1
SH
cat > "$build3/app/tach-cli" << 'SH'
#!/bin/sh
echo "tach-cli $* cudnn=${CUDNN_LOGLEVEL_DBG:-off}" >> "$FAKE_CALLS"
case "$1" in
  devices) echo "cuda:0  Fake H200" ;;
  presets) printf 'bilstm\n  tuned            y\n' ;;
esac
exit 0
SH
for t in test-ops test-gpu-modes test-cuda-host; do
  cat > "$build3/tests/$t" << 'SH'
#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_CALLS"
for a in "$@"; do [ "$a" = -l ] && { printf '/gpu/a\n/gpu/b\n/gpu/c\n'; exit 0; }; done
case " $* " in
  *" -p /gpu/b "*) echo "not ok 1 /gpu/b"; exit 1 ;;
  *" -p /gpu/c "*) echo "ok 1 /gpu/c"; exit 0 ;;
  *" -p "*) echo "ok 1 $*"; exit 0 ;;
esac
printf 'ok 1 /gpu/a\nnot ok 2 /gpu/b\n'
exit 1
SH
done
chmod +x "$fast"/* "$build3"/app/* "$build3"/tests/*
t0=$(date +%s)
FAKE_CALLS=$tmp/calls OUT=$tmp/out3 GPU_CHECK_BUDGET=60 PYTHON=$fast/python3 PATH=$fast:$PATH \
  bash "$script" "$build3" > "$tmp/fast.txt" 2>&1
rc=$?
t1=$(date +%s)
[ "$rc" = 1 ] || fail "fast device: exit $rc, expected 1 (a test failed): $(cat "$tmp/fast.txt")"
for t in test-cuda-host test-ops-cuda test-gpu-modes; do
  grep -q "^$t: 2 passed, 1 failed or not run" "$tmp/fast.txt" || fail "fast device: no '$t: 2 passed, 1 failed': $(cat "$tmp/fast.txt")"
  grep -q "^$t /gpu/b: failed in the whole binary's run" "$tmp/fast.txt" || fail "fast device: $t's whole-run failure unreported"
  grep -q "^$t /gpu/b: FAILED (exit 1)" "$tmp/fast.txt" || fail "fast device: $t /gpu/b alone unreported"
done
[ "$(grep -c -- '-p /gpu/a' "$tmp/calls")" = 0 ] || fail "fast device: /gpu/a ran again after passing"
[ "$(grep -c -- '-p /gpu/c' "$tmp/calls")" = 3 ] || fail "fast device: /gpu/c did not run alone in each binary"
echo "ok 3 fast device: each binary once, then the paths that did not pass, in $((t1 - t0)) s"

# 4. The steps' order, the sweep's presets and the NCCL step, on a fast
#    fake device with two GPUs, mpirun and test-nccl.py stubbed (a python3
#    on PATH that plays test-nccl.py as FAKE_NCCL says).
fake8=$tmp/fake8-bin
build8=$tmp/build8
mkdir -p "$fake8" "$build8"
cp -R "$build3/app" "$build3/tests" "$build8/"
cp "$fake/nvidia-smi" "$fake8/nvidia-smi"
cat > "$build8/app/tach-cli" << 'SH'
#!/bin/sh
echo "tach-cli $*" >> "$FAKE_CALLS"
case "$1" in
  devices) printf 'cuda:0  Fake H200\ncuda:1  Fake H200\n' ;;
  presets) printf 'bilstm\n  eighteen-chars-one one process, its name 18 characters\n'
           printf '                   layout=batch-major\n'
           printf '  horovod-no-overlap Horovod as horovod#889 ran it\n'
           printf '                   grad-sync=per-tensor\n'
           printf '                   between ranks only (mpirun -np 2 or more): alone it runs as tuned\n'
           printf '  ddp              DDP\n'
           printf '                   between ranks only (mpirun -np 2 or more): alone it runs as tuned\n'
           printf '  tuned            the fastest\n' ;;
  run) case "$*" in
         *--print-text*--launch\ graph*) [ "$FAKE_GPT" = differ ] && text=other || text=same ;;
         *--print-text*) text=same ;;
         *) text= ;;
       esac
       [ -n "$text" ] && printf '  text         prompt | %s\n' "$text" ;;
esac
exit 0
SH
cat > "$fake8/mpirun" << 'SH'
#!/bin/sh
echo "mpirun $*" >> "$FAKE_CALLS"
if [ "$FAKE_MPI" = broken ]; then
  echo "It looks like orte_init failed for some reason; your parallel process is" >&2
  exit 1
fi
exit 0
SH
cat > "$fake8/python3" << 'SH'
#!/bin/sh
case "$1" in
  */test-nccl.py)
    echo "test-nccl $6" >> "$FAKE_CALLS"
    case "$FAKE_NCCL" in
      pass) echo "ok   the losses agree"; exit 0 ;;
      fail) echo "FAIL the losses differ"; exit 1 ;;
      hang) exec sleep 1000 ;;
    esac ;;
esac
exit 1
SH
chmod +x "$fake8"/* "$build8"/app/*
# check8 NAME MPI NCCL BUDGET: a run, its output in $tmp/NAME.txt, its calls
# in $tmp/NAME.calls.
check8() {
  : > "$tmp/$1.calls"
  FAKE_CALLS=$tmp/$1.calls FAKE_MPI=$2 FAKE_NCCL=$3 OUT=$tmp/out-$1 GPU_CHECK_BUDGET=$4 \
    PYTHON=$fake8/python3 PATH=$fake8:$PATH bash "$script" "$build8" > "$tmp/$1.txt" 2>&1
}
check8 pass ok pass 60
order=$(grep '^== ' "$tmp/pass.txt" | cut -d' ' -f2 | tr -d ':,' | tr '\n' ' ')
[ "$order" = "gpu-check smoke GPU nccl gpt Tach PyTorch summary " ] ||
  fail "order: $order: $(cat "$tmp/pass.txt")"
for kv in none dynamic static; do
  grep -q -- "--workload gpt .*--task generate .*--kv-cache $kv\$" "$tmp/pass.calls" ||
    fail "gpt: generate with kv-cache=$kv did not run: $(grep gpt "$tmp/pass.calls")"
done
grep -q -- "--workload gpt .*--kv-cache static --launch graph" "$tmp/pass.calls" ||
  fail "gpt: the static cache as a graph did not run"
grep -q -- "--workload gpt .*--task train --launch graph" "$tmp/pass.calls" ||
  fail "gpt: training as a graph did not run"
grep -q "^gpt: launch=graph drew the eager static cache's tokens" "$tmp/pass.txt" ||
  fail "gpt: the texts' match not said: $(cat "$tmp/pass.txt")"
export FAKE_GPT=differ
check8 differ ok pass 60
unset FAKE_GPT
grep -q "^gpt: launch=graph drew OTHER tokens" "$tmp/differ.txt" ||
  fail "gpt: other tokens under graph not said: $(cat "$tmp/differ.txt")"
grep -q "^gpu-check: done in .*status 1" "$tmp/differ.txt" ||
  fail "gpt: other tokens under graph did not fail the check: $(tail -n 2 "$tmp/differ.txt")"
grep -q -- "--preset eighteen-chars-one " "$tmp/pass.calls" ||
  fail "sweep: the preset with an 18-character name and one space did not run: $(cat "$tmp/pass.calls")"
grep -q -- "--preset tuned " "$tmp/pass.calls" || fail "sweep: tuned did not run"
if grep -E -q -- "--preset (horovod-no-overlap|ddp) " "$tmp/pass.calls"; then
  fail "sweep: a data-parallel preset ran in one process: $(grep -- --preset "$tmp/pass.calls")"
fi
grep -q "^mpirun .*-np 1 .*tach-cli presets" "$tmp/pass.calls" || fail "nccl: MPI not asked first"
[ "$(grep '^test-nccl' "$tmp/pass.calls" | tr '\n' ' ')" = "test-nccl 1 test-nccl 2 " ] ||
  fail "nccl: test-nccl.py not run for 1 and then 2 ranks: $(cat "$tmp/pass.calls")"
grep -q "^nccl-2: passed" "$tmp/pass.txt" || fail "nccl: a pass not said: $(cat "$tmp/pass.txt")"
echo "ok 4 order: devices, smoke, GPU tests, nccl, gpt, sweep, PyTorch; gpt's runs and its text check; the sweep's presets; nccl passes"

# 5. The NCCL step fails: it stops at its first failure; it hangs: it is
#    stopped at its cap (a tenth of a 60 s budget) and goes no further; MPI
#    cannot start: the environment's failure, test-nccl.py not run.
check8 fail ok fail 60
[ "$(grep -c '^test-nccl' "$tmp/fail.calls")" = 1 ] || fail "nccl failed: it went on: $(cat "$tmp/fail.calls")"
grep -q "^nccl-1: FAILED (exit 1)" "$tmp/fail.txt" || fail "nccl failed: not said: $(cat "$tmp/fail.txt")"
grep -q "^FAIL the losses differ" "$tmp/fail.txt" || fail "nccl failed: its FAIL line not shown"
t0=$(date +%s)
check8 hang ok hang 60
t1=$(date +%s)
[ "$(grep -c '^test-nccl' "$tmp/hang.calls")" = 1 ] || fail "nccl hung: it went on: $(cat "$tmp/hang.calls")"
grep -q "^nccl-1: TIMED OUT at the step's 6 s" "$tmp/hang.txt" || fail "nccl hung: not said: $(cat "$tmp/hang.txt")"
[ $((t1 - t0)) -le 60 ] || fail "nccl hung: the check took $((t1 - t0)) s"
check8 broken broken pass 60
grep -q "^nccl: NOT RUN: MPI cannot start a process here (mpirun -np 1 tach-cli presets fails: It looks like orte_init failed" "$tmp/broken.txt" ||
  fail "MPI broken: not said: $(cat "$tmp/broken.txt")"
grep -q "^gpu-check: done in .* (the environment's failure, not Tach's: MPI cannot start a process)" \
  "$tmp/broken.txt" || fail "MPI broken: the last line does not say the environment failed"
! grep -q '^test-nccl' "$tmp/broken.calls" || fail "MPI broken: test-nccl.py ran"
echo "ok 5 nccl: stops at its first failure, a hang at its cap; a broken MPI is the environment's"

# 6. A dry run: no GPU needed, the steps in order with their caps, nothing
#    run but the presets' list.
: > "$tmp/dry.calls"
FAKE_CALLS=$tmp/dry.calls OUT=$tmp/out-dry PATH=$fake8:$PATH GPU_DEV_DIR=$tmp/nodev PYTHON=$tmp/none \
  bash "$script" --dry-run "$build8" > "$tmp/dry.txt" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "dry run: exit $rc: $(cat "$tmp/dry.txt")"
order=$(grep '^== ' "$tmp/dry.txt" | cut -d' ' -f2 | tr -d ':,' | tr '\n' ' ')
[ "$order" = "gpu-check smoke GPU nccl gpt Tach PyTorch summary " ] || fail "dry run: order: $order"
grep -q "^\[dry run\] run-gpt-generate-static-graph: at most 6 s" "$tmp/dry.txt" ||
  fail "dry run: gpt's graph run and its cap not shown"
grep -q "^\[dry run\] nccl-1: at most 30 s" "$tmp/dry.txt" || fail "dry run: the NCCL cap not shown: $(cat "$tmp/dry.txt")"
grep -q "^\[dry run\] test-gpu-modes: .* at most [0-9]* s" "$tmp/dry.txt" || fail "dry run: the tests' caps not shown"
[ "$(cat "$tmp/dry.calls")" = "tach-cli presets" ] || fail "dry run: ran $(cat "$tmp/dry.calls")"
! grep -q "passed" "$tmp/dry.txt" || fail "dry run: says something passed: $(grep passed "$tmp/dry.txt")"
echo "ok 6 dry run: the order and the caps, nothing run but the presets' list"

# 7. A bundle made in a tree of its own (a git repository holding the check
#    and one source file), from test 3's fake build (its tach-cli logs each
#    call with the cuDNN logging level it was given).
if ! command -v git > /dev/null 2>&1; then
  echo "ok 7 # SKIP no git: the bundle's commit cannot be tested"
  exit 0
fi
tree=$tmp/tree
build4=$tmp/build4
mkdir -p "$tree/tools" "$tree/engine" "$build4" "$tmp/tools4"
cp "$src/tools/gpu-check.sh" "$src/tools/gpu-lib.sh" "$src/tools/gpu-check-summary.py" "$tree/tools/"
echo "project('fake', 'c')" > "$tree/meson.build"
echo "int tach_fake;" > "$tree/engine/fake.c"
(cd "$tree" && git init -q && git add -A &&
  git -c user.name=test -c user.email=test@example.invalid commit -q -m "the fake tree") ||
  fail "bundle: cannot make a git tree"
commit=$(git -C "$tree" rev-parse HEAD)
cp -R "$build3/app" "$build3/tests" "$build4/"
# ninja: whether the build is older than its tree, as FAKE_STALE says.
cat > "$tmp/tools4/ninja" << 'SH'
#!/bin/sh
if [ "${FAKE_STALE:-0}" = 1 ]; then echo "[1/2] Compiling C object app/tach-cli.p/main.c.o"
else echo "ninja: no work to do."; fi
SH
chmod +x "$tmp/tools4/ninja"
: > "$build4/build.ninja"
FAKE_STALE=1 PATH=$tmp/tools4:$PATH bash "$tree/tools/gpu-check.sh" --bundle "$build4" \
  > "$tmp/stale.txt" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "bundle of a stale build: exit $rc, expected 1: $(cat "$tmp/stale.txt")"
grep -q "older than the tree" "$tmp/stale.txt" || fail "bundle of a stale build: not said: $(cat "$tmp/stale.txt")"
[ ! -e "$build4/gpu-bundle.tar.gz" ] || fail "bundle of a stale build: a bundle was written"
PATH=$tmp/tools4:$PATH bash "$tree/tools/gpu-check.sh" --bundle "$build4" > "$tmp/bundle.txt" 2>&1 ||
  fail "bundle: $(cat "$tmp/bundle.txt")"
grep -q "built from commit $commit" "$tmp/bundle.txt" || fail "bundle: no commit said: $(cat "$tmp/bundle.txt")"
tar -xzOf "$build4/gpu-bundle.tar.gz" ./COMMIT | grep -q "^commit $commit" ||
  fail "bundle: COMMIT does not record $commit"
tar -xzOf "$build4/gpu-bundle.tar.gz" ./SOURCES | grep -q "engine/fake.c" ||
  fail "bundle: SOURCES lacks engine/fake.c"
echo "ok 7 bundle: a stale build refused; the commit and the sources recorded"

# 8. No nvidia-smi that lists a GPU (one on PATH that fails), a device node;
#    the tree changed since the bundle: refused, nothing run.
mkdir -p "$tmp/smi-fails" "$tmp/dev5"
printf '#!/bin/sh\nexit 9\n' > "$tmp/smi-fails/nvidia-smi"
chmod +x "$tmp/smi-fails/nvidia-smi"
: > "$tmp/dev5/nvidia0"
echo "int tach_fake_newer;" > "$tree/engine/fake.c"
: > "$tmp/calls5"
t0=$(date +%s)
FAKE_CALLS=$tmp/calls5 OUT=$tmp/out5 GPU_CHECK_BUDGET=60 GPU_DEV_DIR=$tmp/dev5 PYTHON=$fast/python3 \
  PATH=$tmp/smi-fails:$PATH bash "$tree/tools/gpu-check.sh" "$build4" > "$tmp/older.txt" 2>&1
rc=$?
t1=$(date +%s)
grep -q "GPU found by the device node $tmp/dev5/nvidia0" "$tmp/older.txt" ||
  fail "device node: the GPU not found by it: $(cat "$tmp/older.txt")"
[ "$rc" = 1 ] || fail "older bundle: exit $rc, expected 1: $(cat "$tmp/older.txt")"
grep -q "bundle built from commit $commit (the tree's own)" "$tmp/older.txt" ||
  fail "older bundle: its commit not printed: $(cat "$tmp/older.txt")"
grep -q "REFUSED: the bundle is older than the tree" "$tmp/older.txt" ||
  fail "older bundle: not refused: $(cat "$tmp/older.txt")"
[ ! -s "$tmp/calls5" ] || fail "older bundle: ran $(cat "$tmp/calls5")"
# Refused at once, not at the 60 s budget (half of it, for a busy machine).
[ $((t1 - t0)) -le 30 ] || fail "older bundle: refused after $((t1 - t0)) s"
[ -s "$tmp/out5/gpu-check.tar.gz" ] || fail "older bundle: no archive"
echo "ok 8 a GPU by its device node; an older bundle refused in $((t1 - t0)) s, nothing run"

# 9. No node: the CUDA driver counts one GPU (the probe through PYTHON).  The
#    tree back as bundled: the check runs; timed runs without cuDNN's log.
git -C "$tree" checkout -q -- engine/fake.c
cat > "$tmp/python-cuda" << 'SH'
#!/bin/sh
case "$2" in *cuDeviceGetCount*) echo "1 by cuDeviceGetCount"; exit 0 ;; esac
exit 1
SH
chmod +x "$tmp/python-cuda"
: > "$tmp/calls6"
FAKE_CALLS=$tmp/calls6 OUT=$tmp/out6 GPU_CHECK_BUDGET=60 GPU_DEV_DIR=$tmp/nodev \
  PYTHON=$tmp/python-cuda PATH=$tmp/smi-fails:$PATH bash "$tree/tools/gpu-check.sh" "$build4" \
  > "$tmp/cuda.txt" 2>&1
rc=$?
grep -q "GPU found by CUDA: 1 GPU(s) by cuDeviceGetCount" "$tmp/cuda.txt" ||
  fail "CUDA probe: the GPU not found by it: $(cat "$tmp/cuda.txt")"
grep -q "source files match the tree" "$tmp/cuda.txt" || fail "matching bundle: not accepted: $(cat "$tmp/cuda.txt")"
git -C "$tree" -c user.name=test -c user.email=test@example.invalid commit -q --allow-empty -m later
FAKE_CALLS=$tmp/calls6 OUT=$tmp/out7 GPU_CHECK_BUDGET=1 GPU_DEV_DIR=$tmp/dev5 PYTHON=$tmp/none \
  PATH=$tmp/smi-fails:$PATH bash "$tree/tools/gpu-check.sh" "$build4" > "$tmp/later.txt" 2>&1
grep -q "bundle built from commit $commit (1 commit older than the tree's)" "$tmp/later.txt" ||
  fail "bundle one commit behind: not said: $(cat "$tmp/later.txt")"
grep -q "^test-gpu-modes: 2 passed, 1 failed" "$tmp/cuda.txt" ||
  fail "matching bundle: test-gpu-modes did not run: $(cat "$tmp/cuda.txt")"
grep -q "tach-cli run .*--rnn fused.* cudnn=3" "$tmp/calls6" ||
  fail "smoke run: cuDNN's log not at level 3: $(cat "$tmp/calls6")"
grep -q "tach-cli run .*--preset tuned .*cudnn=off" "$tmp/calls6" || fail "timed runs: none ran: $(cat "$tmp/calls6")"
if grep "tach-cli run .*--preset" "$tmp/calls6" | grep -v -q "cudnn=off"; then
  fail "timed runs: cuDNN's log on: $(grep -- --preset "$tmp/calls6" | grep -v cudnn=off)"
fi
echo "ok 9 a GPU by the CUDA driver alone; a matching bundle runs, timed runs without cuDNN's log (exit $rc)"

