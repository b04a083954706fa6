#!/bin/sh
# test-gpu-check.sh: tools/gpu-check.sh keeps its promises without a GPU.
#   1. No GPU (no nvidia-smi on PATH): "no GPU" and exit 77 within seconds.
#   2. A fake device on which everything hangs (nvidia-smi that lists a
#      GPU, a tach-cli and GPU tests that never return, a Python that
#      hangs): the run keeps to its budget (GPU_CHECK_BUDGET) and still
#      leaves at most 8 files in $OUT (the log and one archive).
#   3. A fast fake device: each GPU test binary runs once, then only the
#      paths that did not pass there, one per process.
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
OUT=$tmp/out1 PATH=$tmp/nogpu-bin bash "$script" "$tmp/none" > "$tmp/nogpu.txt" 2>&1
rc=$?
t1=$(date +%s)
[ "$rc" = 77 ] || fail "no GPU: exit $rc, expected 77: $(cat "$tmp/nogpu.txt")"
grep -q "no GPU" "$tmp/nogpu.txt" || fail "no GPU: the output does not say 'no GPU'"
[ $((t1 - t0)) -le 5 ] || fail "no GPU: took $((t1 - t0)) s"
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
