# Pipeline stages with FSDP / ZeRO (issue 26: "composes with FSDP/ZeRO, a stage's units sharded over its own
# data-parallel group"): 200 steps against 1 rank with the same micro-batches, max |delta loss| <= 1e-5, for
# PP 2 x FSDP 2 (level 3, 1F1B and ZB-H1), PP 2 x ZeRO-1 and ZeRO-2, PP 4 x ZeRO-2 with ZB-H1 and PP 2 x HSDP 2,2
# with the interleaved schedule (8 rank-threads each), DP(FSDP) 2 x TP 2 x PP 2, FSDP's last-micro-batch
# reduction, PP 2 x FSDP 2 across 2 MPI processes; the tied wte is a unit of its own on the first and the last stage,
# its reduced shards summed between them. Checkpoints of a PP x FSDP run (either format) resume bit for bit under
# PP x FSDP, PP, FSDP, another PP x ZeRO shape, on 1 rank and across MPI processes; a PP checkpoint resumes under
# PP x FSDP. The compositions not built say so in one line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 4 --heads 4 --channels 32 --batch 4 --seq 16 --steps 200 --val-every 100 --val-steps 2 --warmup 10 --lr 1e-3"
"$HP" train $small --grad-accum 4 --metrics one.jsonl >/dev/null 2>&1 || fail "1-rank run failed"
check() { # name, then the run's flags
  local name=$1
  shift
  check_equiv one.jsonl 200 1e-5 "$name" "$@"
}
check pp2_fsdp2 "$HP" train $small --pp 2 --fsdp 2 --micro-batches 4
grep -q "^fsdp: level 3" pp2_fsdp2.log || fail "pp2_fsdp2: no FSDP line: $(head -4 pp2_fsdp2.log)"
check pp2_fsdp2_zb "$HP" train $small --pp 2 --fsdp 2 --micro-batches 4 --pp-schedule zb-h1
check pp2_zero1 "$HP" train $small --pp 2 --dp 2 --zero 1 --micro-batches 4
check pp2_zero2_gpipe "$HP" train $small --pp 2 --dp 2 --zero 2 --micro-batches 4 --pp-schedule gpipe
check pp4_zero2_zb "$HP" train $small --pp 4 --dp 2 --zero 2 --micro-batches 4 --pp-schedule zb-h1
check pp2_hsdp_il "$HP" train $small --pp 2 --hsdp 2,2 --micro-batches 4 --pp-schedule interleaved
check pp2_fsdp2_tp2 "$HP" train $small --pp 2 --fsdp 2 --tp 2 --micro-batches 4
check pp2_fsdp2_last "$HP" train $small --pp 2 --fsdp 2 --micro-batches 4 --grad-accum-comm last
check pp2_fsdp2_units "$HP" train $small --pp 2 --fsdp 2 --micro-batches 4 --fsdp-unit-bytes 20000 --remat full
check mpi_pp2_fsdp2 timeout 600 "${MPIRUN[@]}" "$HP" train $small --pp 2 --fsdp 2 --micro-batches 4
awk -v a="$(losses pp2_fsdp2.jsonl | head -1)" -v b="$(losses pp2_fsdp2.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.0) }' ||
  fail "loss did not fall"
# the stage's parameters only: each stage's store is its own units (hyperpar plan: rank 0 holds stage 0's half)
"$HP" plan --layers 4 --heads 4 --channels 32 --batch 4 --seq 16 --pp 2 --fsdp 2 --micro-batches 4 --json pf.json >pf.txt 2>&1 ||
  fail "plan: $(tail -2 pf.txt)"
python3 - pf.json <<'EOF' || fail "plan: PP x FSDP parameter bytes"
import json, sys
p = json.load(open(sys.argv[1]))
# rank 0 keeps its stage's parameters (wte, wpe, h.0, h.1: 37,664 floats padded to 37,696) sharded over 2
b = p["ranks"][0]["memory"]["params"]
assert b == 37696 * 4 // 2, b
EOF
grep -q "h.3.mlp.proj.bias .*- (another pipeline stage's)" pf.txt || fail "plan: another stage's parameter: $(grep h.3.mlp.proj.bias pf.txt)"
# checkpoints, both formats, resumed bit for bit (step 10's loss, every digit)
ck="--layers 4 --heads 4 --channels 32 --batch 4 --seq 16 --steps 10 --val-every 0 --val-steps 1 --warmup 2 --run-dir none"
last() { grep -v val_loss "$1" | tail -1 | sed 's/.*\("loss": [^,]*\).*/\1/'; }
"$HP" train $ck --pp 2 --micro-batches 4 --metrics ck_full.jsonl >/dev/null 2>&1 || fail "ck: full run failed"
"$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4 --ckpt-dir ck_f --ckpt-every 5 --stop-at 5 >/dev/null 2>&1 || fail "ck: save failed"
"$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4 --ckpt-dir ck_fs --ckpt-every 5 --stop-at 5 --ckpt-format sharded \
  >/dev/null 2>&1 || fail "ck: sharded save failed"
timeout 300 "${MPIRUN[@]}" "$HP" train $ck --pp 2 --dp 2 --zero 2 --micro-batches 4 --ckpt-dir ck_fm --ckpt-every 5 \
  --stop-at 5 >/dev/null 2>&1 || fail "ck: MPI save failed"
"$HP" train $ck --pp 2 --micro-batches 4 --ckpt-dir ck_p --ckpt-every 5 --stop-at 5 --ckpt-format sharded >/dev/null 2>&1 ||
  fail "ck: PP save failed"
resumed() { # name, checkpoint, then the resumed run's flags
  local name=$1 from=$2
  shift 2
  cp -r "$from" "r_$name"
  "$@" --resume "r_$name" --metrics "r_$name.jsonl" >"r_$name.log" 2>&1 || { fail "ck $name: $(tail -2 "r_$name.log")"; return; }
  [ "$(last "r_$name.jsonl")" = "$(last ck_full.jsonl)" ] || fail "ck $name: step 10 differs: $(last "r_$name.jsonl")"
}
resumed f_ppf ck_f "$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4
resumed f_one ck_f "$HP" train $ck --grad-accum 4
resumed f_pp ck_f "$HP" train $ck --pp 2 --micro-batches 4
resumed fs_ppf ck_fs "$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4
resumed fs_fsdp ck_fs "$HP" train $ck --fsdp 2 --grad-accum 4
resumed fs_pp4z ck_fs "$HP" train $ck --pp 4 --dp 2 --zero 2 --micro-batches 4
resumed fs_mpi ck_fs timeout 300 "${MPIRUN[@]}" "$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4
resumed fm_one ck_fm "$HP" train $ck --grad-accum 4
resumed p_ppf ck_p "$HP" train $ck --pp 2 --fsdp 2 --micro-batches 4
# not built: said in one line, before any step
expect_error "level 1 reduces each unit's gradient in place" "$HP" train --pp 2 --dp 2 --zero 1 --pp-schedule zb-h1 --steps 1
expect_error "transiently gathered units" "$HP" train --pp 2 --fsdp 2 --fsdp-style fsdp2 --steps 1
finish
