#!/bin/sh
# bench/memory.sh: the peak resident memory of long runs, measured with
# /usr/bin/time -v: lstm-lm text generation, one stream (--batch 1), for
# 1M and 10M steps, in tach-cli and in the desktop app's window.  Targets
# (issue 14): under 100 MB at 1M steps and under 300 MB at 10M.
#
# tach-cli, three ways per step count: plain; with --csv (samples.csv then
# holds a row per step, streamed to its temporary file as the run goes);
# and with --sync end (every step pending until the one sync at the end).
# After the --csv case, the folder it wrote is opened as the window's
# Results Open does (bench-open: tach_results_load, samples.csv read a
# block at a time into the compact store): the "open" row.
#
# The window: bench-window (built beside the app when the GUI is) opens the
# app's window under xvfb-run, sets the panel and starts the run with the
# window's "run" action, as the GUI tests do, then with "csv" exports the
# finished run with the window's Export CSV.  It draws as the app does by
# default (tach_application_choose_renderer: GSK's cairo renderer, no GL
# opened); "window-gl" measures the same with GSK_RENDERER=gl, what a user
# who asks for GTK's GL renderer gets (under Xvfb: Mesa's llvmpipe).  The
# idle window's own RSS is printed too, so that what the run adds can be
# read off.
#
# Usage: bench/memory.sh [BUILD_DIR] [STEPS...]   (default: build 1000000 10000000)
#   MEMORY_WHERE="cli window" (default) picks what is measured, of
#   cli, window and window-gl.
#   MEMORY_KEEP=DIR keeps each --csv folder the CLI wrote as DIR/STEPS.
# It prints one line per case: where, steps, mode, peak RSS in MB, wall
# time (and, for the window, its idle RSS).  The figures measured, with the
# machine, are in bench/README.md ("Memory of long runs").
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
steps=${*:-1000000 10000000}
where=${MEMORY_WHERE:-cli window}
cli=$build/app/tach-cli
open=$build/bench/bench-open
win=$build/bench/bench-window
[ -x "$cli" ] || { echo "memory.sh: no $cli: build first (meson compile -C $build)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "memory.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
case $where in
  *window*)
    [ -x "$win" ] || { echo "memory.sh: no $win (a build without the GUI?)" >&2; exit 1; }
    command -v xvfb-run >/dev/null || { echo "memory.sh: needs xvfb-run (apt-get install xvfb)" >&2; exit 1; } ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

peak_mb () { awk -v k="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$1")" 'BEGIN { printf "%.1f", k / 1024 }'; }
wall () { sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }
row () { printf '%-9s %-10s %-8s %10s %10s  %s\n' "$@"; }

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  "(family $(lscpu | sed -n 's/^CPU family: *//p' | head -1), model $(lscpu | sed -n 's/^Model: *//p' | head -1))"
row where steps mode peak_MB wall_s notes
for w in $where; do
  for n in $steps; do
    if [ "$w" = cli ]; then
      modes="plain csv sync-end"
    else
      modes="plain csv"
    fi
    for mode in $modes; do
      rm -rf "$tmp/out"
      if [ "$w" = cli ]; then
        extra=""
        [ "$mode" = csv ] && extra="--csv $tmp/out"
        [ "$mode" = sync-end ] && extra="--sync end"
        # shellcheck disable=SC2086
        /usr/bin/time -v -o "$tmp/time" "$cli" run --workload lstm-lm --task generate --batch 1 \
          --device cpu --steps "$n" $extra >"$tmp/stdout" 2>&1 || { cat "$tmp/stdout" "$tmp/time" >&2; exit 1; }
        notes=""
      else
        out=""
        [ "$mode" = csv ] && out="$tmp/out"
        renderer=""
        [ "$w" = window-gl ] && renderer=gl
        # shellcheck disable=SC2086
        env ${renderer:+GSK_RENDERER=$renderer} GSETTINGS_BACKEND=memory \
          GSETTINGS_SCHEMA_DIR="$build/resources" NO_AT_BRIDGE=1 GTK_A11Y=none \
          xvfb-run -a -s '-screen 0 1600x1000x24' \
          /usr/bin/time -v -o "$tmp/time" "$win" "$n" $out >"$tmp/stdout" 2>&1 \
          || { cat "$tmp/stdout" "$tmp/time" >&2; exit 1; }
        notes="idle $(sed -n 's/.*RSS idle \([0-9.]*\) MB.*/\1/p' "$tmp/stdout") MB,"
        notes="$notes $(sed -n 's/.*drawn by \([A-Za-z]*\).*/\1/p' "$tmp/stdout")"
      fi
      if [ "$mode" = csv ]; then
        rows=$(($(wc -l <"$tmp/out/samples.csv") - 1))
        [ "$rows" -eq "$n" ] || { echo "memory.sh: samples.csv has $rows rows, not $n" >&2; exit 1; }
      fi
      row "$w" "$n" "$mode" "$(peak_mb "$tmp/time")" "$(wall "$tmp/time")" "$notes"
      if [ "$w" = cli ] && [ "$mode" = csv ]; then
        if [ -x "$open" ]; then
          /usr/bin/time -v -o "$tmp/time" "$open" "$tmp/out" >"$tmp/stdout" 2>&1 \
            || { cat "$tmp/stdout" "$tmp/time" >&2; exit 1; }
          grep -q "samples $n\$" "$tmp/stdout" || { cat "$tmp/stdout" >&2; exit 1; }
          row open "$n" csv "$(peak_mb "$tmp/time")" "$(wall "$tmp/time")" "tach_results_load"
        fi
        if [ -n "${MEMORY_KEEP:-}" ]; then
          mkdir -p "$MEMORY_KEEP"
          rm -rf "${MEMORY_KEEP:?}/$n"
          mv "$tmp/out" "$MEMORY_KEEP/$n"
        fi
      fi
    done
  done
done
