# Gradient accumulation (--grad-accum K): K micro-batches of --batch per step
# train like one batch of K x --batch (the same samples in the same order:
# sequential data from offset 0) — losses within 1e-5 over 50 steps on 1 rank,
# DP 2, FSDP 2 (every micro-batch's reduced shard accumulated, sharded), HSDP
# 2x2, ZeRO-1 over DP 2 and FSDP 2 x TP 2, and FSDP/HSDP reducing only at the
# last micro-batch (--grad-accum-comm last); K = 4 too; bad values refused.
. "$(dirname "$0")/lib.sh"
common="--layers 2 --heads 4 --channels 64 --seq 32 --steps 50 --lr 6e-4 --threads 2 --seed 0 --shuffle 0"
check() { # name flags...
  local name="$1"; shift
  "$HP" train $common --batch 8 "$@" --metrics "$name.one.jsonl" >"$name.log" 2>&1 || fail "$name (one batch) failed: $(tail -2 "$name.log")"
  "$HP" train $common --batch 4 --grad-accum 2 "$@" --metrics "$name.acc.jsonl" >"$name.log" 2>&1 || fail "$name (--grad-accum 2) failed: $(tail -2 "$name.log")"
  read -r n m <<<"$(paste <(losses "$name.one.jsonl") <(losses "$name.acc.jsonl") | awk '{ n++; d=$1-$2; if (d<0) d=-d; if (d>m) m=d } END { printf "%d %.3g\n", n, m }')"
  echo "$name: $n steps, max |delta loss| $m"
  [ "$n" -eq 50 ] || fail "$name: $n steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-5) }' || fail "$name: max |delta loss| $m > 1e-5"
}
check one
check dp2 --dp 2
check fsdp2 --fsdp 2
check hsdp --hsdp 2,2
check zero1 --zero 1 --dp 2
check fsdp_tp --fsdp 2 --tp 2
check fsdp_last --fsdp 2 --grad-accum-comm last
check hsdp_last --hsdp 2,2 --grad-accum-comm last
"$HP" train $common --batch 8 --fsdp 2 --metrics k1.jsonl >/dev/null 2>&1 || fail "K=1 failed"
"$HP" train $common --batch 2 --grad-accum 4 --fsdp 2 --metrics k4.jsonl >k4.log 2>&1 || fail "K=4 failed: $(tail -2 k4.log)"
read -r n m <<<"$(paste <(losses k1.jsonl) <(losses k4.jsonl) | awk '{ n++; d=$1-$2; if (d<0) d=-d; if (d>m) m=d } END { printf "%d %.3g\n", n, m }')"
echo "fsdp2 K=4: $n steps, max |delta loss| $m"
awk -v m="$m" -v n="$n" 'BEGIN { exit !(m <= 1e-5 && n == 50) }' || fail "K=4: $n steps, max |delta loss| $m"
# tokens per step count every micro-batch
grep -q '"tokens_per_s"' k4.jsonl || fail "no throughput in the metrics"
expect_error "--grad-accum must be in 1..4096" "$HP" train --grad-accum -1 --steps 1
expect_error "level 2 or 3" "$HP" train --grad-accum 2 --zero 1 --dp 2 --grad-accum-comm last --steps 1
expect_error "--grad-accum-comm must be every or last" "$HP" train --grad-accum 2 --grad-accum-comm some --steps 1
expect_error "without --grad-accum" "$HP" train --grad-accum 2 --dp 2 --validate --steps 1
finish
