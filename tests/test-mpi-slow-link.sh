#!/bin/sh
# test-mpi-slow-link.sh: tools/mpi-slow-link.sh launches again when the MPI
# launcher fails before any rank starts (Open MPI's orted has crashed
# while starting in the namespaces), and only then.
#
# A fake mpirun stands in for Open MPI: it fails with 139 its first N
# calls without starting anything, then starts the two "ranks" (the
# command after -np 2, with OMPI_COMM_WORLD_RANK set) and returns the
# last one's status.  The namespaces, bridge and tc limits are the real
# script's, so this needs root, ip and tc (else it exits 77, skipped).
#
# Usage: test-mpi-slow-link.sh SOURCE_ROOT
set -u

root=$1
script=$root/tools/mpi-slow-link.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/mpirun" <<'FAKE'
#!/bin/sh
# Counts its calls in $FAKE_DIR/calls; fails the first $FAKE_FAILS.
n=$(($(cat "$FAKE_DIR/calls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$FAKE_DIR/calls"
if [ "$n" -le "$FAKE_FAILS" ]; then
  echo "fake mpirun: orted crashed" >&2
  exit 139
fi
while [ $# -gt 0 ] && [ "$1" != -np ]; do shift; done
shift 2
status=0
for rank in 0 1; do
  OMPI_COMM_WORLD_RANK=$rank "$@" || status=$?
done
exit "$status"
FAKE
chmod +x "$tmp/mpirun"

failed=0
# case FAILS COMMAND-STATUS WANT-EXIT WANT-CALLS WANT-RAN WHAT
check () {
  rm -f "$tmp/calls" "$tmp/ran"
  FAKE_DIR=$tmp FAKE_FAILS=$1 "$script" --rate 1gbit --mpirun "$tmp/mpirun" -- \
    sh -c "echo \$OMPI_COMM_WORLD_RANK >> '$tmp/ran'; exit $2" > "$tmp/out" 2> "$tmp/err"
  got=$?
  if [ "$got" -eq 77 ]; then
    cat "$tmp/err" >&2
    exit 77
  fi
  calls=$(cat "$tmp/calls" 2>/dev/null || echo 0)
  ran=0
  [ ! -f "$tmp/ran" ] || ran=$(wc -l < "$tmp/ran")
  if [ "$got" -ne "$3" ] || [ "$calls" -ne "$4" ] || [ "$ran" -ne "$5" ]; then
    echo "FAIL: $6: exit $got (want $3), $calls launches (want $4), $ran ranks ran (want $5)" >&2
    sed 's/^/  | /' "$tmp/err" >&2
    failed=1
  else
    echo "ok: $6"
  fi
}

check 0 0 0 1 2 "a launch that works is made once"
check 2 0 0 3 2 "two launches that fail before any rank starts are made again"
if ! grep -q "failed (exit 139) before any rank started; launching again (3 of 3)" "$tmp/err"; then
  echo "FAIL: the launches made again are not said" >&2
  failed=1
fi
check 5 0 139 3 0 "three launches that fail before any rank starts end it, with their status"
check 0 3 3 1 2 "a command that fails once its ranks started is not launched again"
exit "$failed"
