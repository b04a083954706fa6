#!/bin/sh
# verdict-trial.sh: issue 33's acceptance trial: do Tach's verdicts hold on
# a busy machine?
#
# Runs, N times each, on the machine idle and then with one process
# spinning (bench/busy.sh, as run-cpu.sh --busy 1 does it; the two loads
# alternate rep by rep, so that a slow drift of the machine falls on both):
#   explain-bilstm  tach-cli explain --workload bilstm --from tf1-feed-dict
#                   --to tuned --batch 1024 --steps 30 (the README's)
#   explain-cnn     tach-cli explain --workload cnn --from keras-fit --to estimator
#   sweep-WORKLOAD  tach-cli sweep --workload WORKLOAD --presets all, for the
#                   bilstm, lstm-lm and cnn
# each with --csv into a folder of its own, and tallies the verdicts from
# what the CLI wrote: explain.csv's speed-up of B over A and each knob's
# share (its `verdict` column), and each sweep speed-up against the first
# preset (the `~` of the sweep table).  It prints, per case and load, how
# many verdicts were significant and how many within noise (~), and how
# many significant ones contradicted the idle machine's: a significant
# verdict of the other sign (a ratio on the other side of 1, a share of the
# other sign) than the idle reps' significant verdicts on the same
# comparison, by majority; then each contradiction, to rerun alone.
#
# Usage: bench/verdict-trial.sh [--reps N] [--budget SECONDS] [--steps N]
#                               [--cases LIST] [--loads LIST] [--out DIR]
#   --reps N          runs of each case under each load (default 5)
#   --budget SECONDS  tach-cli's --budget for every command (default: its own,
#                     45 s); 0 runs the minimum 3 rounds only
#   --steps N         every command's --steps (default: each case's own)
#   --cases LIST      comma-separated, of the cases above (default: all five)
#   --loads LIST      idle, busy or both (default idle,busy)
#   --out DIR         keep every command's output and CSV there (default: a
#                     new temporary folder)
#   --tally DIR       only tally the folder of an earlier trial
# Environment: TACH_CLI (default build/app/tach-cli).  The full trial (5
# reps, every case, both loads) takes about an hour on a 2-core machine.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cli=${TACH_CLI:-$root/build/app/tach-cli}
reps=5
budget=
steps=
cases="explain-bilstm,explain-cnn,sweep-bilstm,sweep-lstm-lm,sweep-cnn"
loads="idle,busy"
out=
tally_only=

usage_error () {
  echo "verdict-trial.sh: $1" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) ;;
    *) [ $# -ge 2 ] || usage_error "$1 needs a value (try --help)" ;;
  esac
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --loads) loads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tally) tally_only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1' (try --help)" ;;
  esac
done

case $reps in
  ''|0|*[!0-9]*) usage_error "--reps takes a number of runs, 1 or more, not '$reps'" ;;
esac
case $budget in
  *[!0-9.]*) usage_error "--budget takes seconds (0 or more), not '$budget'" ;;
esac
case $steps in
  *[!0-9]*) usage_error "--steps takes a number of steps, not '$steps'" ;;
esac
for case in $(echo "$cases" | tr ',' ' '); do
  case $case in
    explain-bilstm|explain-cnn|sweep-bilstm|sweep-lstm-lm|sweep-cnn) ;;
    *) usage_error "unknown case '$case': give explain-bilstm, explain-cnn, sweep-bilstm, sweep-lstm-lm or sweep-cnn" ;;
  esac
done
for load in $(echo "$loads" | tr ',' ' '); do
  case $load in
    idle|busy) ;;
    *) usage_error "--loads takes idle, busy or both, not '$load'" ;;
  esac
done

