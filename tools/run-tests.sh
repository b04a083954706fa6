#!/bin/sh
# Builds Tach and runs the whole test suite twice: a normal build (with the
# CUDA backend when nvcc is present; GPU tests report "skipped" without a
# GPU) and an ASan + UBSan build without CUDA; then the engine-thread tests
# under ThreadSanitizer, and each libFuzzer
# harness of tests/fuzz for a bounded time (TACH_FUZZ_SECONDS, 30 by
# default) in a clang build.
set -eu
cd "$(dirname "$0")/.."

tools/install-deps.sh

setup () {
  dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@"
  else
    meson setup "$dir" "$@"
  fi
}

export GTK_A11Y=none
# LeakSanitizer reports GTK's and OpenMP's process-lifetime caches; leaks
# are checked by the engine's own lifecycle tests instead.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

status=0
setup build-tests
meson compile -C build-tests
meson test -C build-tests --print-errorlogs --num-processes 2 || status=1

setup build-asan -Dcuda=disabled -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-asan
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1

# ThreadSanitizer (clang) over the tests that run the engine thread beside
# the main thread: runs, stop, failures, the CLI's runs and sweeps, and the
# window's runs, stop, close mid-run, compare, export and failures; and the
# CPU backend's helper thread, which runs generation's products ahead
# (test-cpu-frozen), and the waits that sleep for a late partner
# (test-cpu-threads).  OpenMP runs one
# thread (OMP_THREAD_LIMIT=1; libgomp is not instrumented, and the feeder
# test that needs two threads is skipped); GLib's locks and GTask are
# annotated by tests/tsan/tach-tsan-glib.c, GLib's slice allocator is off, and
# accesses inside uninstrumented libraries are not checked.  No suppressions.
# The Explain view is left out: its worker hands progress to the main
# thread through an idle source, whose GMainContext lock is not annotated.
CC=clang setup build-tsan -Dcuda=disabled -Db_sanitize=thread -Db_lundef=false
meson compile -C build-tsan
tsan_env="G_SLICE=always-malloc OMP_THREAD_LIMIT=1 GSK_RENDERER=cairo
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"
# shellcheck disable=SC2086
env $tsan_env meson test -C build-tsan --print-errorlogs --num-processes 2 \
  --timeout-multiplier 4 --test-args '-s /engine/feeder/threads' \
  test-run test-fault test-fault-cli test-csv test-cpu-frozen test-cpu-threads || status=1
# shellcheck disable=SC2086
env $tsan_env meson test -C build-tsan --print-errorlogs --num-processes 1 \
  --timeout-multiplier 4 --logbase testlog-gui \
  --test-args '-p /gui/compare -s /gui/compare/explain -p /gui/close-stops-run -p /gui/run/export -p /gui/run/error -p /gui/run/fault' \
  test-gui || status=1

# The fuzzers, on clang's libFuzzer with ASan + UBSan.  New inputs go to a
# scratch folder (the seeds in tests/fuzz stay as they are); the parsers'
# own output is closed (libFuzzer keeps a copy of stderr for its reports,
# and the sanitizers' reports go there too); a crash leaves
# its input as build-fuzz/crash-NAME-*, to be added to tests/fuzz/NAME as a
# regression case of the normal suite.
fuzzers="fuzz-idx fuzz-corpus fuzz-csv fuzz-results fuzz-settings fuzz-cli"
fuzz_failed=""
CC=clang setup build-fuzz -Dfuzzing=true -Dgui=disabled -Dcuda=disabled \
  -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-fuzz $fuzzers
for f in $fuzzers; do
  scratch=build-fuzz/corpus-$f
  mkdir -p "$scratch"
  echo "fuzzing $f for ${TACH_FUZZ_SECONDS:-30} s" >&2
  # Files go to a tmpfs where there is one: the CSV harness syncs each write.
  TMPDIR=$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}") \
  ASAN_OPTIONS=abort_on_error=1 \
    "build-fuzz/tests/fuzz/$f" -max_total_time="${TACH_FUZZ_SECONDS:-30}" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 -close_fd_mask=3 \
      -artifact_prefix="build-fuzz/crash-$f-" "$scratch" "tests/fuzz/$f" \
      >"build-fuzz/$f.log" 2>&1 || { fuzz_failed="$fuzz_failed $f"; tail -40 "build-fuzz/$f.log"; }
  grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "build-fuzz/$f.log" | tail -1 >&2 || true
done
if [ -n "$fuzz_failed" ]; then
  echo "fuzzers that failed:$fuzz_failed (inputs in build-fuzz/crash-*)" >&2
  status=1
fi

# The tests that failed, by build, with their last lines, then one closing
# line over the builds, both read from meson's own logs.
logs="build-tests/meson-logs/testlog.json build-asan/meson-logs/testlog.json
  build-tsan/meson-logs/testlog.json build-tsan/meson-logs/testlog-gui.json"
# shellcheck disable=SC2086
python3 tools/failed-tests.py $logs
# shellcheck disable=SC2086
cat $logs |
  sed -n 's/.*"result": "\([A-Z]*\)".*/\1/p' |
  awk '/^OK$|^EXPECTEDFAIL$/ {p++} /^SKIP$/ {s++} /^FAIL$|^TIMEOUT$|^ERROR$|^UNEXPECTEDPASS$/ {f++}
       END {printf "%d passed, %d failed, %d skipped\n", p, f, s}'
exit $status
