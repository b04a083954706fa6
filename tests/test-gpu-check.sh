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
#   4. A bundle: refused from a build older than its tree; it records the
#      commit, which the check prints.
#   5. A GPU found without nvidia-smi (a failing one on PATH), by its device
#      node; the bundle's sources no longer those of the tree: refused
#      before any test or run.
#   6. A GPU found by the CUDA driver alone (no node): a bundle that matches
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

# 4. A bundle made in a tree of its own (a git repository holding the check
#    and one source file), from test 3's fake build (its tach-cli logs each
#    call with the cuDNN logging level it was given).
if ! command -v git > /dev/null 2>&1; then
  echo "ok 4 # SKIP no git: the bundle's commit cannot be tested"
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
echo "ok 4 bundle: a stale build refused; the commit and the sources recorded"

# 5. No nvidia-smi that lists a GPU (one on PATH that fails), a device node;
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
echo "ok 5 a GPU by its device node; an older bundle refused in $((t1 - t0)) s, nothing run"

# 6. No node: the CUDA driver counts one GPU (the probe through PYTHON).  The
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
echo "ok 6 a GPU by the CUDA driver alone; a matching bundle runs, timed runs without cuDNN's log (exit $rc)"
