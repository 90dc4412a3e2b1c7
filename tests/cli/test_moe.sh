# Mixture-of-Experts (issue 27, the layer without expert parallelism yet): moe-tiny (Llama-style blocks whose MLP
# routes each token to 2 of 8 experts, plus one shared expert; balancing and z losses) trains and its loss falls
# over 200 steps; the first 40 steps under the shortcut plans against 1 rank with the same micro-batches, max
# |delta loss| <= 1e-5 — DP 2, FSDP 2, TP 2 (attention, the shared expert and the vocabulary cut; the routed
# experts whole), PP 2, DP 2 across 2 MPI processes: the balancing loss is the batch's (its statistics summed over
# the ranks) whatever the split. (Past ~40 steps the runs part: a last-bit difference in a sum turns some token's
# choice of expert, and the loss then differs by more than rounding; docs/architecture.md, MoE.) Plans of the
# DeepSeek-V3-like and ~500B presets; bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
mt="--model moe-tiny --batch 4 --seq 32 --steps 200 --val-every 100 --val-steps 2 --warmup 10 --lr 6e-4"
"$HP" train $mt --grad-accum 4 --metrics one.jsonl >one.log 2>&1 || fail "1-rank run failed: $(tail -2 one.log)"
awk -v a="$(losses one.jsonl | head -1)" -v b="$(losses one.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.5) }' ||
  fail "moe-tiny: the loss did not fall ($(losses one.jsonl | head -1) -> $(losses one.jsonl | tail -1))"
# the comparisons: 40-step runs (their own learning-rate schedule), against 1 rank's 40 steps
"$HP" train $mt --steps 40 --grad-accum 4 --metrics one40.jsonl >one40.log 2>&1 || fail "1-rank 40 steps: $(tail -2 one40.log)"
check() { # name, then the run's flags (40 steps of them)
  local name=$1
  shift
  check_equiv one40.jsonl 40 1e-5 "$name" "$@" --steps 40
}
check dp2 "$HP" train $mt --dp 2 --grad-accum 4
check fsdp2 "$HP" train $mt --fsdp 2 --grad-accum 4
check tp2 "$HP" train $mt --tp 2 --grad-accum 4
check pp2 "$HP" train $mt --pp 2 --micro-batches 4
check mpi_dp2 timeout 600 "${MPIRUN[@]}" "$HP" train $mt --dp 2 --grad-accum 4
# the presets' sizes
"$HP" plan --model moe-deepseek-v3 --batch 8 --seq 256 --fsdp 8 >pd.txt 2>&1 || fail "plan moe-deepseek-v3: $(tail -2 pd.txt)"
grep -q "E=256 top-8 Fe=2048 shared=1 .* 704921.04M parameters" pd.txt || fail "plan moe-deepseek-v3: $(grep '^model' pd.txt)"
"$HP" plan --model moe-500b --batch 8 --seq 256 --fsdp 8 >p5.txt 2>&1 || fail "plan moe-500b: $(tail -2 p5.txt)"
grep -q "E=128 top-8 Fe=3072 shared=1 .* 520477.03M parameters" p5.txt || fail "plan moe-500b: $(grep '^model' p5.txt)"
expect_error "not a known model" "$HP" train --model moe-1t --steps 1
finish
