#!/bin/sh
# test-cli.sh: tach-cli's exit codes, messages and CSV output.
#
# Usage: test-cli.sh PATH/TO/tach-cli
# Exit status: 0 all passed, 77 nothing could be tested, 1 a case failed.
set -u

cli=${1:-}
if [ -z "$cli" ] || [ ! -x "$cli" ]; then
  echo "test-cli.sh: no tach-cli executable given" >&2
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
out=$tmp/output
passed=0
failed=0
skipped=0

pass () { passed=$((passed + 1)); echo "ok   $1"; }
skip () { skipped=$((skipped + 1)); echo "skip $1: $2"; }
fail () {
  failed=$((failed + 1))
  echo "FAIL $1: $2"
  if [ -f "$out" ]; then sed 's/^/     | /' "$out" | head -20; fi
}

# expect NAME RC PATTERN COMMAND...: runs COMMAND (stdout and stderr into
# $out), then checks the exit status and that the output matches the
# extended regular expression PATTERN (skipped when PATTERN is empty).
expect () {
  name=$1; want=$2; pattern=$3; shift 3
  "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name" "exit status $rc, expected $want"
    return 1
  fi
  if [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$out"; then
    fail "$name" "output does not match /$pattern/"
    return 1
  fi
  pass "$name"
  return 0
}

# expect_usage NAME PATTERN ARGS...: a usage or configuration error: exit 2,
# the message, and the hint to try --help.
expect_usage () {
  name=$1; pattern=$2; shift 2
  expect "$name" 2 "$pattern" "$cli" "$@" || return 1
  if ! grep -q "^tach-cli: " "$out" || ! grep -q "Try 'tach-cli --help'" "$out"; then
    passed=$((passed - 1))
    fail "$name" "no 'tach-cli: ' message or no --help hint"
  fi
}

# Counts the data rows of a CSV file whose first field is RUN_ID (every
# samples.csv row is one step; run ids need no quoting).
count_rows () {
  awk -F, -v id="$2" 'NR > 1 && $1 == id { n++ } END { print n + 0 }' "$1"
}

# The run ids in samples.csv, in order of first appearance.
run_ids () {
  awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$1"
}

# Checks that every row of samples.csv has the header's field count and,
# after the run id, only C-locale numbers: a decimal comma would add a field.
# (RFC 4180 lines end in CRLF.)
csv_numbers_ok () {
  awk -F, '{ sub(/\r$/, "") }
           NR == 1 { n = NF; next }
           NF != n { bad = 1 }
           { for (i = 2; i <= NF; i++)
               if ($i !~ /^(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|-?nan|NaN|-?inf|)$/) bad = 1 }
           END { exit bad }' "$1"
}

# ------------------------------------------------------------ information

expect "version" 0 "^tach-cli [0-9]+\.[0-9]+\.[0-9]+" "$cli" --version
expect "help lists knobs with their values" 0 "--rnn" "$cli" --help &&
  for value in "fused \| unrolled" "host-f64 \| host-f32 \| prefetch \| resident" \
               "eager \| graph" "--batch" "--csv DIR" "Exit status"; do
    if ! grep -Eq -- "$value" "$out"; then
      passed=$((passed - 1))
      fail "help lists knobs with their values" "no /$value/ in --help"
      break
    fi
  done
expect "run --help" 0 "--workload" "$cli" run --help
expect "presets" 0 "tuned" "$cli" presets &&
  { grep -q "tf1-feed-dict" "$out" || { passed=$((passed - 1)); fail "presets" "no tf1-feed-dict"; }; }
# Each preset says, knob by knob, which framework code its value stands for.
expect "presets: rationale" 0 "feed=host-f64: Keras 2.2.2" "$cli" presets &&
  { grep -q "sync=1: the Estimator's loop" "$out" || { passed=$((passed - 1)); fail "presets: rationale" "no estimator sync line"; }; }
expect "devices" 0 "^cpu " "$cli" devices
have_gpu=no
if "$cli" devices 2>/dev/null | grep -q "^cuda"; then have_gpu=yes; fi

# ------------------------------------------------------------ bad usage

expect_usage "no command" "missing command"
expect_usage "unknown command" "frobnicate" frobnicate
expect_usage "unknown option" "unknown option '--frobnicate'" run --workload bilstm --frobnicate 1
expect_usage "missing value" "--batch" run --workload bilstm --batch
expect_usage "run without workload" "--workload" run --steps 3
expect_usage "sweep without presets" "--presets" sweep --workload bilstm
expect_usage "batch 0" "batch" run --workload bilstm --device cpu --batch 0
expect_usage "batch -3" "batch.*-3|-3.*batch" run --workload bilstm --device cpu --batch -3
expect_usage "batch abc" "batch.*abc|abc.*batch" run --workload bilstm --device cpu --batch abc
expect_usage "unknown workload" "nosuch.*bilstm" run --workload nosuch
expect_usage "unknown preset" "nosuch" run --workload bilstm --preset nosuch
expect_usage "unknown knob value" "sideways.*fused|fused.*sideways" \
  run --workload bilstm --rnn sideways
expect_usage "launch graph on cpu" "launch.*(cpu|CPU)|(cpu|CPU).*launch" \
  run --workload bilstm --device cpu --launch graph --batch 8 --steps 2 --warmup 0
# (GLib puts a no-break space between a size and its unit.)
expect_usage "huge --samples" "[0-9][^a-zA-Z]{0,3}(bytes|[kMGTPE]i?B)" \
  run --workload bilstm --device cpu --samples 100000000000

if [ "$have_gpu" = yes ]; then
  skip "device cuda without a GPU" "this machine lists a GPU"
else
  expect "device cuda without a GPU" 1 "^tach-cli: .*(cuda|CUDA|GPU)" \
    "$cli" run --workload bilstm --device cuda --steps 2
fi

# An unwritable CSV folder: a path under a regular file cannot be created,
# even by root.  The run must fail before running and write nothing.
echo "not a folder" > "$tmp/file"
if expect "csv into an unwritable folder" 1 "^tach-cli: .*CSV|^tach-cli: .*csv" \
     "$cli" run --workload bilstm --device cpu --batch 8 --steps 2 --warmup 0 \
     --csv "$tmp/file/sub"; then
  if [ "$(cat "$tmp/file")" != "not a folder" ] || [ -e "$tmp/file/sub" ]; then
    passed=$((passed - 1))
    fail "csv into an unwritable folder" "something was written"
  fi
fi

# The trace's path, checked before the run as --csv is: a folder that does
# not exist, and a folder given as the file (they used to fail after the
# run, the second with "g_rename() failed: Is a directory").
for bad in "$tmp/file/t.json" "$tmp"; do
  if expect "run --trace $bad: said before the run" 1 "^tach-cli: Cannot write the trace to '$bad'" \
       "$cli" run --workload bilstm --device cpu --batch 8 --steps 2 --warmup 0 --trace "$bad"; then
    if grep -q "steps" "$out"; then
      passed=$((passed - 1))
      fail "run --trace $bad: said before the run" "it ran before saying so"
    fi
  fi
done

# ------------------------------------------------------------ real runs

csv=$tmp/csv
run_short () {
  "$cli" run --workload bilstm --device cpu --batch 16 --steps 6 --warmup 0 \
    --threads 1 --csv "$csv" "$@"
}

if expect "short run with --csv" 0 "steps/s +[0-9]+\.[0-9]+ median" run_short; then
  ids=$(run_ids "$csv/samples.csv")
  first=$(echo "$ids" | head -1)
  rows=$(count_rows "$csv/samples.csv" "$first")
  runs=$(($(wc -l < "$csv/runs.csv") - 1))
  # The data it read: named in the summary and in runs.csv (whose rows end
  # with data_source, data_path and label, then the threads, gpt's seven
  # figures and the four of what the parameters hold).
  source=$(sed -n 2p "$csv/runs.csv" | tr -d '\r' | awk -F, '{ print $(NF - 16) "|" $(NF - 15) }')
  if grep -q "^  data         synthetic sequences$" "$out" &&
     head -1 "$csv/runs.csv" | grep -q ",data_source,data_path,label,threads_had,threads_fewest,threads_fewer_share,prefill_ms,decode_tokens_per_s,param_bytes,optimizer_bytes,activation_bytes,kv_cache_bytes,packed_weight_bytes,held_param_bytes,held_grad_bytes,held_state_bytes,held_peak_bytes.$" &&
     [ "$source" = "synthetic sequences|" ]; then
    pass "the data read is named in the summary and runs.csv"
  else
    fail "the data read is named in the summary and runs.csv" "runs.csv says '$source'"
  fi
  if [ "$rows" -eq 6 ] && [ "$runs" -eq 1 ]; then
    pass "samples.csv has one row per step"
  else
    fail "samples.csv has one row per step" "$rows sample rows (expected 6), $runs runs (expected 1)"
  fi

  if expect "second run appends" 0 "" run_short --seed 7; then
    ids=$(run_ids "$csv/samples.csv")
    second=$(echo "$ids" | sed -n 2p)
    runs=$(($(wc -l < "$csv/runs.csv") - 1))
    if [ "$(count_rows "$csv/samples.csv" "$first")" -eq 6 ] && [ -n "$second" ] &&
       [ "$second" != "$first" ] && [ "$(count_rows "$csv/samples.csv" "$second")" -eq 6 ] &&
       [ "$runs" -eq 2 ]; then
      pass "appending keeps the first run"
    else
      fail "appending keeps the first run" "run ids: $(echo $ids); $runs runs"
    fi
  fi

  if csv_numbers_ok "$csv/samples.csv"; then
    pass "samples.csv numbers in the C locale"
  else
    fail "samples.csv numbers in the C locale" "a row has a bad field"
  fi

  # A row with a stray quote: nothing runs and nothing is appended after
  # it (other readers would read the new rows into it); the message names
  # the file, the line and the repair.
  cp "$csv/runs.csv" "$tmp/runs.good"
  printf '"stray quote,1\r\n' >> "$csv/runs.csv"
  cp "$csv/runs.csv" "$tmp/runs.bad"
  bad_line=$(($(wc -l < "$tmp/runs.bad")))
  if expect "a malformed runs.csv is not appended to" 1 \
       "^tach-cli: $csv/runs.csv:$bad_line: a malformed row .*repair or delete that line" \
       run_short --seed 9; then
    if ! cmp -s "$csv/runs.csv" "$tmp/runs.bad" || grep -q "steps/s" "$out"; then
      passed=$((passed - 1))
      fail "a malformed runs.csv is not appended to" "the file changed, or the run ran"
    fi
  fi
  cp "$tmp/runs.good" "$csv/runs.csv"
fi

# --threads changes a run's speed, never its numbers: one and two threads
# give the same per-step losses (samples.csv's loss column, as written)
# and the same generated text, training and generation alike.
for task in "train --batch 256 --steps 4" "generate --batch 1 --steps 200 --print-text"; do
  name="lstm-lm $task: --threads 1 and 2 give the same losses"
  for t in 1 2; do
    rm -rf "$tmp/threads$t"
    # shellcheck disable=SC2086
    "$cli" run --workload lstm-lm --task $task --device cpu --warmup 0 --seed 3 \
      --threads $t --csv "$tmp/threads$t" >"$tmp/threads$t.out" 2>&1
  done
  losses1=$(cut -d, -f10 "$tmp/threads1/samples.csv" 2>/dev/null)
  losses2=$(cut -d, -f10 "$tmp/threads2/samples.csv" 2>/dev/null)
  text1=$(grep "^  text " "$tmp/threads1.out")
  text2=$(grep "^  text " "$tmp/threads2.out")
  if [ -n "$losses1" ] && [ "$losses1" = "$losses2" ] && [ "$text1" = "$text2" ]; then
    pass "$name"
  else
    fail "$name" "losses or text differ: $tmp/threads1.out, $tmp/threads2.out"
  fi
done

# A locale with a decimal comma: use de_DE.UTF-8, or build it here when the
# system has the definition but not the compiled locale.
locale_env=
if locale -a 2>/dev/null | grep -Eiq '^de_DE\.utf-?8$'; then
  locale_env="LC_ALL=de_DE.UTF-8"
elif command -v localedef >/dev/null 2>&1 && [ -f /usr/share/i18n/locales/de_DE ] &&
     mkdir -p "$tmp/locales" &&
     localedef -i de_DE -f UTF-8 "$tmp/locales/de_DE.UTF-8" >/dev/null 2>&1; then
  locale_env="LOCPATH=$tmp/locales LC_ALL=de_DE.UTF-8"
fi
if [ -z "$locale_env" ]; then
  skip "numbers under de_DE.UTF-8" "no de_DE locale"
elif [ "$(env $locale_env printf '%.1f' 1.5 2>/dev/null)" != "1,5" ]; then
  skip "numbers under de_DE.UTF-8" "the de_DE locale did not load"
else
  rm -rf "$csv"
  if expect "numbers under de_DE.UTF-8" 0 "steps/s +[0-9]+\.[0-9]+ median" \
       env $locale_env "$cli" run --workload bilstm --device cpu --batch 16 --steps 6 \
       --warmup 0 --threads 1 --csv "$csv"; then
    if ! csv_numbers_ok "$csv/samples.csv" || grep -Eq '[0-9],[0-9]+ ?(%|s\b|GFLOP)' "$out"; then
      passed=$((passed - 1))
      fail "numbers under de_DE.UTF-8" "a decimal comma in the CSV or the summary"
    fi
  fi
fi

# A sweep's progress lines count through each round (shuffled), not the
# presets' places in the list: 1/3, 2/3, 3/3 in every round (issue 42).
if expect "sweep progress counts through the round" 0 "" \
     "$cli" sweep --workload bilstm --presets tf1-constant,tf1-feed-dict,tuned --device cpu \
     --batch 8 --steps 2 --warmup 0 --threads 1 --rounds 2 --budget 0; then
  seen=$(grep -Eo "done \([0-9]+/[0-9]+\)" "$out" | tr '\n' ' ')
  if [ "$seen" != "done (1/3) done (2/3) done (3/3) done (1/3) done (2/3) done (3/3) " ]; then
    passed=$((passed - 1))
    fail "sweep progress counts through the round" "progress: $seen"
  fi
fi

# The expected time is said before the rounds run on (issue 42): after
# the first run, an estimate for the given rounds, then what the budget
# adds at the most; before the table.  Its form, not its figures.
dur='([0-9]+\.[0-9] s|[0-9]+ s|[0-9]+ min [0-9]+ s|[0-9]+ h [0-9]+ min)'
if expect "sweep says the expected time" 0 \
     "^  about $dur for the 2 given rounds \(4 runs, each estimated as long as the first, $dur\), then at most 1\.0 s more\$" \
     "$cli" sweep --workload bilstm --presets tf1-constant,tuned --device cpu \
     --batch 8 --steps 2 --warmup 0 --threads 1 --rounds 2 --budget 1; then
  at=$(grep -n "^  about " "$out" | cut -d: -f1)
  table=$(grep -n "^preset " "$out" | cut -d: -f1)
  if [ "$(grep -c "^  about " "$out")" -ne 1 ] || [ -z "$table" ] || [ "$at" -ge "$table" ]; then
    passed=$((passed - 1))
    fail "sweep says the expected time" "once, before the table: line $at, table at ${table:-none}"
  fi
fi

# A sweep with a bad preset is bad input: the message names it and the
# valid ones, nothing runs (no table, no row "invalid (see above)").
for presets in nosuch tuned,nosuch; do
  if expect_usage "sweep refuses --presets $presets" \
       "invalid value 'nosuch' for --preset: expected one of tf1-feed-dict, tf1-constant, keras-fit, horovod-no-overlap, horovod, ddp, ddp-accumulate, ddp-no-sync, zero2, fsdp, tuned" \
       sweep --workload bilstm --presets "$presets" --device cpu \
       --batch 16 --steps 4 --warmup 0 --threads 1; then
    if grep -Eq "see above|^tuned |steps/s" "$out"; then
      passed=$((passed - 1))
      fail "sweep refuses --presets $presets" "a run or a table after the error"
    fi
  fi
done
expect_usage "sweep --vary refuses a bad preset" "invalid value 'nosuch' for --preset" \
  sweep --workload cnn --presets nosuch --vary batch=8,16

# The fix a validation error names is printed in the command line's words
# (the engine's hint for it is tested in test-hints).
expect_usage "memory error names --head gap" \
  "needs .* of host memory; this machine has .*: use --head gap" \
  run --workload cnn --device cpu --input 1080x1920x3 --head flatten --batch 256
expect_usage "layout misread names its fix" "use --layout batch-major" \
  run --workload cnn --device cpu --layout misread

# sweep --vary: the grid of presets x values, interleaved; the varied knob
# and its value in their own runs.csv columns; speed-up per value.
expect_usage "--vary belongs to sweep" "sweep" run --workload bilstm --vary batch=8,16
expect_usage "--vary with a bad range" "invalid --vary 'batch=64..16x2'" \
  sweep --workload bilstm --presets tuned --vary batch=64..16x2
expect_usage "--vary with an unknown knob" "no knob 'nosuch'" \
  sweep --workload bilstm --presets tuned --vary nosuch=1,2
expect_usage "--vary with a bad value" "--hidden" \
  sweep --workload bilstm --presets tuned --vary hidden=8,x
# A count of ranks this process cannot run alone: said once, before any
# round (it was said at every round's failed run, then exit 2).
if expect "sweep --vary ranks=1,2 alone: exit 2, checked up front" 2 "points will not run" \
     "$cli" sweep --device cpu --threads 1 --workload bilstm --presets tuned \
     --vary ranks=1,2 --batch 4 --steps 2 --rounds 3 --budget 0; then
  said=$(grep -c "this process runs alone" "$out")
  if [ "$said" -eq 1 ] && grep -q "will not run (see above)" "$out"; then
    pass "sweep --vary ranks=1,2 alone: said once"
  else
    fail "sweep --vary ranks=1,2 alone: said once" "said $said times"
  fi
fi
sw=$tmp/vary
if expect "sweep --vary hidden" 0 "^hidden +preset +samples/s +step ms" \
     "$cli" sweep --workload bilstm --presets tf1-constant,tuned --vary hidden=4..8x2 \
     --device cpu --batch 8 --steps 4 --warmup 0 --threads 1 --rounds 1 --budget 0 --csv "$sw"; then
  # (runs.csv ends with the varied knob and its value, how busy the
  # machine was, then eval_s, the data read, the label, the threads
  # the CPU run had and kept, gpt's seven figures, empty here, and
  # the four of what the parameters hold.)
  cols=$(grep -Eo ',hidden,[0-9]+,[0-9.e-]*,,[^,]*,,[^,]*,1,1,[0-9.e-]+,,,,,,,,[0-9]+,[0-9]+,[0-9]+,[0-9]+.$' "$sw/runs.csv" | sed -E 's/^(,hidden,[0-9]+),.*/\1/' | sort | tr '\n' ' ')
  if head -1 "$sw/runs.csv" | grep -q ",varied,varied_value,machine_busy,eval_s,data_source,data_path,label,threads_had,threads_fewest,threads_fewer_share,prefill_ms,decode_tokens_per_s,param_bytes,optimizer_bytes,activation_bytes,kv_cache_bytes,packed_weight_bytes,held_param_bytes,held_grad_bytes,held_state_bytes,held_peak_bytes.$" &&
     [ "$(grep -c "^[^,]*,[^,]*,bilstm,train,cpu,.*,tf1-constant," "$sw/runs.csv")" -eq 2 ] &&
     [ "$cols" = ",hidden,4 ,hidden,4 ,hidden,8 ,hidden,8 " ] &&
     grep -Eq "^4 +tf1-constant .* 1\.00x$" "$out" &&
     grep -Eq "^8 +tuned .*[0-9]\.[0-9]{2}x( \((–|[0-9.]+–[0-9.]+)\))?$" "$out" &&
     grep -q "preset tuned, hidden=8 done" "$out"; then
    pass "sweep --vary: one row per point, the varied columns in runs.csv"
  else
    fail "sweep --vary: one row per point, the varied columns in runs.csv" "runs.csv: $cols"
  fi
fi
# sweep --presets in rounds: every preset once a round (runs.csv holds
# each), the speed-ups paired by round with their intervals.
sr=$tmp/rounds
if expect "sweep in rounds" 0 "paired by round over 2 interleaved rounds" \
     "$cli" sweep --workload bilstm --presets tf1-constant,tuned --device cpu --batch 8 \
     --steps 12 --warmup 1 --threads 1 --rounds 2 --budget 0 --csv "$sr"; then
  if [ "$(grep -c ",tf1-constant," "$sr/runs.csv")" -eq 2 ] &&
     [ "$(grep -c ",tuned," "$sr/runs.csv")" -eq 2 ] &&
     grep -Eq "^tuned .* ~?[0-9]+\.[0-9]{2}x \([0-9.]+–[0-9.]+\)$" "$out"; then
    pass "sweep in rounds: two runs a preset, a paired interval"
  else
    fail "sweep in rounds: two runs a preset, a paired interval" "$(grep -c ",tuned," "$sr/runs.csv") tuned runs"
  fi
fi
# A point that does not fit is named before anything runs; the rest run.
if expect "sweep --vary lists the points that will not fit" 2 \
     "2 of 4 points will not run" \
     "$cli" sweep --workload bilstm --presets tf1-constant,tuned --vary hidden=4,60000 \
     --device cpu --batch 8 --steps 4 --warmup 0 --threads 1 --rounds 1 --budget 0; then
  if ! grep -Eq "^  tuned hidden=60000: --hidden 60000 with --batch 8 needs .* memory" "$out" ||
     ! grep -Eq "^60000 +tuned +will not run" "$out" || ! grep -Eq "^4 +tuned .*x( \(.*\))?$" "$out" ||
     # One round of 4 steps: a speed-up without an interval says why.
     ! grep -q "^(–): no interval: a single round gives nothing to pair" "$out"; then
    passed=$((passed - 1))
    fail "sweep --vary lists the points that will not fit" "no list, or the other points did not run"
  fi
fi

# Ctrl+C stops the run cleanly and still writes what ran; SIGTERM (kill,
# timeout) and SIGHUP (the terminal closed) do the same, each with its own
# exit status, 128 + the signal's number.  (GLib installs its handlers
# itself, so the signal reaches it even though a non-interactive shell
# starts background jobs with SIGINT ignored.)
stop_signal () {
  sig=$1; want=$2
  name="SIG$sig stops the run and writes the CSV"
  intr=$tmp/stopped-$sig
  # Emptied here, not only by the redirection in the child: the wait below
  # must not read the last command's progress lines and signal this one
  # while it is still being set up.
  : >"$out"
  "$cli" run --workload bilstm --device cpu --batch 8 --steps 10000000 --warmup 0 \
    --threads 1 --progress --csv "$intr" >"$out" 2>&1 &
  pid=$!
  # Signalled once its progress lines show steps run, however long set-up
  # takes on a loaded machine (a fixed sleep could signal it before its
  # first step, with no rows to write).  The waits are bounds on a hang.
  waited=0
  while ! grep -q '^tach-progress .* step=[1-9]' "$out" && kill -0 "$pid" 2>/dev/null &&
        [ "$waited" -lt 1200 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -"$sig" "$pid" 2>/dev/null
  waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 120 ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    # What the kernel says of it: its state, and the signals it blocks,
    # has pending and ignores (a hex mask each).
    why=$(grep -E '^(State|SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt|Threads):' "/proc/$pid/status" 2>/dev/null |
          tr '\t\n' '  ')
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    fail "$name" "still running 120 s after SIG$sig ($why)"
    return
  fi
  wait "$pid"
  rc=$?
  id=$(run_ids "$intr/samples.csv" 2>/dev/null | head -1)
  if [ "$rc" -eq "$want" ] && [ -n "$id" ] && [ "$(count_rows "$intr/samples.csv" "$id")" -gt 0 ] &&
     [ "$(($(wc -l < "$intr/runs.csv") - 1))" -eq 1 ] && grep -q "stopped after" "$out" &&
     [ "$(find "$intr" -name '.*' -type f | wc -l)" -eq 0 ]; then
    pass "$name"
  else
    fail "$name" "exit status $rc (expected $want), CSV run id '$id'"
  fi
}
stop_signal INT 130
stop_signal TERM 143
stop_signal HUP 129

# ------------------------------------------------------------ explain

expect_usage "explain without --to" "--from and --to" explain --workload bilstm --from tuned
expect_usage "explain with 2 rounds" "invalid value '2' for --rounds: expected a whole number from 3 to 1000" \
  explain --workload bilstm --device cpu --from tf1-feed-dict --to tuned --rounds 2
# --rounds 0 is refused with the range its command takes: sweep and run
# --scaling take one pass (issue 42: "from 3" while 1 and 2 ran).
expect_usage "sweep with 0 rounds" "invalid value '0' for --rounds: expected a whole number from 1 to 1000" \
  sweep --workload bilstm --device cpu --presets tf1-constant,tuned --rounds 0
expect_usage "run --scaling with 0 rounds" "invalid value '0' for --rounds: expected a whole number from 1 to 1000" \
  run --workload bilstm --device cpu --scaling --rounds 0
expect_usage "explain between equal configurations" "nothing to explain" \
  explain --workload bilstm --device cpu --from tuned --to "feed=resident sync=end"
expect_usage "explain with an unknown preset" "nosuch" \
  explain --workload bilstm --device cpu --from nosuch --to tuned
expect_usage "--from belongs to explain" "explain" run --workload bilstm --from tuned
expect_usage "explain with a negative budget" "invalid value '-1' for --budget" \
  explain --workload bilstm --device cpu --from tf1-feed-dict --to tuned --budget -1
expect_usage "explain with a target of 0" "invalid value '0' for --target" \
  explain --workload bilstm --device cpu --from tf1-feed-dict --to tuned --target 0
expect_usage "--budget belongs to explain and sweep" "explain. and .sweep" run --workload bilstm --budget 5

# The CPU's LSTM runs in fp32 only: bf16 on an LSTM workload is refused
# before the run (it failed after the header on a CPU with AVX-512 BF16).
for w in bilstm lstm-lm; do
  if expect_usage "$w --precision bf16 is refused before the run" \
       "^tach-cli: --precision bf16 is not supported on cpu.*use --precision fp32" \
       run --workload "$w" --device cpu --precision bf16 --steps 2 --threads 1; then
    if grep -q " on cpu (" "$out"; then
      passed=$((passed - 1))
      fail "$w --precision bf16 is refused before the run" "the run's header came first"
    fi
  fi
done

# B cannot run on the CPU: refused before anything runs, saying why.  (It
# used to hang when the refusal came before the main loop ran.)
expect "explain refuses what cannot run" 2 "B cannot run: .*fp16" \
  timeout 60 "$cli" explain --workload bilstm --device cpu --batch 8 --steps 4 \
  --from tf1-feed-dict --to "layout=batch-major feed=resident precision=fp16"

# Two knobs on a tiny bilstm: 4 configurations x 3 rounds (no budget for
# more), the table, the sum check, the verdict, explain.csv beside runs.csv
# (every measured run in it).
ex=$tmp/explain
if expect "explain two knobs" 0 "^  Layout +misread -> batch-major +[-+][0-9]+\.[0-9]+ " \
     "$cli" explain --workload bilstm --device cpu --batch 8 --steps 4 --warmup 1 --threads 1 \
     --from tf1-feed-dict --to "layout=batch-major feed=resident sync=1" --budget 0 --csv "$ex"; then
  # The expected time, without a budget's "then at most" (issue 42).
  if ! grep -Eq "^  about $dur for the 3 given rounds \(12 runs, each estimated as long as the first, $dur\)\$" "$out"; then
    fail "explain says the expected time" "$(grep "about" "$out")"
  else
    pass "explain says the expected time"
  fi
  runs=$(($(wc -l < "$ex/runs.csv") - 1))
  # The shares of explain.csv sum to B's step time minus A's.
  sum_ok=$(awk -F, '{ sub(/\r$/, "") }
                    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
                    $col["row"] == "from" { a = $col["step_ms"] }
                    $col["row"] == "to" { b = $col["step_ms"] }
                    $col["row"] == "knob" { s += $col["share_ms"]; k++ }
                    END { d = s - (b - a); if (d < 0) d = -d;
                          print (k == 2 && d < 1e-6 * (1 + b) ? "yes" : "no") }' "$ex/explain.csv")
  # Each run is named by what it is (runs.csv's label column): A's preset,
  # A with one of B's knobs, and B's settings, 3 rounds each.
  labels=$(tr -d '\r' < "$ex/runs.csv" | awk -F, 'NR > 1 { print $(NF - 14) }' | sort | uniq -c |
           awk '{ $1 = $1 ":"; print }' | tr '\n' '|')
  if [ "$labels" != "3: layout=batch-major feed=resident sync=1|3: tf1-feed-dict|3: tf1-feed-dict + feed=resident|3: tf1-feed-dict + layout=batch-major|" ]; then
    fail "explain's runs are named by what they are" "labels: $labels"
  else
    pass "explain's runs are named by what they are"
  fi
  if [ "$runs" -eq 12 ] && [ "$sum_ok" = yes ] && grep -q "within the spread" "$out" &&
     grep -Eq "^verdict: .*(significant|within noise)" "$out" &&
     grep -q "^  Feeding .*host-f64 -> resident" "$out" && grep -q "changes results" "$out" &&
     csv_numbers_ok "$ex/samples.csv"; then
    pass "explain.csv sums to the gap, runs.csv holds every run"
  else
    fail "explain.csv sums to the gap, runs.csv holds every run" "$runs runs (expected 12), sum ok: $sum_ok"
  fi
fi

# An explain.csv whose second row starts with NUL bytes is refused before
# the first round, by file and line, and no file of the folder gains rows
# (issue 42: "nothing was added" came after runs.csv gained every run).
bad=$tmp/explain-nul
mkdir -p "$bad"
if [ -f "$ex/explain.csv" ]; then
  head -1 "$ex/explain.csv" > "$bad/explain.csv"
  printf '\000\000\000\000,x\r\n' >> "$bad/explain.csv"
  cp "$bad/explain.csv" "$tmp/explain-nul.before"
  if expect "explain refuses a damaged explain.csv before measuring" 1 "explain.csv:2: a malformed row" \
       "$cli" explain --workload bilstm --device cpu --batch 8 --steps 4 --warmup 1 --threads 1 \
       --from tf1-feed-dict --to "layout=batch-major feed=resident sync=1" --budget 0 --csv "$bad"; then
    if [ -e "$bad/runs.csv" ] || [ -e "$bad/samples.csv" ] || grep -q "^  Layout" "$out" ||
       ! cmp -s "$bad/explain.csv" "$tmp/explain-nul.before"; then
      passed=$((passed - 1))
      fail "explain refuses a damaged explain.csv before measuring" "it measured or wrote"
    fi
  fi
fi

# --tensorboard: one event file per run, in a folder of its own.
tb=$tmp/tb
if expect "run with --tensorboard" 0 "steps/s" \
     "$cli" run --workload bilstm --device cpu --batch 8 --steps 4 --warmup 0 --threads 1 \
     --tensorboard "$tb"; then
  n=$(find "$tb" -mindepth 2 -name 'events.out.tfevents.*.tach' | wc -l)
  if [ "$n" -ne 1 ]; then
    passed=$((passed - 1))
    fail "run with --tensorboard" "$n event files (expected 1)"
  fi
fi
expect_usage "--tensorboard needs a folder" "'--tensorboard' needs a folder" \
  run --workload bilstm --tensorboard=
# Checked before the run, as --csv is: nothing runs, the folder is named.
touch "$tmp/file"
for cmd in run sweep; do
  if [ "$cmd" = run ]; then set -- --preset tuned; else set -- --presets tuned; fi
  if expect "$cmd --tensorboard into an unwritable folder" 1 \
       "^tach-cli: Cannot write TensorBoard logs into '$tmp/file/sub': '$tmp/file' is not a folder" \
       "$cli" "$cmd" --workload bilstm "$@" --device cpu --batch 8 --steps 2 --warmup 0 \
       --tensorboard "$tmp/file/sub"; then
    if grep -q "steps" "$out"; then
      passed=$((passed - 1))
      fail "$cmd --tensorboard into an unwritable folder" "it ran before saying so"
    fi
  fi
done
set --

# explain writes every measured run to --tensorboard, as run does.
if expect "explain with --tensorboard" 0 "Layout" \
     "$cli" explain --workload bilstm --device cpu --batch 8 --steps 2 --warmup 0 --threads 1 \
     --from "layout=misread" --to "layout=batch-major" --budget 0 --tensorboard "$tmp/tb-explain"; then
  n=$(find "$tmp/tb-explain" -mindepth 2 -name 'events.out.tfevents.*.tach' | wc -l)
  if [ "$n" -ne 6 ]; then
    passed=$((passed - 1))
    fail "explain with --tensorboard" "$n event files (expected 6: 2 configurations x 3 rounds)"
  fi
fi

# ------------------------------------------------- knobs that do not apply

# A knob given that the run does not honour is said, with the reason.
if expect "a knob that does not apply is noted" 0 \
     "^tach-cli: note: --sampling device is ignored: only the language models' text generation samples tokens" \
     "$cli" run --workload bilstm --device cpu --batch 8 --steps 4 --warmup 3 --threads 1 \
     --sampling device; then
  if ! grep -q "^tach-cli: note: --warmup 3 runs as 2: warm-up steps are at most half of the 4 steps" "$out" ||
     ! grep -q "4 steps (2 warm-up)" "$out"; then
    passed=$((passed - 1))
    fail "a knob that does not apply is noted" "no note of the warm-up cut"
  fi
fi
if expect "a knob that applies is not noted" 0 "steps/s" \
     "$cli" run --workload bilstm --device cpu --batch 8 --steps 4 --warmup 1 --threads 1; then
  if grep -q "note:" "$out"; then
    passed=$((passed - 1))
    fail "a knob that applies is not noted" "a note where every knob applies"
  fi
fi

# sweep --vary's header names the varied knob's values, not the first's.
expect "sweep --vary batch names the batches in its header" 0 \
  "^bilstm \(train\) on cpu \(.*\), batch 4, 8, 16, 2 steps \(0 warm-up\)$" \
  "$cli" sweep --workload bilstm --presets tuned --vary batch=4..16x2 --device cpu --steps 2 \
  --warmup 0 --threads 1
expect "sweep --vary hidden names the values in its header" 0 \
  "^bilstm \(train\) on cpu \(.*\), batch 8, 2 steps \(0 warm-up\), hidden 4, 6$" \
  "$cli" sweep --workload bilstm --presets tuned --vary hidden=4,6 --device cpu --batch 8 \
  --steps 2 --warmup 0 --threads 1

# gpt: bad shapes are refused before any step, each saying why; a run
# reports its prefill and decoding apart, and its memory by part.
gpt_refused () {
  name=$1; pattern=$2; shift 2
  if expect_usage "$name" "$pattern" run --workload gpt --device cpu --threads 1 --steps 2 "$@" &&
     grep -q "steps/s" "$out"; then
    passed=$((passed - 1))
    fail "$name" "a step ran"
  fi
}
gpt_refused "gpt: heads must divide the width" \
  "^tach-cli: gpt: --heads 5 does not divide --embed 384" --heads 5
gpt_refused "gpt: a prompt longer than the context" \
  "^tach-cli: gpt: --prompt 300 is longer than --context 256" --task generate --prompt 300
gpt_refused "gpt: a prompt and new tokens beyond the position table" \
  "take 300 positions, beyond the position table of --context 256" \
  --task generate --prompt 200 --new-tokens 100
gpt_refused "gpt: a shape too large for memory says how much it needs" \
  "^tach-cli: gpt's activations \([0-9.]+[^A-Z]*[GT]B for --batch 4096 x 256 tokens\) needs [0-9.]+[^A-Z]*[GT]B of host memory" \
  --batch 4096 --attention fused
gpt_refused "gpt: a larger shape too large for memory says how much it needs" \
  "^tach-cli: --layers 8 --context 8192 with --batch 2 needs [0-9.]+[^A-Z]*[GT]B of host memory" \
  --batch 2 --context 8192 --layers 8
gpt_csv=$tmp/gpt-csv
if expect "gpt generate reports prefill and decode" 0 \
     "^  prefill +[0-9.]+ ms to the first token" \
     "$cli" run --workload gpt --task generate --device cpu --threads 1 --layers 1 --heads 2 \
     --embed 16 --context 16 --prompt 4 --steps 30 --kv-cache static --csv "$gpt_csv"; then
  # runs.csv's seven columns before the last four: prefill_ms,
  # decode_tokens_per_s and the five memory parts, the KV cache 1 layer x 2 x 16 positions x 16 wide x 4
  # bytes, and the weights the CPU's decoding packed.
  tail6=$(sed -n 2p "$gpt_csv/runs.csv" | tr -d '\r' | awk -F, '{ print ($(NF - 10) > 0) "," ($(NF - 9) > 0) "," $(NF - 7) "," ($(NF - 4) > 0) "," $(NF - 5) }')
  if ! grep -Eq "^  decode +[0-9.]+ tokens/s" "$out" ||
     ! grep -Eq "^ +parameters [0-9.]+.KiB, optimiser 0.bytes, activations [0-9.]+.KiB, KV cache 2.0.KiB, packed weights [0-9.]+.KiB$" "$out" ||
     [ "${tail6%,*}" != "1,1,0,1" ] || [ "${tail6##*,}" != 2048 ]; then
    passed=$((passed - 1))
    fail "gpt generate reports prefill and decode" "runs.csv's gpt columns: $tail6"
  fi
fi
# Requests of 192 steps (context 256, prompt 64) in 20 steps: the one
# prefill is warm-up, and the summary says so rather than nothing.
expect "gpt: a prefill in the warm-up is said not measured" 0 \
  "^  prefill +not measured: every prompt's prefill fell in the warm-up" \
  "$cli" run --workload gpt --task generate --device cpu --threads 1 --layers 1 --heads 2 \
  --embed 16 --steps 20
expect "gpt trains, its items tokens" 0 "^  tokens/s +[0-9.]+$" \
  "$cli" run --workload gpt --device cpu --threads 1 --layers 1 --heads 2 --embed 16 \
  --context 16 --batch 4 --steps 4

echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ]; then
  exit 1
fi
if [ "$passed" -eq 0 ]; then
  exit 77
fi
exit 0
