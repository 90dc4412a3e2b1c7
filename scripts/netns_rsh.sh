#!/bin/sh
# The launcher's remote shell for test hosts that are network namespaces of
# this machine (tests/cli/test_two_hosts.sh): Open MPI's rsh launcher runs
# `netns_rsh.sh [options] HOST COMMAND...` (set OMPI_MCA_plm_rsh_agent to this
# file) where it would run ssh, and the command (the orted line, quoted for a
# remote shell) runs under sh inside HOST's namespace, without an ssh daemon.
# HP_NETNS_HOSTS maps each host address to its namespace, e.g.
# "10.99.0.1=hp-a 10.99.0.2=hp-b".
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host=${1:-}
[ $# -gt 0 ] && shift
ns=
for m in ${HP_NETNS_HOSTS:-}; do
  [ "${m%%=*}" = "$host" ] && ns=${m#*=}
done
if [ -z "$ns" ]; then
  echo "netns_rsh.sh: host '$host' is not in HP_NETNS_HOSTS ('${HP_NETNS_HOSTS:-}')" >&2
  exit 255
fi
exec ip netns exec "$ns" sh -c "$*"
