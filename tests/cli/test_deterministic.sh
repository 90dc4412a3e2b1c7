# Deterministic mode (issue 9 item 7; issue 24's split reduction and byte-sized
# units included): with --deterministic the losses, the
# gradient norms (clipping on) and the validation losses are the same bits at
# 1, 2, 4 and 8 rank-threads under FSDP, under DP and ZeRO-1/2, with another
# per-rank thread count, and across 2 MPI processes (1, 2 and 4 rank-threads
# each) — compared as the exact strings the metrics print (%.9g: every float
# bit); a run stopped on 4 ranks and resumed on 2 continues with the same
# bits; the same holds in bf16 compute (1, 2, 4, 8 ranks, 3 threads), and with
# FSDP's gathers in bf16 (2 and 8 ranks against 1 with --bf16-params all). The
# losses must also fall (not two flat lines). Bad settings get a
# one-line error before any step.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 16 --seq 32 --steps 30 --val-every 15 --val-steps 2 --warmup 5
       --lr 1e-3 --grad-clip 0.5 --run-dir none --deterministic"
# every step's loss and norm, every validation loss, as printed
values() { grep -o '"\(loss\|val_loss\|grad_norm\)": [^,}]*' "$1"; }
run() { # name flags...: a rank-thread run
  local name="$1"; shift
  "$HP" train $small "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || fail "$name failed: $(tail -2 "$name.log")"
}
same() { # name: its values equal the 1-rank run's, bit for bit
  [ "$(values one.jsonl | wc -l)" -ge 60 ] || fail "the 1-rank run printed too few values: $(values one.jsonl | wc -l)"
  if cmp -s <(values one.jsonl) <(values "$1.jsonl"); then echo "$1: the same bits as 1 rank"
  else fail "$1: differs from 1 rank: $(diff <(values one.jsonl) <(values "$1.jsonl") | head -3 | tr '\n' ' ')"; fi
}
run one --threads 2
run fsdp2 --threads 2 --fsdp 2
run fsdp4 --threads 2 --fsdp 4
run fsdp8 --threads 2 --fsdp 8
run fsdp2t3 --threads 3 --fsdp 2
run one_t1 --threads 1
run one_t3 --threads 3
run dp4 --threads 2 --dp 4
run zero1 --threads 2 --zero 1 --dp 2
run zero2 --threads 2 --zero 2 --dp 4
# issue 24: the tied embedding's gradient reduced in two parts (the LM head's first, the rows at the end, on one
# rank too) and FSDP units by bytes: the same bits
run fsdp4u --threads 2 --fsdp 4 --fsdp-unit-bytes 64K
run fsdp2u --threads 2 --fsdp 2 --fsdp-unit-bytes 16K
for r in fsdp2 fsdp4 fsdp8 fsdp2t3 one_t1 one_t3 dp4 zero1 zero2 fsdp4u fsdp2u; do same "$r"; done
# across 2 MPI processes: 1, 2 and 4 rank-threads each (the two-tier reductions)
for n in 2 4 8; do
  timeout 600 "${MPIRUN[@]}" "$HP" train $small --threads 2 --fsdp $n --metrics mpi$n.jsonl >mpi$n.log 2>&1 ||
    fail "2-process FSDP $n failed: $(tail -3 mpi$n.log)"
  same mpi$n
done
# stopped at step 15 on 4 ranks, resumed on 2: still the uninterrupted 1-rank run's bits
"$HP" train $small --threads 2 --fsdp 4 --stop-at 15 --ckpt-dir ck --metrics resumed.jsonl >stop.log 2>&1 ||
  fail "the stopped run failed: $(tail -2 stop.log)"
"$HP" train $small --threads 2 --fsdp 2 --resume ck --metrics resumed.jsonl >resume.log 2>&1 ||
  fail "the resumed run failed: $(tail -2 resume.log)"
same resumed
# stopped on 4 ranks with units by bytes, resumed on 2 with one unit per block: the same bits
"$HP" train $small --threads 2 --fsdp 4 --fsdp-unit-bytes 64K --stop-at 15 --ckpt-dir cku --metrics resumed_u.jsonl \
  >stop_u.log 2>&1 || fail "the stopped run (units by bytes) failed: $(tail -2 stop_u.log)"
"$HP" train $small --threads 2 --fsdp 2 --resume cku --metrics resumed_u.jsonl >resume_u.log 2>&1 ||
  fail "the resumed run (one unit per block) failed: $(tail -2 resume_u.log)"
same resumed_u
# the clip was on (norms above 0.5) and the loss fell
awk '/grad_norm/ { if ($0 ~ /"grad_norm": 0\./) small++; n++ } END { exit !(n == 30 && small < 30) }' one.jsonl ||
  fail "the gradient norm never exceeded the clip"
