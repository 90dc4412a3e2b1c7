# The data-parallel gradient all-reduces in bf16 (--dp-reduce bf16,
# parallel/reduce_dtype): over 200 steps of a small GPT-2, DP 2 and DP 2 x TP 2
# against the fp32 reductions stay within 1e-3 (max |delta loss|) and are not
# bit-identical to them (the bf16 path ran); so do two micro-batches
# (--grad-accum 2) and bf16 compute (--dtype bf16). The reductions' placement
# does not change the numbers: --overlap off gives the same bits as overlap on,
# and DP 2 across 2 MPI processes the same bits as on 2 rank-threads (two bf16
# terms summed in fp32, rounded once, either way). A config file's dp-reduce key
# acts as the flag; a bf16-reduce run stopped at step 10 and resumed continues
# bit for bit (the setting is kept in the checkpoint). hyperpar plan shows the
# pass and half the gradient all-reduce bytes. Refused in one line: a bad value,
# --deterministic with --dp-reduce bf16 or --fsdp-reduce bf16 (where a rank's
# partial sum is rounded depends on the rank count), FSDP/ZeRO with --dp-reduce
# bf16 (they reduce the gradients themselves).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
common="--layers 2 --heads 4 --channels 64 --seq 64 --batch 8 --lr 3e-4 --threads 2 --seed 0 --shuffle 0 --run-dir none"
long="$common --steps 200"
train() { # name flags...
  local name="$1"; shift
  "$HP" train "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || fail "$name failed: $(tail -2 "$name.log")"
}
for p in "dp2:--dp 2" "dp2tp2:--dp 2 --tp 2" "accum2:--dp 2 --batch 4 --grad-accum 2" "bf16:--dp 2 --dtype bf16"; do
  name=${p%%:*} flags=${p#*:}
  # shellcheck disable=SC2086
  train "f32_$name" $long $flags
  # shellcheck disable=SC2086
  train "b16_$name" $long $flags --dp-reduce bf16
  read -r n m <<<"$(maxdiff "f32_$name.jsonl" "b16_$name.jsonl")"
  echo "$name: --dp-reduce bf16 vs fp32 reductions: $n steps, max |delta loss| $m"
  [ "$n" -eq 200 ] || fail "$name: $n steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-3) }' || fail "$name: max |delta loss| $m > 1e-3"
  cmp -s <(losses "f32_$name.jsonl") <(losses "b16_$name.jsonl") &&
    fail "$name: --dp-reduce bf16 gave the fp32 reductions' bits (not in effect?)"
done
# the loss falls (the comparisons are not of two flat lines)
awk -v a="$(losses b16_dp2.jsonl | head -1)" -v b="$(losses b16_dp2.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1) }' ||
  fail "the loss did not fall with --dp-reduce bf16"
# where the reductions run does not change the numbers
train b16_off $long --dp 2 --dp-reduce bf16 --overlap off
cmp -s <(losses b16_dp2.jsonl) <(losses b16_off.jsonl) || fail "--overlap off changed the bf16 reductions' losses"
# (one thread per rank in both: --threads 2 over 2 rank-threads, --threads 1 in each process; some fp32
# kernels' results depend on a rank's thread count in the last bit)
timeout 600 "${MPIRUN[@]}" "$HP" train ${long/--threads 2/--threads 1} --dp 2 --dp-reduce bf16 --metrics mpi.jsonl >mpi.log 2>&1 ||
  fail "2-process DP 2 --dp-reduce bf16 failed: $(tail -3 mpi.log)"
cmp -s <(losses b16_dp2.jsonl) <(losses mpi.jsonl) ||
  fail "2 MPI processes differ from 2 rank-threads: $(maxdiff b16_dp2.jsonl mpi.jsonl)"
# the config file's key, and resume
short="$common --steps 20 --dp 2"
train flag $short --dp-reduce bf16
printf 'dp-reduce = bf16\n' >r.cfg
train cfg $short --config r.cfg
cmp -s <(losses flag.jsonl) <(losses cfg.jsonl) || fail "the config key dp-reduce differs from the flag"
train part $short --dp-reduce bf16 --ckpt-dir ck --stop-at 10
"$HP" train --resume ck --metrics part.jsonl >res.log 2>&1 || fail "resume failed: $(tail -2 res.log)"
[ "$(losses flag.jsonl)" = "$(losses part.jsonl)" ] && [ "$(losses part.jsonl | wc -l)" -eq 20 ] ||
  fail "a --dp-reduce bf16 run resumed is not bit for bit: $(paste <(losses flag.jsonl) <(losses part.jsonl) | tail -3)"
# hyperpar plan: the pass, and half the bytes of every gradient all-reduce (DP 2: the backward's all-reduces)
pl="--layers 2 --heads 4 --channels 64 --dp 2"
"$HP" plan $pl >p32.txt 2>&1 || fail "plan failed: $(tail -2 p32.txt)"
"$HP" plan $pl --dp-reduce bf16 >p16.txt 2>&1 || fail "plan --dp-reduce bf16 failed: $(tail -2 p16.txt)"
grep -q "dp reduce  bf16: 28 gradient all-reduces narrowed" p16.txt || fail "plan lacks the pass: $(grep -i reduce p16.txt | head -3)"
grep -q "dp reduce" p32.txt && fail "plan shows the pass without --dp-reduce bf16"
"$HP" plan $pl --json p32.json >/dev/null 2>&1 && "$HP" plan $pl --dp-reduce bf16 --json p16.json >/dev/null 2>&1 ||
  fail "plan --json failed"
bwd() { python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(sum(t["bytes"] for t in r["ranks"][0]["totals"] if t["phase"] == "bwd" and t["kind"] == "all-reduce"))' "$1"; }
b32=$(bwd p32.json) b16=$(bwd p16.json)
echo "plan: backward all-reduce bytes fp32 $b32, bf16 $b16"
awk -v a="$b16" -v b="$b32" 'BEGIN { exit !(a > 0 && 2 * a == b) }' || fail "plan: bf16 gradient all-reduces $b16 bytes are not half of $b32"
grep -q "wte.grad .*all-reduce(dp, sum) 65.5 KB$" p32.txt || fail "plan: wte's fp32 reduction: $(grep wte.grad p32.txt)"
grep -q "wte.grad .*all-reduce(dp, sum) 32.8 KB (bf16)$" p16.txt || fail "plan: wte's reduction not shown as bf16: $(grep wte.grad p16.txt)"
# tensor-parallel activation reductions stay fp32
"$HP" plan $pl --tp 2 --dp-reduce bf16 >ptp.txt 2>&1 || fail "plan DP 2 x TP 2 failed"
grep "all-reduce(tp" ptp.txt | grep -q bf16 && fail "plan: a tensor-parallel reduction became bf16"
# errors
expect_error "--dp-reduce must be fp32 or bf16, got 'fp16'" "$HP" train $short --dp-reduce fp16
expect_error "--dp-reduce must be fp32 or bf16, got 'fp16'" "$HP" plan $pl --dp-reduce fp16
expect_error "--deterministic sums in fp32: --dp-reduce bf16 rounds each rank's partial sum" "$HP" train $short --deterministic --dp-reduce bf16
expect_error "--deterministic sums in fp32: --fsdp-reduce bf16 rounds each rank's partial sum" "$HP" train $common --steps 2 --fsdp 2 --deterministic --fsdp-reduce bf16
expect_error "--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves (use --fsdp-reduce bf16)" "$HP" train $common --steps 2 --fsdp 2 --dp-reduce bf16
expect_error "--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves" "$HP" train $short --zero 1 --dp-reduce bf16
expect_error "--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves" "$HP" plan $pl --zero 2 --dp-reduce bf16
printf 'dp-reduce = fp8\n' >bad.cfg
expect_error "--dp-reduce must be fp32 or bf16, got 'fp8'" "$HP" train $short --config bad.cfg
finish
