# The Llama-style model (issue 27): llama-tiny (grouped-query attention: 4 query heads over 2 kv heads, RoPE,
# SwiGLU, RMSNorm, untied head) trains and its loss falls; 200 steps under the named shortcut plans against
# 1 rank with the same micro-batches, max |delta loss| <= 1e-5: DP 2, TP 2 (query and kv heads, the MLP and the
# vocabulary cut), FSDP 2 (a unit per block), DP 2 x TP 2 (2e-5, below), PP 2 and PP 2 x FSDP 2, TP 2 across 2 MPI
# processes; hyperpar plan of the Llama-3 presets (their published sizes); bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
lt="--model llama-tiny --batch 4 --seq 32 --steps 200 --val-every 100 --val-steps 2 --warmup 10 --lr 6e-4"
"$HP" train $lt --grad-accum 4 --metrics one.jsonl >one.log 2>&1 || fail "1-rank run failed: $(tail -2 one.log)"
awk -v a="$(losses one.jsonl | head -1)" -v b="$(losses one.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.5) }' ||
  fail "llama-tiny: the loss did not fall ($(losses one.jsonl | head -1) -> $(losses one.jsonl | tail -1))"
check() { # name, then the run's flags
  local name=$1
  shift
  check_equiv one.jsonl 200 1e-5 "$name" "$@"
}
check dp2 "$HP" train $lt --dp 2 --grad-accum 4
check tp2 "$HP" train $lt --tp 2 --grad-accum 4
check fsdp2 "$HP" train $lt --fsdp 2 --grad-accum 4
grep -q "^fsdp: level 3" fsdp2.log || fail "fsdp2: no FSDP line"
# DP 2 x TP 2 within 2e-5: under the sanitizer build (-O1, no -march) on an AVX-512 Xeon its fp32 rounding
# differences reach 1.07e-5 at step 70 (the same bits at 118e74a, whose CI host gave less)
check_equiv one.jsonl 200 2e-5 dp2_tp2 "$HP" train $lt --dp 2 --tp 2 --grad-accum 4
check pp2 "$HP" train $lt --pp 2 --micro-batches 4 --pp-schedule zb-h1
check pp2_fsdp2 "$HP" train $lt --pp 2 --fsdp 2 --micro-batches 4
check mpi_tp2 timeout 600 "${MPIRUN[@]}" "$HP" train $lt --tp 2 --grad-accum 4
# the presets' sizes, and their plans: TP 8 cuts the 8 kv heads one per rank; FSDP's units are the blocks
"$HP" plan --model llama3-8b --tp 8 --batch 1 --seq 1024 >p8.txt 2>&1 || fail "plan llama3-8b: $(tail -2 p8.txt)"
grep -q "^model: llama3-8b L=32 NH=32 C=4096 KV=8 F=14336 theta=500000 V=128256 .* 8030.26M parameters" p8.txt ||
  fail "plan llama3-8b: $(grep '^model' p8.txt)"
grep -q "param  h.0.attn.kv.weight .*\[2, 1024, 4096\] .*\[2, 128, 4096\]" p8.txt || fail "plan llama3-8b: kv heads: $(grep 'h.0.attn.kv.weight' p8.txt)"
"$HP" plan --model llama3-70b --fsdp 8 --batch 8 --seq 512 >p70.txt 2>&1 || fail "plan llama3-70b: $(tail -2 p70.txt)"
grep -q "70553.71M parameters" p70.txt && grep -q "^  [0-9]* *h.79 " p70.txt || fail "plan llama3-70b: $(grep -c 'h\.' p70.txt) lines"
# bad input
expect_error "llama-tiny" "$HP" train --model llama-1t --steps 1
expect_error "kv heads cannot be split 4 ways" "$HP" train --model llama-tiny --tp 4 --batch 4 --seq 16 --steps 1
finish
