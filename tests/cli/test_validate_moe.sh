# Validation mode on Mixture-of-Experts models under expert parallelism (one step each, a few seconds): EP 2, EP 4,
# FSDP 2 x EP 2, EP 2 with a capacity factor (applied by the experts' owners over the whole batch, as one rank
# applies it) and mixtral-tiny under EP 2 validate: every layout and value agrees, the rows the ranks hold in
# orders of their own (a rank's tokens grouped by expert, the exchanged rows) are counted and not compared, and the
# gradients are within 1e-5 of one rank; EP 2 in bf16 too. A capacity decided over part of the batch (DP 2 x EP 2,
# or DP 2 alone) is refused with a one-line reason, as is a routing in bf16 under TP (its input's Partial terms
# rounded per rank) and the deterministic mode's micro-batches.
# (engine/test_validate_moe: a wrong expert output caught at the combine.)
. "$(dirname "$0")/lib.sh"
mt="--model moe-tiny --batch 4 --seq 16 --steps 1 --validate"
ok() { # name, then the flags
  local name=$1
  shift
  "$HP" train "$@" >"$name.log" 2>&1 || { fail "$name failed: $(tail -2 "$name.log")"; return; }
  grep -qE "^validation: [0-9]+ operators checked, every layout and value agrees \([0-9]+ redistributions, [0-9]+ values, [1-9][0-9]* in the ranks' own row orders not compared; " "$name.log" ||
    fail "$name: no validation summary with own row orders: $(grep -m1 '^validation' "$name.log")"
  local w
  w=$(sed -n 's/^validation: worst gradient relative error \([^ ]*\) .*/\1/p' "$name.log")
  awk -v w="${w:-1}" 'BEGIN { exit !(w <= 1e-5) }' || fail "$name: worst gradient relative error ${w:-none} > 1e-5"
  echo "$name: $(grep -m1 -o '[0-9]* operators checked' "$name.log"), worst gradient relative error $w"
}
ok ep2 $mt --ep 2
ok ep4 $mt --ep 4
ok fsdp2ep2 $mt --fsdp 2 --ep 2
ok ep2cap $mt --ep 2 --capacity-factor 1
ok mixtral_ep2 --model mixtral-tiny --batch 4 --seq 16 --steps 1 --validate --ep 2
ok ep2bf16 $mt --ep 2 --dtype bf16
# the capacity really dropped rows: another loss than dropless
l0=$(sed -n 's/.*; loss \([0-9.]*\), 1 rank.*/\1/p' ep2.log)
l1=$(sed -n 's/.*; loss \([0-9.]*\), 1 rank.*/\1/p' ep2cap.log)
[ -n "$l0" ] && [ "$l0" != "$l1" ] || fail "capacity 1 gave the dropless loss ($l0, $l1)"
# (4 ranks on a small machine may print a warning line first: the error is the one validation line)
expect_error_any "h.0.mlp.moe_dispatch.ep_send cannot be checked against one rank: its experts' owners apply the capacity factor" \
  "$HP" train $mt --dp 2 --ep 2 --capacity-factor 1
[ "$(grep -c 'validation' err.txt)" -eq 1 ] || fail "dp2ep2 capacity: not one line: $(cat err.txt)"
expect_error "h.0.mlp.moe_route cannot be checked against one rank: its capacity factor drops the lowest scores among each rank's tokens, where one rank ranks all the tokens at once ('dp' of 2 ranks)" \
  "$HP" train $mt --dp 2 --capacity-factor 1
# under TP in bf16 the router's input is a sum of terms each rank rounded: its top-k may turn at a near tie
expect_error_any "h.0.mlp.moe_route cannot be checked against one rank: its top-k choice reads values whose Partial terms each rank rounds to bf16 before they are summed, so a near tie can turn against one rank's choice ('tp' of 2 ranks)" \
  "$HP" train $mt --ep 2 --tp 2 --dtype bf16
expect_error "run --validate without --deterministic" "$HP" train $mt --batch 8 --ep 2 --deterministic
finish
