#!/bin/sh
# Builds Tach and runs the whole test suite twice: a normal build (with the
# CUDA backend when nvcc is present; GPU tests report "skipped" without a
# GPU) and an ASan + UBSan build without CUDA.
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

# One closing line over both builds, counted from meson's own logs.
cat build-tests/meson-logs/testlog.json build-asan/meson-logs/testlog.json |
  sed -n 's/.*"result": "\([A-Z]*\)".*/\1/p' |
  awk '/^OK$|^EXPECTEDFAIL$/ {p++} /^SKIP$/ {s++} /^FAIL$|^TIMEOUT$|^ERROR$|^UNEXPECTEDPASS$/ {f++}
       END {printf "%d passed, %d failed, %d skipped\n", p, f, s}'
exit $status
