# What an mpirun job listens on (issue 11, defect 13), checked with `ss`
# while a 2-process training job runs under scripts/mpienv.sh:
#  - the ranks (hyperpar processes) listen on nothing: btl self,vader has no
#    TCP transport, and they reach mpirun through PMIx on loopback;
#  - mpirun's PMIx server (for tools) listens on 127.0.0.1;
#  - mpirun's out-of-band channel (ORTE oob/tcp) binds the wildcard addresses
#    0.0.0.0 and [::]: Open MPI 4.1 has no setting for the address it binds
#    (oob_tcp_if_include only chooses the addresses it advertises and
#    connects to; oob_tcp_disable_ipv6_family leaves the [::] socket). The
#    test allows exactly those two, and checks that the advertised contact
#    URI (--report-uri) names 127.0.0.1 alone with the IPv4 socket's port;
#  - every TCP connection of the job's processes is between loopback
#    addresses.
# Any other listener of the job's processes on an address that is not
# loopback fails the test.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
command -v ss >/dev/null || { echo "SKIP: ss (iproute2) is not installed"; exit 77; }
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --threads 2"
"${MPIRUN[@]}" --report-uri uri.txt "$HP" train $small --dp 2 --steps 100000 --metrics m.jsonl >out.txt 2>err.txt &
job=$!
# the ranks have initialised MPI once the first step's metrics are written
for _ in $(seq 1200); do
  grep -q '"loss"' m.jsonl 2>/dev/null && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
grep -q '"loss"' m.jsonl 2>/dev/null || fail "the job did not start training: $(tail -3 err.txt)"

# the job's processes: mpirun (env execs it: same pid) and its descendants
pids=" $job "
for _ in 1 2 3 4; do
  for p in $(ps -e -o pid=,ppid= | awk -v set="$pids" '{ if (index(set, " " $2 " ") && !index(set, " " $1 " ")) print $1 }'); do
    pids="$pids$p "
  done
done
ranks=$(ps -o pid=,comm= -p "$(echo $pids | tr ' ' ,)" | awk '$2 == "hyperpar" { print $1 }' | tr '\n' ' ')
[ "$(echo $ranks | wc -w)" = 2 ] || fail "expected 2 rank processes among the job's ($pids): found '$ranks'"

# listeners (TCP and UDP) of the job's processes: "address:port pid"
ss -H -ltunp | awk -v set="$pids" '{
  local = $5; proc = $0; sub(/.*users:/, "", proc)
  while (match(proc, /pid=[0-9]+/)) {
    p = substr(proc, RSTART + 4, RLENGTH - 4); proc = substr(proc, RSTART + RLENGTH)
    if (index(set, " " p " ")) print $1, local, p
  }
}' | sort -u >listen.txt
echo "listeners of the job (protocol, address:port, pid; mpirun is $job):"
sed 's/^/  /' listen.txt
oob_port=$(sed -n 's/.*tcp:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' uri.txt)
[ -n "$oob_port" ] || fail "mpirun's contact URI does not name 127.0.0.1: $(cat uri.txt)"
uri_addrs=$(tr ';,' '\n\n' <uri.txt | sed -n 's/^tcp6\{0,1\}:\/\/\(.*\):[0-9]*$/\1/p' | sort -u | tr '\n' ' ')
[ "$uri_addrs" = "127.0.0.1 " ] || fail "mpirun advertises other addresses than 127.0.0.1: $(cat uri.txt)"
wild4=0 wild6=0
while read -r proto addr pid; do
  host=${addr%:*} port=${addr##*:}
  case "$host" in
    127.*|\[::1\]|::1) continue ;;
  esac
  case " $ranks " in *" $pid "*) fail "rank process $pid listens on $proto $addr"; continue ;; esac
  if [ "$proto" = tcp ] && [ "$pid" = "$job" ] && [ "$host" = 0.0.0.0 ] && [ "$port" = "$oob_port" ]; then
    wild4=$((wild4 + 1)); continue
  fi
  if [ "$proto" = tcp ] && [ "$pid" = "$job" ] && { [ "$host" = '*' ] || [ "$host" = '[::]' ]; }; then
    wild6=$((wild6 + 1)); continue
  fi
  fail "the job listens on a non-loopback address: $proto $addr (pid $pid)"
done <listen.txt
[ "$wild4" -le 1 ] && [ "$wild6" -le 1 ] || fail "more than one out-of-band wildcard socket per family: $(cat listen.txt)"

# connections of the job's processes: both ends on loopback
ss -H -tnp state established | awk -v set="$pids" '{
  proc = $0; sub(/.*users:/, "", proc)
  while (match(proc, /pid=[0-9]+/)) {
    p = substr(proc, RSTART + 4, RLENGTH - 4); proc = substr(proc, RSTART + RLENGTH)
    if (index(set, " " p " ")) print $3, $4, p
  }
}' | sort -u >conn.txt
echo "connections of the job: $(wc -l <conn.txt)"
while read -r a b pid; do
  for end in "$a" "$b"; do
    case "${end%:*}" in 127.*|\[::1\]|\[::ffff:127.*\]) ;; *) fail "connection off loopback: $a -> $b (pid $pid)" ;; esac
  done
done <conn.txt

kill "$job" 2>/dev/null
wait "$job" 2>/dev/null
finish
