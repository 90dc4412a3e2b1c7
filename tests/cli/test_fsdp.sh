# FSDP / ZeRO (issue 9; issue 24: units by bytes, the tied table's gradient
# reduced in two parts): losses against 1 rank over 200 steps from the same
# seed and global batch (max |delta loss| <= 1e-5) for FSDP 2, 4 and 8, HSDP
# 2x2, ZeRO-1 and ZeRO-2 over DP 2, FSDP 2 x TP 2, on rank threads and across
# 2 MPI processes (FSDP 2 and 4, HSDP 2x2, ZeRO-1/2, FSDP 2 x TP 2); prefetch depths, reshard on/off and the fsdp2 style
# bit-identical to each other; the plan's fsdp pass; validation mode; bench
# fsdp's rows; plan-file FSDP errors before any step. 2 processes x FSDP 4
# gather their units into transient slots (a shard group across supernodes),
# and keep_bytes=auto keeps some of them for the backward, same losses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 8 --seq 32 --steps 200 --val-every 100 --warmup 10 --lr 6e-4 --threads 2"
"$HP" train $small --metrics one.jsonl >/dev/null 2>&1 || fail "1-rank run failed"
check_close() { # name metrics
  read -r n m <<<"$(maxdiff one.jsonl "$2")"
  echo "$1: $n steps, max |delta loss| $m"
  [ "$n" -eq 200 ] || fail "$1: $n steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-5) }' || fail "$1: max |delta loss| $m > 1e-5"
}
run() { # name flags...: a rank-thread run
  local name="$1"; shift
  "$HP" train $small "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || fail "$name failed: $(tail -2 "$name.log")"
}
run fsdp2 --fsdp 2
run fsdp4 --fsdp 4
run fsdp8 --fsdp 8
run hsdp --hsdp 2,2
run zero1 --zero 1 --dp 2
run zero2 --zero 2 --dp 2
run fsdp_tp --fsdp 2 --tp 2
# issue 24: units by bytes (the tied table a unit of its own, its gradient reduced in two parts)
run fsdp4u --fsdp 4 --fsdp-unit-bytes 64K
run hsdpu --hsdp 2,2 --fsdp-unit-bytes 64K
for r in fsdp2 fsdp4 fsdp8 hsdp zero1 zero2 fsdp_tp fsdp4u hsdpu; do check_close "$r" "$r.jsonl"; done
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 2 --metrics mpi2.jsonl >mpi2.log 2>&1 || fail "2-process FSDP 2 failed: $(tail -3 mpi2.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 4 --metrics mpi4.jsonl >mpi4.log 2>&1 || fail "2-process FSDP 4 failed: $(tail -3 mpi4.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --hsdp 2,2 --metrics mpih.jsonl >mpih.log 2>&1 || fail "2-process HSDP 2x2 failed: $(tail -3 mpih.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --zero 1 --dp 2 --metrics mpiz1.jsonl >mpiz1.log 2>&1 || fail "2-process ZeRO-1 failed: $(tail -3 mpiz1.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --zero 2 --dp 2 --metrics mpiz2.jsonl >mpiz2.log 2>&1 || fail "2-process ZeRO-2 failed: $(tail -3 mpiz2.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 2 --tp 2 --metrics mpitp.jsonl >mpitp.log 2>&1 || fail "2-process FSDP 2 x TP 2 failed: $(tail -3 mpitp.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 2 --fsdp-unit-bytes 64K --metrics mpi2u.jsonl >mpi2u.log 2>&1 ||
  fail "2-process FSDP 2 (units by bytes) failed: $(tail -3 mpi2u.log)"
for r in mpi2 mpi4 mpih mpiz1 mpiz2 mpitp mpi2u; do check_close "$r" "$r.jsonl"; done
# keep_bytes=auto: the memory budget (here the memory available) keeps units from the forward for the
# backward; the numbers do not change
timeout 600 "${MPIRUN[@]}" "$HP" train $small --stop-at 20 --fsdp 4 --fsdp-keep-bytes auto --metrics mpi4k.jsonl \
  >mpi4k.log 2>&1 || fail "2-process FSDP 4, keep_bytes=auto failed: $(tail -3 mpi4k.log)"
grep -q "fsdp keep_bytes=auto: [1-9][0-9]* of [0-9]* units" mpi4k.log || fail "keep_bytes=auto kept nothing: $(grep -i keep mpi4k.log)"
cmp -s <(losses mpi4k.jsonl) <(losses mpi4.jsonl | head -20) || fail "keep_bytes=auto: losses differ from FSDP 4's"
# the schedule's choices (and the fsdp2 baseline's copies) change when and how
# collectives run, never the numbers
run pf0 --fsdp 4 --prefetch 0
run pf2 --fsdp 4 --prefetch 2
run rs_off --fsdp 4 --reshard off
run style2 --fsdp 4 --fsdp-style fsdp2
for r in pf0 pf2 rs_off style2; do
  cmp -s <(losses fsdp4.jsonl) <(losses "$r.jsonl") || fail "$r: losses differ from FSDP 4's (prefetch 1, reshard on)"
done
run hsdp2 --hsdp 2,2 --fsdp-style fsdp2
cmp -s <(losses hsdp.jsonl) <(losses hsdp2.jsonl) || fail "HSDP: the fsdp2 style's losses differ from the default style's"
# HSDP's fused reduction (the replicas' all-reduce chained behind the reduce-scatter on one lane, the
# gradient's space reused after the reduce-scatter): the same bits as the fsdp2 style's separate calls,
# also with shard groups of one (the lane's reduce-scatter a copy of the rank's slice)
run hsdp21 --hsdp 2,1
run hsdp21b --hsdp 2,1 --fsdp-style fsdp2
cmp -s <(losses hsdp21.jsonl) <(losses hsdp21b.jsonl) || fail "HSDP 2,1: the fsdp2 style's losses differ from the default style's"
check_close hsdp21 hsdp21.jsonl
# the loss must really fall (the comparison is not of two flat lines)
awk -v a="$(losses fsdp4.jsonl | head -1)" -v b="$(losses fsdp4.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.0) }' || fail "loss did not fall"
# the plan shows the pass, and a plan file can say the same
"$HP" plan --fsdp 4 --layers 2 --heads 4 --channels 64 >plan.txt 2>&1 || fail "plan --fsdp 4 failed"
grep -q "fsdp *level 3 over dp (4 members): 3 units" plan.txt || fail "plan lacks the fsdp pass: $(grep fsdp plan.txt)"
# over 2 processes (2 supernodes) the shard group spans them: units gathered into transient slots (mpi4 above)
"$HP" plan --fsdp 4 --processes 2 --layers 2 --heads 4 --channels 64 >plan2.txt 2>&1 || fail "plan --processes 2 failed"
grep -q "units gathered into 3 transient slots" plan2.txt || fail "plan --processes 2 lacks the slots: $(grep fsdp plan2.txt)"
grep -q "transient" plan.txt && fail "one process: no transient slots expected"
printf 'mesh: dp=2\ninput tokens: S(0)@dp\ninput targets: S(0)@dp\nfsdp: shard=dp level=3\nunit blocks: h.*\nunit root: *\n' >f.plan
run planfile --plan f.plan
check_close planfile planfile.jsonl
# validation mode checks every gather and every reduced shard against one rank
"$HP" train --layers 2 --heads 4 --channels 64 --batch 8 --seq 32 --steps 1 --threads 2 --hsdp 2,2 --validate >val.txt 2>&1 || fail "HSDP --validate failed: $(tail -2 val.txt)"
grep -q "every layout and value agrees" val.txt || fail "validation did not agree: $(grep validation val.txt | head -3)"
[ "$(grep -c 'fsdp shards' val.txt)" -eq 28 ] || fail "the gradient table lacks the FSDP shards: $(grep -c 'fsdp shards' val.txt)"
# errors, before any step
printf 'mesh: dp=2\nfsdp: shard=xx\n' >e1.plan
expect_error "e1.plan:2: fsdp shard=xx: the mesh 'dp=2' has no axis 'xx'" "$HP" train --plan e1.plan --steps 1
printf 'mesh: dp=2\nfsdp: shard=dp lvl=3\n' >e2.plan
expect_error "e2.plan:2: fsdp: unknown setting 'lvl'" "$HP" train --plan e2.plan --steps 1
printf 'mesh: dp=2\nfsdp: shard=dp\nunit blocks: h.*\n' >e3.plan
expect_error "parameter 'wte' is in no unit" "$HP" train --plan e3.plan --steps 1
printf 'mesh: dp=2\nfsdp: shard=dp\nunit typo: h.*.mlp.fc.wieght\nunit rest: *\n' >e4.plan
expect_error "e4.plan:3: unit 'typo' matches no parameter" "$HP" train --plan e4.plan --steps 1
"$HP" bench fsdp --steps 1 --json bench.json >bench.txt 2>&1 || fail "bench fsdp failed: $(tail -3 bench.txt)"
python3 - <<'PY' || fail "bench fsdp's JSON: see above"
import json
rows = json.load(open("bench.json"))
assert [r["config"] for r in rows] == ["1 rank", "dp", "fsdp2-style fsdp", "hyperpar fsdp", "fsdp2-style hsdp", "hyperpar hsdp"], rows
for r in rows:
    assert r["step_ms"] > 0 and r["tokens_per_s"] > 0 and 0 <= r["hidden_pct"] <= 100 and r["memory_mb"] > 0, r
    assert 0 <= r["exposed_comm_ms"] <= r["step_ms"] and r["comm_steps_ms"] >= 0, r
dp, fs = rows[1], rows[3]
assert rows[0]["ranks"] == 1 and rows[1]["ranks"] == 4, rows
assert fs["memory_mb"] < dp["memory_mb"], (fs, dp)  # sharded state and one parameter copy per supernode
PY
# under mpirun the processes are the supernodes: every row runs across them, rank 0's process writes
timeout 600 "${MPIRUN[@]}" "$HP" bench fsdp --steps 1 --ranks 2 --threads 1 --json benchmpi.json >benchmpi.txt 2>&1 || fail "bench fsdp under mpirun failed: $(tail -3 benchmpi.txt)"
python3 - <<'PY' || fail "bench fsdp under mpirun's JSON: see above"
import json
rows = json.load(open("benchmpi.json"))
assert [r["config"] for r in rows] == ["1 rank", "dp", "fsdp2-style fsdp", "hyperpar fsdp", "fsdp2-style hsdp", "hyperpar hsdp"], rows
assert rows[0]["ranks"] == 1 and all(r["ranks"] == 2 and r["supernodes"] == 2 for r in rows[1:]), rows
assert all(r["step_ms"] > 0 and r["memory_mb"] > 0 for r in rows), rows
PY
[ "$(grep -c '^hyperpar fsdp ' benchmpi.txt)" -eq 1 ] || fail "bench fsdp under mpirun: the table is not printed once (by rank 0's process)"
# in bf16 the rows that gather and reduce in bf16 come last
"$HP" bench fsdp --steps 1 --dtype bf16 --json bench16.json >bench16.txt 2>&1 || fail "bench fsdp --dtype bf16 failed: $(tail -3 bench16.txt)"
python3 - <<'PY' || fail "bench fsdp --dtype bf16's JSON: see above"
import json
rows = json.load(open("bench16.json"))
assert [r["config"] for r in rows][-2:] == ["hyperpar fsdp b16c", "hyperpar hsdp b16c"] and len(rows) == 8, rows
assert all(r["dtype"] == "bf16" and r["step_ms"] > 0 for r in rows), rows
PY
expect_error "--dtype must be fp32 or bf16, got 'fp8'" "$HP" bench fsdp --dtype fp8
expect_error "--fsdp or --dp" "$HP" train --fsdp 2 --dp 2 --steps 1
expect_error "--hsdp must be R,S" "$HP" train --hsdp 2 --steps 1
expect_error "--zero must be 1, 2 or 3" "$HP" train --zero 4 --dp 2 --steps 1
expect_error "--fsdp 5000 x --tp 1 is 5000 ranks, above the limit of 4096" "$HP" train --fsdp 5000 --steps 1
expect_error "--fsdp 16 is more than --batch 8" "$HP" train --fsdp 16 --batch 8 --steps 1
expect_error "--hsdp 4,4 is 16 data-parallel ranks, more than --batch 8" "$HP" train --hsdp 4,4 --batch 8 --steps 1
finish
