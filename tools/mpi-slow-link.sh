#!/bin/sh
# Runs two Tach ranks across a slow link on one machine: two network
# namespaces, each joined by a veth pair whose rate tc's tbf limits (netem,
# for delay, is not on every kernel) to a bridge in a third, where mpirun
# runs and launches one rank in each over TCP.  Removes everything it made
# when it ends.
#
#   tools/mpi-slow-link.sh [--rate 100mbit] [--mpirun MPIRUN] -- TACH-CLI ARGS...
#   e.g. tools/mpi-slow-link.sh --rate 100mbit -- build/app/tach-cli run \
#          --workload bilstm --device cpu --threads 1 --steps 20 --grad-sync overlap
#
# Root only (namespaces); without root, ip, tc or mpirun it says so and
# exits 77 (a skip, for tests).  A launch that fails before any rank
# starts is tried again (three launches at most; below).  The addresses are TEST-NET-1's
# (192.0.2.0/24, RFC 5737, never routed), and live only inside the
# namespaces and the bridge this script makes.
set -eu

rate=100mbit
mpirun=mpirun
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate="$2"; shift 2 ;;
    --mpirun) mpirun="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "usage: $0 [--rate RATE] [--mpirun MPIRUN] -- TACH-CLI ARGS..." >&2
  exit 2
fi

skip () { echo "mpi-slow-link: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
command -v tc >/dev/null 2>&1 || skip "no tc (iproute2)"
command -v "$mpirun" >/dev/null 2>&1 || skip "no $mpirun (apt-get install openmpi-bin)"

tag="tach$$"
ctl="${tag}c"
net=192.0.2
tmp=$(mktemp -d)

cleanup () {
  for ns in "${tag}a" "${tag}b" "$ctl"; do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Everything lives in namespaces of its own, mpirun included, in "c" with
# the bridge: the root namespace's own traffic may be filtered (it is in
# some containers), and nothing here touches it.
ip netns add "$ctl" || skip "cannot make a network namespace here"
ip -n "$ctl" link add br0 type bridge || skip "cannot make a bridge here"
ip -n "$ctl" addr add "$net.1/24" dev br0
ip -n "$ctl" link set br0 up
ip -n "$ctl" link set lo up
n=11
for side in a b; do
  ns="${tag}$side"
  ip netns add "$ns"
  ip -n "$ctl" link add "port$side" type veth peer name eth0 netns "$ns"
  ip -n "$ctl" link set "port$side" master br0 up
  ip -n "$ns" addr add "$net.$n/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  # Both directions are limited: the rank's side, and the bridge's side
  # of its pair.
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 50ms \
    || skip "tc tbf is not available"
  ip netns exec "$ctl" tc qdisc add dev "port$side" root tbf rate "$rate" burst 64kb latency 50ms
  n=$((n + 1))
done

# mpirun's launcher: called as AGENT HOST COMMAND..., it runs the command
# in the namespace that holds HOST's address.
cat > "$tmp/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  $net.11) ns=${tag}a ;;
  $net.12) ns=${tag}b ;;
  *) echo "mpi-slow-link: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$tmp/agent"

# Each rank marks that it started before it runs the command: Open MPI
# 4.1.4's orted has crashed while starting in the namespaces (SIGSEGV in
# hwloc_shmem_topology_write, one launch in nine, before any rank ran),
# and a launch that failed with no rank started is tried again, three
# launches at most.  A launch whose ranks started ends the script with its
# status, whatever it is.
cat > "$tmp/rank" <<'RANK'
#!/bin/sh
: > "$TACH_SLOW_LINK_STARTED.${OMPI_COMM_WORLD_RANK:-0}"
exec "$@"
RANK
chmod +x "$tmp/rank"

echo "mpi-slow-link: 2 ranks on $net.11 and $net.12, link limited to $rate each way" >&2
launch=1
while :; do
  status=0
  ip netns exec "$ctl" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    TACH_SLOW_LINK_STARTED="$tmp/started" \
    "$mpirun" --mca plm_rsh_agent "$tmp/agent" \
      --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
      -x PATH -x TACH_SLOW_LINK_STARTED -H "$net.11,$net.12" -np 2 "$tmp/rank" "$@" || status=$?
  if [ "$status" -eq 0 ] || ls "$tmp"/started.* >/dev/null 2>&1 || [ "$launch" -ge 3 ]; then
    exit "$status"
  fi
  launch=$((launch + 1))
  echo "mpi-slow-link: $mpirun failed (exit $status) before any rank started; launching again ($launch of 3)" >&2
done
