# --moe-chunks (parallel/moe_chunk): each MoE layer's tokens cut into chunks, each its own dispatch, experts and
# combine (under EP its own exchanges, so one chunk's experts run while another's rows travel). 1 rank in 2 and 4
# chunks stays within 1e-5 of the uncut layer over 40 steps (only the experts' weight gradients are summed in
# another order); EP 2 and EP 4, FSDP 2 x EP 2 and EP 2 over 2 MPI processes in 2 chunks within 1e-5 of 1 rank in
# 2 chunks; the exchanges overlapped (--ep-overlap always, several in flight at once) or blocking: the same bits.
# Refused in one line: --validate where the tokens are split, a capacity under EP, the deterministic mode, tokens the chunks do not divide, a dense model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
mt="--model moe-tiny --batch 4 --seq 32 --steps 40 --val-every 0 --warmup 10 --lr 6e-4 --grad-accum 2"
"$HP" train $mt --metrics one.jsonl >one.log 2>&1 || fail "1 rank: $(tail -2 one.log)"
for k in 2 4; do check_equiv one.jsonl 40 1e-5 c$k "$HP" train $mt --moe-chunks $k; done
grep -q "moe chunks: 4 MoE layers: tokens in 4 chunks" c4.log || grep -q '"moe_tokens_mean": 32.00' c4.jsonl ||
  fail "c4: $(grep -m1 '"loss"' c4.jsonl)"
# the metrics are the router's: the same with chunks
tok='"moe_tokens_min[^}]*"moe_imbalance": [0-9.]*'
[ "$(grep -o "$tok" one.jsonl | head -3)" = "$(grep -o "$tok" c2.jsonl | head -3)" ] || fail "c2: MoE metrics differ"
check_equiv c2.jsonl 40 1e-5 ep2 "$HP" train $mt --moe-chunks 2 --ep 2 --ep-overlap always
check_equiv ep2.jsonl 40 0 ep2_blocking "$HP" train $mt --moe-chunks 2 --ep 2 --overlap off
check_equiv c4.jsonl 40 1e-5 ep4 "$HP" train $mt --moe-chunks 4 --ep 4 --ep-overlap always
check_equiv ep4.jsonl 40 0 ep4_blocking "$HP" train $mt --moe-chunks 4 --ep 4 --overlap off
check_equiv c2.jsonl 40 1e-5 fsdp2ep2 "$HP" train $mt --moe-chunks 2 --fsdp 2 --ep 2 --ep-overlap always
# across processes the default (auto) overlaps the exchanges: the same bits as blocking
check_equiv c2.jsonl 40 1e-5 mpi_ep2 timeout 600 "${MPIRUN[@]}" "$HP" train $mt --moe-chunks 2 --ep 2
check_equiv mpi_ep2.jsonl 40 0 mpi_ep2_blocking timeout 600 "${MPIRUN[@]}" "$HP" train $mt --moe-chunks 2 --ep 2 \
  --overlap off
expect_error "has a capacity factor and its tokens in chunks" \
  "$HP" train $mt --steps 1 --moe-chunks 2 --ep 2 --capacity-factor 1
expect_error "with the deterministic mode is not built" \
  "$HP" train --model moe-tiny --batch 8 --seq 32 --steps 1 --moe-chunks 2 --deterministic
expect_error "tokens do not cut into 3 chunks" "$HP" train $mt --steps 1 --moe-chunks 3
expect_error "each rank cuts its own tokens into the MoE chunks" \
  "$HP" train --model moe-tiny --batch 4 --seq 32 --steps 1 --moe-chunks 2 --ep 2 --validate
expect_error "--moe-chunks needs a MoE model" "$HP" train --model llama-tiny --steps 1 --moe-chunks 2
finish
