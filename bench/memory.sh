#!/bin/sh
# bench/memory.sh: the peak resident memory of long runs, measured with
# /usr/bin/time -v: lstm-lm text generation, one stream (--batch 1), for
# 1M and 10M steps, without and with --csv (whose samples.csv then holds a
# row per step).  Targets (issue 14): under 100 MB at 1M steps and under
# 300 MB at 10M, in the CLI.
#
# Usage: bench/memory.sh [BUILD_DIR] [STEPS...]   (default: build 1000000 10000000)
# It prints one line per case: steps, csv or not, peak RSS in MB, wall time.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
steps=${*:-1000000 10000000}
cli=$build/app/tach-cli
[ -x "$cli" ] || { echo "memory.sh: no $cli: build first (meson compile -C $build)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "memory.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
printf '%-10s %-4s %10s %10s\n' steps csv peak_MB wall_s
for n in $steps; do
  for csv in no yes; do
    extra=""
    if [ "$csv" = yes ]; then rm -rf "$tmp/out"; extra="--csv $tmp/out"; fi
    # shellcheck disable=SC2086
    /usr/bin/time -v "$cli" run --workload lstm-lm --task generate --batch 1 --device cpu \
      --steps "$n" $extra >"$tmp/stdout" 2>"$tmp/time" || { cat "$tmp/time" >&2; exit 1; }
    kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time")
    printf '%-10s %-4s %10.1f %10s\n' "$n" "$csv" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" "$wall"
  done
done
