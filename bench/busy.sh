# busy.sh: processes spinning on the machine's cores, for the benchmarks
# that measure under load (run-cpu.sh --busy, verdict-trial.sh).  Sourced
# by a POSIX sh script; each spinner is a shell in an empty loop.
#
#   start_busy N   starts N spinners (their ids in $busy_pids)
#   busy_alive     whether every spinner still runs (one that died took its
#                  core back: the figures since were not under the load)
#   stop_busy      kills and reaps them (call it from the script's traps)

busy_pids=

start_busy () {
  _busy_n=0
  while [ "$_busy_n" -lt "$1" ]; do
    sh -c 'while :; do :; done' &
    busy_pids="$busy_pids $!"
    _busy_n=$((_busy_n + 1))
  done
}

busy_alive () {
  for _busy_pid in $busy_pids; do
    kill -0 "$_busy_pid" 2>/dev/null || return 1
  done
  return 0
}

stop_busy () {
  for _busy_pid in $busy_pids; do
    kill "$_busy_pid" 2>/dev/null || :
  done
  for _busy_pid in $busy_pids; do
    wait "$_busy_pid" 2>/dev/null || :
  done
  busy_pids=
}