# The tally: every folder's verdicts, by case, comparison and load.
tally () {
  python3 - "$1" <<'PYEOF'
import csv
import os
import re
import sys

top = sys.argv[1]
# "~1.21x (0.21–6.80)*": the sweep table's speed-up against the first preset.
SPEEDUP = re.compile(r"\s(~?)(\d+\.\d+)x \((\d+\.\d+)–(\d+\.\d+)\)\*?(\s+\(stopped\))?$")

def sweep_verdicts(folder):
    """(comparison, sign, significant) for each preset after the first."""
    found = []
    try:
        text = open(os.path.join(folder, "stdout.txt"), encoding="utf-8").read()
    except OSError:
        return found
    in_table = False
    for line in text.splitlines():
        if line.startswith("preset ") and "speed-up" in line:
            in_table = True
            continue
        if not in_table or not line.strip():
            if in_table:
                break
            continue
        m = SPEEDUP.search(line)
        if m:
            value = float(m.group(2))
            found.append((line.split()[0], 1 if value > 1 else -1, m.group(1) != "~"))
    return found

def explain_verdicts(folder):
    found = []
    try:
        rows = list(csv.DictReader(open(os.path.join(folder, "explain.csv"), encoding="utf-8")))
    except OSError:
        return found
    for row in rows:
        if row["verdict"] not in ("significant", "within-noise"):
            continue
        if row["row"] == "to":
            found.append(("speed-up", 1 if float(row["speedup"]) > 1 else -1,
                          row["verdict"] == "significant"))
        elif row["row"] == "knob":
            found.append(("share " + row["knob"], 1 if float(row["share_ms"]) > 0 else -1,
                          row["verdict"] == "significant"))
    return found

def machine_busy(folder):
    try:
        rows = list(csv.DictReader(open(os.path.join(folder, "runs.csv"), encoding="utf-8")))
    except OSError:
        return []
    return [float(r["machine_busy"]) for r in rows if r.get("machine_busy")]

# verdicts[(case, comparison)][load] = [(rep, sign, significant)]
verdicts = {}
busy = {}
failed = []
for load in sorted(os.listdir(top)):
    if load not in ("idle", "busy"):
        continue
    for name in sorted(os.listdir(os.path.join(top, load))):
        folder = os.path.join(top, load, name)
        case, _, rep = name.rpartition("-rep")
        got = explain_verdicts(folder) if case.startswith("explain") else sweep_verdicts(folder)
        if not got:
            failed.append(f"{load}/{name}")
        busy.setdefault(load, []).extend(machine_busy(folder))
        for comparison, sign, significant in got:
            verdicts.setdefault((case, comparison), {}).setdefault(load, []).append(
                (rep, sign, significant))

def reference(entries):
    """The idle machine's sign: the majority of its significant verdicts."""
    total = sum(sign for _, sign, significant in entries if significant)
    return 0 if total == 0 else (1 if total > 0 else -1)

table = {}
contradictions = []
for (case, comparison), by_load in sorted(verdicts.items()):
    ref = reference(by_load.get("idle", []))
    for load, entries in by_load.items():
        t = table.setdefault((case, load), [0, 0, 0, 0])
        for rep, sign, significant in entries:
            t[0] += 1
            if significant:
                t[1] += 1
                if ref != 0 and sign != ref:
                    t[3] += 1
                    contradictions.append((case, comparison, load, rep, sign, ref))
            else:
                t[2] += 1

print(f"{'case':<16} {'load':<5} {'verdicts':>8} {'significant':>11} {'~':>4} {'contradicting idle':>18}")
totals = {}
for (case, load), t in sorted(table.items()):
    print(f"{case:<16} {load:<5} {t[0]:>8} {t[1]:>11} {t[2]:>4} {t[3]:>18}")
    s = totals.setdefault(load, [0, 0, 0, 0])
    for i in range(4):
        s[i] += t[i]
for load, t in sorted(totals.items()):
    print(f"{'all':<16} {load:<5} {t[0]:>8} {t[1]:>11} {t[2]:>4} {t[3]:>18}")
for load, values in sorted(busy.items()):
    if values:
        values.sort()
        print(f"machine busy ({load}): median {100 * values[len(values) // 2]:.0f}% of CPU time "
              f"taken by other processes over {len(values)} runs")
print("contradicting: a significant verdict of the other sign than the idle reps' significant "
      "ones (by majority); an idle rep can contradict the idle majority too")
for case, comparison, load, rep, sign, ref in contradictions:
    # A share's "no change" is 0 ms, a ratio's 1x.
    one = "0 ms" if comparison.startswith("share ") else "1x"
    print(f"  {case} rep {rep} ({load}): {comparison} {'>' if sign > 0 else '<'} {one}, "
          f"idle says {'>' if ref > 0 else '<'} {one}: rerun the pair alone, interleaved, "
          f"under the same load")
for name in failed:
    print(f"  {name}: no verdicts (see its stderr.txt)")
PYEOF
}

if [ -n "$tally_only" ]; then
  [ -d "$tally_only" ] || usage_error "--tally $tally_only: no such folder"
  tally "$tally_only"
  exit 0
fi

[ -x "$cli" ] || { echo "verdict-trial.sh: $cli is not built (meson compile -C build)" >&2; exit 1; }
if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/verdict-trial-XXXXXX")
fi
mkdir -p "$out"

. "$here/busy.sh"
trap stop_busy EXIT
trap 'stop_busy; echo "verdict-trial.sh: interrupted; what ran is in $out" >&2; exit 130' INT TERM HUP

# One case's command, its output and CSV into @dir.
run_case () {
  case=$1 dir=$2
  set -- --csv "$dir"
  [ -z "$budget" ] || set -- "$@" --budget "$budget"
  case $case in
    explain-bilstm)
      set -- explain --workload bilstm --from tf1-feed-dict --to tuned --batch 1024 \
        --steps "${steps:-30}" "$@" ;;
    explain-cnn)
      set -- explain --workload cnn --from keras-fit --to estimator ${steps:+--steps "$steps"} "$@" ;;
    sweep-*)
      set -- sweep --workload "${case#sweep-}" --presets all ${steps:+--steps "$steps"} "$@" ;;
  esac
  mkdir -p "$dir"
  echo "$cli $*" >"$dir/command.txt"
  # The tally reads the English table.
  LANGUAGE=C LC_ALL=C.UTF-8 "$cli" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt" \
    || echo "verdict-trial.sh: $case failed (exit $?): see $dir/stderr.txt" >&2
}

echo "verdict-trial: $reps reps of $cases, loads $loads; output in $out"
rep=1
while [ "$rep" -le "$reps" ]; do
  for load in $(echo "$loads" | tr ',' ' '); do
    [ "$load" = busy ] && start_busy 1
    for case in $(echo "$cases" | tr ',' ' '); do
      echo "rep $rep/$reps, $load: $case"
      run_case "$case" "$out/$load/$case-rep$rep"
    done
    if [ "$load" = busy ]; then
      if ! busy_alive; then
        echo "verdict-trial.sh: the spinning process ended before rep $rep's runs did" >&2
        exit 1
      fi
      stop_busy
    fi
  done
  rep=$((rep + 1))
done

tally "$out"
