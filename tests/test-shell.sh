#!/bin/sh
# test-shell.sh: tach-cli's generated bash completion and manual page.
#
# Usage: test-shell.sh TACH-CLI COMPLETION MANPAGE
# The completion must load and complete commands, options, knob values and
# the presets of the workload given; every option that `tach-cli --help`
# lists must complete; the manual page must render with man -l, without
# warnings, and name every knob and preset.
set -u
cli=$1; completion=$2; manpage=$3
passed=0; failed=0
pass () { passed=$((passed + 1)); echo "ok   $1"; }
fail () { failed=$((failed + 1)); echo "FAIL $1: $2"; }

if ! command -v bash >/dev/null; then echo "no bash"; exit 77; fi

# complete WORDS...: what the completion offers for the last word.
complete_words () {
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tach_cli; echo "${COMPREPLY[*]}"' \
    sh "$completion" "$@"
}

spec=$(bash -c '. "$1"; complete -p tach-cli' sh "$completion" 2>&1)
case $spec in
  "complete -F _tach_cli tach-cli") pass "complete -p tach-cli" ;;
  *) fail "complete -p tach-cli" "$spec" ;;
esac

got=$(complete_words tach-cli sw)
[ "$got" = "sweep" ] && pass "commands" || fail "commands" "'$got'"

got=$(complete_words tach-cli run --rnn "")
[ "$got" = "fused unrolled" ] && pass "knob values" || fail "knob values" "'$got'"

got=$(complete_words tach-cli run --workload cnn --preset "")
case " $got " in
  *" estimator "*" tuned "*) case " $got " in *" tf1-feed-dict "*) fail "presets of the workload" "'$got'" ;;
                                               *) pass "presets of the workload" ;; esac ;;
  *) fail "presets of the workload" "'$got'" ;;
esac

got=$(complete_words tach-cli sweep --presets "")
case " $got " in *" all "*" keras-fit "*) pass "sweep presets" ;; *) fail "sweep presets" "'$got'" ;; esac

# Every option of --help completes: the generated file cannot drift.
offered=" $(complete_words tach-cli run --) "
missing=""
for o in $("$cli" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
  case $offered in *" $o "*) ;; *) missing="$missing $o" ;; esac
done
[ -z "$missing" ] && pass "every --help option completes" || fail "every --help option completes" "missing:$missing"

# The manual page.
if ! command -v man >/dev/null; then
  echo "skip man page: no man"
else
  text=$(MANPAGER=cat MANWIDTH=100 man -l "$manpage" 2>"$manpage.err")
  warnings=$(MANPAGER=cat MANWIDTH=100 man --warnings=all -l "$manpage" 2>&1 >/dev/null)
  if [ -n "$text" ] && [ ! -s "$manpage.err" ] && [ -z "$warnings" ] &&
     printf '%s' "$text" | grep -q "^KNOBS" && printf '%s' "$text" | grep -q "^EXIT STATUS"; then
    pass "man -l renders without warnings"
  else
    fail "man -l renders without warnings" "$(cat "$manpage.err") $warnings"
  fi
  rm -f "$manpage.err"
  missing=""
  for k in $(complete_words tach-cli run --) $("$cli" presets | awk '/^  [a-z]/ {print $1}'); do
    printf '%s' "$text" | grep -qF -- "$k" || missing="$missing $k"
  done
  [ -z "$missing" ] && pass "the man page names every option and preset" ||
    fail "the man page names every option and preset" "missing:$missing"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