awk -v a="$(losses one.jsonl | head -1)" -v b="$(losses one.jsonl | tail -1)" 'BEGIN { exit !(b < a - 0.5) }' ||
  fail "loss did not fall: $(losses one.jsonl | head -1) -> $(losses one.jsonl | tail -1)"
# bf16 compute (issue 10): the oneDNN GEMMs' blocks follow the pool grain too — 1, 2, 4, 8 ranks, 3 threads
# Where the CPU has no bf16 instructions, oneDNN's emulated bf16 GEMMs split their sums by the rank's
# thread count, so these bits hold only on CPUs with AVX512-BF16 or AMX (seen at fa21fd9 on a Zen 3:
# 1 rank and FSDP 2 part at step 3); the fp32 checks above hold everywhere.
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
run one_bf16 --threads 2 --dtype bf16
for r in "fsdp2_bf16:--fsdp 2" "fsdp4_bf16:--fsdp 4" "fsdp8_bf16:--fsdp 8" "t3_bf16:--fsdp 2 --threads 3"; do
  name=${r%%:*}
  run "$name" --threads 2 --dtype bf16 ${r#*:}
  if cmp -s <(values one_bf16.jsonl) <(values "$name.jsonl"); then echo "$name: the same bits as 1 rank in bf16"
  else fail "$name: differs from 1 rank in bf16: $(diff <(values one_bf16.jsonl) <(values "$name.jsonl") | head -3 | tr '\n' ' ')"; fi
done
cmp -s <(values one.jsonl) <(values one_bf16.jsonl) && fail "the bf16 runs print the fp32 run's values (bf16 not in effect?)"
# FSDP gathering in bf16 (--fsdp-gather bf16, every parameter through bf16): 2 and 8 ranks give the bits
# of 1 rank with --bf16-params all
run one_bf16all --threads 2 --dtype bf16 --bf16-params all
for r in "g2_bf16:--fsdp 2" "g8_bf16:--fsdp 8"; do
  name=${r%%:*}
  run "$name" --threads 2 --dtype bf16 --fsdp-gather bf16 ${r#*:}
  if cmp -s <(values one_bf16all.jsonl) <(values "$name.jsonl"); then echo "$name: the same bits as 1 rank (--bf16-params all)"
  else fail "$name: differs from 1 rank with --bf16-params all: $(diff <(values one_bf16all.jsonl) <(values "$name.jsonl") | head -3 | tr '\n' ' ')"; fi
done
else
  echo "bf16 bit-for-bit checks: this CPU has neither AVX512-BF16 nor AMX (bf16 emulated), not claimed here"
fi
# other slice counts: 4 slices at 1 and 4 ranks, 16 at 2 and 16 (S = N: no accumulation)
args4="--layers 2 --heads 4 --channels 64 --batch 8 --seq 32 --steps 10 --val-every 0 --run-dir none --threads 2 --det-slices 4"
"$HP" train $args4 --metrics s4a.jsonl >/dev/null 2>&1 || fail "--det-slices 4 on 1 rank failed"
"$HP" train $args4 --fsdp 4 --metrics s4b.jsonl >/dev/null 2>&1 || fail "--det-slices 4 on 4 ranks failed"
cmp -s <(values s4a.jsonl) <(values s4b.jsonl) || fail "--det-slices 4: 4 ranks differ from 1"
args16="--layers 2 --heads 4 --channels 64 --batch 16 --seq 16 --steps 10 --val-every 0 --run-dir none --threads 2 --det-slices 16"
"$HP" train $args16 --fsdp 2 --metrics s16a.jsonl >/dev/null 2>&1 || fail "--det-slices 16 on 2 ranks failed"
"$HP" train $args16 --fsdp 16 --metrics s16b.jsonl >/dev/null 2>&1 || fail "--det-slices 16 on 16 ranks failed"
cmp -s <(values s16a.jsonl) <(values s16b.jsonl) || fail "--det-slices 16: 16 ranks differ from 2"
# errors, before any step
expect_error "the slice count must be a power of two in 1..4096, got 6" "$HP" train --det-slices 6 --steps 1
expect_error "3 data-parallel ranks do not divide 8 slices" "$HP" train --deterministic --fsdp 3 --batch 24 --steps 1
expect_error "a batch of 12 sequences does not split into 8 equal slices" "$HP" train --deterministic --batch 12 --steps 1
expect_error "--deterministic is built for data parallelism (--dp, --fsdp, --zero, and --ep's experts): not with --tp" \
  "$HP" train --deterministic --tp 2 --steps 1
expect_error "not with --hsdp" "$HP" train --deterministic --hsdp 2,2 --steps 1
expect_error "leave out --grad-accum" "$HP" train --deterministic --grad-accum 2 --steps 1
expect_error "--det-slices must be in 1..4096, got -1" "$HP" train --det-slices -1 --steps 1
finish
