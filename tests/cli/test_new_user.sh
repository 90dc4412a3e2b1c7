# What a new user trips on (issue 21, items 6, 8 and 9): oversubscription
# said at start and recorded in run.json; Muon's refusal under a sharded plan
# names every sharded matrix and an --adamw-params value that works; the
# default warmup scales with --steps; bf16 without AVX512-BF16/AMX is said to
# be emulated.
. "$(dirname "$0")/lib.sh"
tiny="--layers 2 --heads 2 --channels 32 --batch 4 --seq 16 --max-seq 16 --val-steps 1 --val-every 0"

# 6. two rank-threads on one core: a warning at start, and run.json says so; one rank on one core: neither
taskset -c 0 "$HP" train $tiny --steps 2 --dp 2 --threads 2 --run-dir over >over.out 2>over.err || fail "oversubscribed run failed: $(tail -1 over.err)"
grep -q "warning: 2 ranks x 1 thread on 1 core: the ranks take turns" over.err || fail "no oversubscription warning: $(cat over.err)"
[ "$(grep -c "take turns" over.err)" -eq 1 ] || fail "the warning is not said once"
python3 - over/run.json <<'EOF' || fail "run.json does not record the oversubscription"
import json, sys
o = json.load(open(sys.argv[1]))["oversubscribed"]
assert o == {"ranks": 2, "threads_per_rank": 1, "cores": 1}, o
EOF
taskset -c 0 "$HP" train $tiny --steps 2 --threads 1 --run-dir fits >fits.out 2>fits.err || fail "1-rank run failed"
grep -q "take turns" fits.err && fail "a 1-rank, 1-thread run on one core was called oversubscribed"
python3 -c 'import json,sys; assert "oversubscribed" not in json.load(open(sys.argv[1]))' fits/run.json ||
  fail "run.json of a run that fits says oversubscribed"

# 8. Muon: under FSDP, ZeRO-1, TP, FSDP x TP and HSDP x TP the update is distributed (it
# trains); matrices cut along two mesh axes are named at once (not a piece), and the hint
# works as given
for plan in "--fsdp 2" "--zero 1 --dp 2" "--tp 2" "--fsdp 2 --tp 2" "--hsdp 2,2 --tp 2"; do
  # shellcheck disable=SC2086
  "$HP" train $tiny --steps 2 --threads 2 --run-dir none --optimizer muon $plan >m.out 2>&1 ||
    fail "$plan: Muon is refused: $(tail -1 m.out)"
done
printf 'mesh: dp=2,tp=2\nparam h.*.mlp.fc.weight: S(0)@dp,S(1)@tp\nparam h.*.mlp.proj.weight: S(0)@tp,S(1)@dp\n' > two.plan
plan="--plan two.plan"
# shellcheck disable=SC2086
expect_error "4 matrices are cut (h.0.mlp.fc.weight, h.0.mlp.proj.weight, h.1.mlp.fc.weight, h.1.mlp.proj.weight)" \
  "$HP" train $tiny --steps 2 --threads 2 --run-dir none --optimizer muon $plan
grep -q '\[' err.txt && fail "$plan: the refusal names a piece: $(cat err.txt)"
hint=$(sed -n "s/.*--adamw-params '\([^']*\)'.*/\1/p" err.txt)
[ "$hint" = "h.*.mlp.fc.weight,h.*.mlp.proj.weight" ] || fail "$plan: hint '$hint'"
# shellcheck disable=SC2086
"$HP" train $tiny --steps 2 --threads 2 --run-dir none --optimizer muon $plan --adamw-params "$hint" >h.out 2>&1 ||
  fail "$plan: the hinted --adamw-params is refused: $(tail -1 h.out)"
# a pattern matching nothing is still refused, on one rank and under FSDP alike
expect_error "pattern 'nope*' matches no parameter" "$HP" train $tiny --steps 2 --run-dir none --optimizer muon --adamw-params 'nope*'
expect_error "pattern 'nope*' matches no parameter" "$HP" train $tiny --steps 2 --run-dir none --optimizer muon --fsdp 2 --adamw-params 'nope*'

# 9. warmup: a 20-step run warms up 2 steps and decays; a warmup covering every step is said
"$HP" train $tiny --steps 20 --threads 2 --run-dir w20 >w20.out 2>w20.err || fail "20-step run failed"
python3 - w20 <<'EOF' || fail "the default warmup of a 20-step run is not 2 steps that then decay"
import json, sys
cfg = {s["key"]: s for s in json.load(open(sys.argv[1] + "/config.json"))["settings"]}
assert cfg["warmup"]["value"] == "2", cfg["warmup"]
lr = [r["lr"] for r in map(json.loads, open(sys.argv[1] + "/metrics.jsonl")) if "lr" in r]
assert len(lr) == 20 and lr[0] < lr[1] and max(lr) == lr[1] and lr[-1] < lr[1] / 2, lr
EOF
"$HP" train $tiny --steps 300 --threads 2 --stop-at 1 --run-dir w300 >/dev/null 2>&1 || fail "300-step run failed"
grep -q '"key":"warmup","value":"20"' w300/config.json || fail "the default warmup of a 300-step run is not 20"
"$HP" train $tiny --steps 10 --warmup 10 --threads 2 --run-dir none >wall.out 2>wall.err || fail "--warmup 10 --steps 10 failed"
grep -q "warning: --warmup 10 covers all 10 steps" wall.err || fail "a warmup covering every step is not said: $(cat wall.err)"

# 9. bf16 where the CPU has neither AVX512-BF16 nor AMX: said to be emulated, once; where it has one, not
"$HP" train $tiny --steps 1 --threads 2 --run-dir none --dtype bf16 >bf.out 2>&1 || fail "bf16 run failed: $(tail -1 bf.out)"
if grep -qE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  grep -q "bf16 is emulated" bf.out && fail "bf16 called emulated on a CPU with AVX512-BF16/AMX"
else
  [ "$(grep -c "this CPU has neither AVX512-BF16 nor AMX: bf16 is emulated" bf.out)" -eq 1 ] || fail "bf16 not said to be emulated once: $(cat bf.out)"
fi
finish
