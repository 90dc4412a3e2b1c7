# Distributed Muon (issue 25): --optimizer muon under FSDP 2, 4 and 8, HSDP
# 2x2, ZeRO-1 and ZeRO-2, DP 2, each --muon-dist strategy under FSDP 4 and HSDP, units by bytes (uneven pieces), a one-layer
# model over FSDP 8 (ranks that own nothing) and --grad-accum, against 1 rank
# over 200 steps from the same seed and global batch (max |delta loss| <=
# 1e-5); the same across 2 MPI processes (FSDP 2 and 4, HSDP 2x2); the
# deterministic mode's losses bit for bit at 1, 2 and 4 ranks (DP and FSDP:
# every owner's Newton–Schulz is the single-device kernel on the same bits);
# a stop and a resume under another plan bit for bit; the programs hold the
# distributed nodes (muon_pack, muon_orth, muon_apply, the all-to-alls) and no
# muon_update for a sharded matrix; tensor-parallel cuts (TP 2 and 4, DP 2 x
# TP 2 under every strategy, FSDP 2 x TP 2 under the single-owner ones, with
# uneven pieces too, FSDP 2 x TP 2 and HSDP 2x2 x TP 2 under every strategy),
# plan files replicating every matrix on two axes or cutting the QKV stacks by
# their first dimension the same against 1 rank; a matrix cut along two axes
# refused in one line naming it. The updated parameters and optimizer state bit for bit
# after 3 steps (every strategy; uneven pieces; ranks owning nothing). Teams
# of ranks iterating one matrix by row blocks (at the end).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 8 --seq 32 --steps 200 --val-every 100 --warmup 10 --lr 6e-4 --threads 2 --optimizer muon"
check_close() { # name reference metrics [steps, 200]
  read -r n m <<<"$(maxdiff "$2" "$3")"
  echo "$1: $n steps, max |delta loss| $m"
  [ "$n" -eq "${4:-200}" ] || fail "$1: $n steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-5) }' || fail "$1: max |delta loss| $m > 1e-5"
}
run() { # name flags...: a rank-thread run
  local name="$1"; shift
  "$HP" train $small "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || fail "$name failed: $(tail -2 "$name.log")"
}
run one
run dp2 --dp 2
run fsdp2 --fsdp 2
run fsdp4 --fsdp 4
run fsdp8 --fsdp 8
run hsdp --hsdp 2,2
run zero1 --zero 1 --dp 2
run zero2 --zero 2 --dp 2
run fsdp4u --fsdp 4 --fsdp-unit-bytes 64K
run tp2 --tp 2
run dp2tp2 --dp 2 --tp 2
run tp4 --tp 4
run fsdp2tp2 --fsdp 2 --tp 2
run fsdp2tp2u --fsdp 2 --tp 2 --fsdp-unit-bytes 16K
run hsdptp2 --hsdp 2,2 --tp 2
# plan files: every matrix replicated on two axes (dp=R tp=R); the QKV stacks cut by their first dimension
# (each rank whole matrices of its own: dp=B, and dp=R tp=B)
printf 'mesh: dp=2,tp=2\n' > rr.plan
printf 'mesh: dp=4\nparam h.*.attn.qkv.weight: S(0)@dp\n' > b4.plan
printf 'mesh: dp=2,tp=2\nparam h.*.attn.qkv.weight: S(0)@tp\n' > brr.plan
run rr --plan rr.plan
run b4 --plan b4.plan
run brr --plan brr.plan
for r in dp2 fsdp2 fsdp4 fsdp8 hsdp zero1 zero2 fsdp4u tp2 dp2tp2 tp4 fsdp2tp2 fsdp2tp2u hsdptp2 rr b4 brr; do check_close "$r" one.jsonl "$r.jsonl"; done
# every strategy of --muon-dist (who orthogonalises which matrix, and how the
# pieces travel) trains the same model (60 steps each: the layout's own runs
# above are the 200-step ones)
run one60 --steps 60
for st in round-robin zero1-gather all-to-all gather-all; do
  run "f4$st" --fsdp 4 --muon-dist "$st" --steps 60
  run "h$st" --hsdp 2,2 --muon-dist "$st" --steps 60
  run "t$st" --dp 2 --tp 2 --muon-dist "$st" --steps 60
  run "ft$st" --fsdp 2 --tp 2 --muon-dist "$st" --steps 60 --fsdp-unit-bytes 16K
  check_close "fsdp 2 x tp 2 (16K units) --muon-dist $st" one60.jsonl "ft$st.jsonl" 60
  run "ht$st" --hsdp 2,2 --tp 2 --muon-dist "$st" --steps 60
  check_close "hsdp 2x2 x tp 2 --muon-dist $st" one60.jsonl "ht$st.jsonl" 60
  check_close "fsdp4 --muon-dist $st" one60.jsonl "f4$st.jsonl" 60
  check_close "hsdp 2x2 --muon-dist $st" one60.jsonl "h$st.jsonl" 60
  check_close "dp 2 x tp 2 --muon-dist $st" one60.jsonl "t$st.jsonl" 60
done
expect_error "muon_dist: unknown strategy 'nope'" "$HP" train $small --fsdp 2 --steps 1 --muon-dist nope
# bf16 compute (fp32 master weights and momentum): FSDP 2, TP 2 and HSDP 2x2
# within 2e-3 of 1 rank's bf16 run over 100 steps (measured 6.8e-4 to 7.7e-4 on Zen 4; as cli/bf16's DP and TP:
# each rank rounds its own partial sums to bf16)
run b1 --dtype bf16 --steps 100
for p in "bf:--fsdp 2" "bt:--tp 2" "bh:--hsdp 2,2"; do
  # shellcheck disable=SC2086
  run "${p%%:*}" --dtype bf16 --steps 100 ${p#*:}
  read -r n m <<<"$(maxdiff b1.jsonl "${p%%:*}.jsonl")"
  echo "bf16 ${p#*:}: $n steps, max |delta loss| $m"
  awk -v m="$m" -v n="$n" 'BEGIN { exit !(m <= 2e-3 && n == 100) }' || fail "bf16 ${p#*:}: $n steps, max |delta loss| $m > 2e-3"
done
# one layer over 8 ranks: 4 matrices, so half the ranks own none
run one1 --layers 1
run fsdp8l1 --layers 1 --fsdp 8
check_close "fsdp8 (1 layer)" one1.jsonl fsdp8l1.jsonl
run acc1 --grad-accum 2
run acc4 --grad-accum 2 --fsdp 4
check_close "fsdp4 --grad-accum 2" acc1.jsonl acc4.jsonl
# the loss must really fall (the comparison is not of two flat lines)
awk -v a="$(losses fsdp4.jsonl | head -1)" -v b="$(losses fsdp4.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.0) }' || fail "loss did not fall"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 2 --metrics mpi2.jsonl >mpi2.log 2>&1 || fail "2-process FSDP 2 failed: $(tail -3 mpi2.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --fsdp 4 --metrics mpi4.jsonl >mpi4.log 2>&1 || fail "2-process FSDP 4 failed: $(tail -3 mpi4.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --hsdp 2,2 --metrics mpih.jsonl >mpih.log 2>&1 || fail "2-process HSDP 2x2 failed: $(tail -3 mpih.log)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --dp 2 --tp 2 --metrics mpit.jsonl >mpit.log 2>&1 || fail "2-process DP 2 x TP 2 failed: $(tail -3 mpit.log)"
for r in mpi2 mpi4 mpih mpit; do check_close "$r" one.jsonl "$r.jsonl"; done
# the deterministic mode: the same bits at 1, 2 and 4 ranks, and a stop at step 100 resumed under another plan
det="--deterministic --steps 200"
run d1 $det
run d2 $det --dp 2
run df2 $det --fsdp 2
run df4 $det --fsdp 4
run dz1 $det --zero 1 --dp 2
for r in d2 df2 df4 dz1; do cmp -s <(losses d1.jsonl) <(losses "$r.jsonl") || fail "deterministic $r: losses differ from 1 rank's"; done
[ "$(losses d1.jsonl | wc -l)" -eq 200 ] || fail "deterministic: $(losses d1.jsonl | wc -l) steps"
"$HP" train $small $det --fsdp 4 --stop-at 100 --ckpt-dir ck --ckpt-every 100 --metrics s1.jsonl >s1.log 2>&1 || fail "FSDP 4 to step 100 failed: $(tail -2 s1.log)"
"$HP" train --resume ck/step_000100 --dp 2 --metrics s2.jsonl >s2.log 2>&1 || fail "resume under DP 2 failed: $(tail -2 s2.log)"
cmp -s <(losses d1.jsonl) <(cat <(losses s1.jsonl) <(losses s2.jsonl)) || fail "stop under FSDP 4, resume under DP 2: losses differ from the uninterrupted run's"
"$HP" train --resume ck/step_000100 --ckpt-dir ck3 --fsdp 2 --metrics s3.jsonl >s3.log 2>&1 || fail "resume under FSDP 2 failed: $(tail -2 s3.log)"
cmp -s <(losses s2.jsonl) <(losses s3.jsonl) || fail "resume under FSDP 2: losses differ from the resume under DP 2"
# the updated parameters and optimizer state after 3 steps, bit for bit: under
# --deterministic (the same gradients' bits at any rank count) every strategy
# under FSDP 4 with 16 KiB units (uneven pieces), ZeRO-1 and a one-layer model
# over FSDP 8 (ranks that own nothing) against 1 rank; under HSDP 2x2 and HSDP
# 2x2 x TP 2 every strategy against layout's (the same plan: the same gradients)
pv="--steps 3 --val-every 0 --threads 1 --run-dir none --ckpt-every 0"
same_ckpt() { # name dir-a dir-b
  cmp -s "$2/step_000003/model.safetensors" "$3/step_000003/model.safetensors" || fail "$1: the parameters differ"
  cmp -s "$2/step_000003/optim.safetensors" "$3/step_000003/optim.safetensors" || fail "$1: the optimizer state differs"
}
"$HP" train $small $pv --deterministic --ckpt-dir pv1 >pv1.log 2>&1 || fail "1 rank, 3 steps: $(tail -2 pv1.log)"
for st in layout round-robin zero1-gather all-to-all gather-all; do
  "$HP" train $small $pv --deterministic --fsdp 4 --fsdp-unit-bytes 16K --muon-dist "$st" --ckpt-dir "pvf$st" >pv.log 2>&1 ||
    fail "FSDP 4 $st, 3 steps: $(tail -2 pv.log)"
  same_ckpt "FSDP 4 (16K units) --muon-dist $st vs 1 rank" pv1 "pvf$st"
  "$HP" train $small $pv --hsdp 2,2 --muon-dist "$st" --ckpt-dir "pvh$st" >pv.log 2>&1 || fail "HSDP $st, 3 steps: $(tail -2 pv.log)"
  same_ckpt "HSDP 2x2 --muon-dist $st vs layout" pvhlayout "pvh$st"
  "$HP" train $small $pv --hsdp 2,2 --tp 2 --fsdp-unit-bytes 16K --muon-dist "$st" --ckpt-dir "pvht$st" >pv.log 2>&1 ||
    fail "HSDP x TP $st, 3 steps: $(tail -2 pv.log)"
  same_ckpt "HSDP 2x2 x TP 2 (16K units) --muon-dist $st vs layout" pvhtlayout "pvht$st"
done
# exchange waves (--muon-waves): 1 and 3 give the same bits as the default 2 (FSDP, and HSDP x TP: the
# FSDP x TP path's waves)
for w in 1 3; do
  "$HP" train $small $pv --deterministic --fsdp 4 --fsdp-unit-bytes 16K --muon-waves "$w" --ckpt-dir "pvw$w" >pv.log 2>&1 ||
    fail "FSDP 4 --muon-waves $w, 3 steps: $(tail -2 pv.log)"
  same_ckpt "FSDP 4 (16K units) --muon-waves $w vs 2" pvflayout "pvw$w"
  "$HP" train $small $pv --hsdp 2,2 --tp 2 --fsdp-unit-bytes 16K --muon-waves "$w" --ckpt-dir "pvhw$w" >pv.log 2>&1 ||
    fail "HSDP x TP --muon-waves $w, 3 steps: $(tail -2 pv.log)"
  same_ckpt "HSDP 2x2 x TP 2 (16K units) --muon-waves $w vs 2" pvhtlayout "pvhw$w"
done
expect_error "--muon-waves must be in 1..64, got 0" "$HP" train $small --fsdp 2 --steps 1 --muon-waves 0
"$HP" train $small $pv --deterministic --zero 1 --dp 2 --ckpt-dir pvz >pv.log 2>&1 || fail "ZeRO-1, 3 steps: $(tail -2 pv.log)"
same_ckpt "ZeRO-1 vs 1 rank" pv1 pvz
"$HP" train $small $pv --deterministic --layers 1 --ckpt-dir pvl1 >pv.log 2>&1 || fail "1 layer, 3 steps: $(tail -2 pv.log)"
"$HP" train $small $pv --deterministic --layers 1 --fsdp 8 --ckpt-dir pvl8 >pv.log 2>&1 || fail "1 layer FSDP 8, 3 steps: $(tail -2 pv.log)"
same_ckpt "1 layer over FSDP 8 vs 1 rank" pvl1 pvl8
# validation mode checks every Muon matrix's update against one rank's
"$HP" train $small --fsdp 2 --steps 2 --validate >val.log 2>&1 || fail "--validate --fsdp 2 with Muon failed: $(tail -2 val.log)"
rows=$(awk '/Muon update equivalence/ { on = 1; next } /worst Muon update/ { on = 0 } on && / [0-9]+x[0-9]+x[0-9]+ / { n++ } END { print n + 0 }' val.log)
[ "$rows" -eq 8 ] || fail "--validate: $rows rows in the Muon update table, want 8: $(cat val.log)"
w=$(sed -n 's/.*worst Muon update error \([^ ]*\).*/\1/p' val.log)
awk -v w="$w" 'BEGIN { exit !(w != "" && w + 0 <= 1e-3) }' || fail "--validate: worst Muon update error '$w'"
# the programs: the distributed nodes, and no whole-matrix update of a shard
"$HP" plan $small --fsdp 4 --json p4.json >p4.txt 2>&1 || fail "plan --fsdp 4 failed: $(tail -2 p4.txt)"
python3 - <<'PY' || fail "plan --fsdp 4's program: see above"
import json
d = json.load(open("p4.json"))
opt = [q["note"] for q in d["passes"] if q["name"] == "optimizer"][0]
assert opt.startswith("muon"), opt
PY
"$HP" train $small --fsdp 4 --steps 1 --trace tr >tr.log 2>&1 || fail "traced FSDP 4 step failed: $(tail -2 tr.log)"
names=$(python3 -c 'import json,sys
for f in sys.argv[1:]:
    for e in json.load(open(f))["traceEvents"]: print(e.get("name", ""))' tr.rank*.json | sort -u)
for want in muon_pack muon_orth muon_apply all_to_all_v_start; do
  grep -q "$want" <<<"$names" || fail "the FSDP 4 step runs no $want"
done
grep -q '"muon_update' <<<"$names" && fail "the FSDP 4 step still runs muon_update on shards"
# the overlap (2 waves; whole-matrix owners, --muon-balance 0): rank 0 starts both waves' exchanges to the
# owners before its first Newton-Schulz, and the first wave's return before the second wave's Newton-Schulz
"$HP" train $small --fsdp 4 --steps 1 --muon-balance 0 --trace tw >tw.log 2>&1 || fail "traced FSDP 4 step (waves) failed: $(tail -2 tw.log)"
python3 - tw.rank0.json <<'PY' || fail "the waves do not overlap: see above"
import json, sys
ev = sorted((e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["ts"])
names = [e["name"] for e in ev]
i = next(k for k, n in enumerate(names) if n.startswith("muon_pack"))
seq = [n for n in names[i:] if n.startswith("muon_orth") or n == "all_to_all_v_start"]
assert seq[:5] == ["all_to_all_v_start", "all_to_all_v_start"] + [seq[2]] + ["all_to_all_v_start", seq[4]], seq
assert seq[2].startswith("muon_orth") and seq[4].startswith("muon_orth"), seq
PY
# gather-all gathers every member's pieces: no all-to-all
rm -f tr.rank*.json
"$HP" train $small --fsdp 4 --steps 1 --muon-dist gather-all --trace tr >tr.log 2>&1 || fail "traced gather-all step failed: $(tail -2 tr.log)"
names=$(python3 -c 'import json,sys
for f in sys.argv[1:]:
    for e in json.load(open(f))["traceEvents"]: print(e.get("name", ""))' tr.rank*.json | sort -u)
grep -q all_gather_v_start <<<"$names" || fail "gather-all runs no all_gather_v"
grep -q all_to_all_v_start <<<"$names" && fail "gather-all runs an all-to-all"
printf 'mesh: dp=2,tp=2\nparam h.*.mlp.fc.weight: S(0)@dp,S(1)@tp\n' > two.plan
expect_error "distributed Muon does not handle matrices cut along two mesh axes (rows and columns, or two tensor-parallel cuts) yet: 2 matrices are cut (h.0.mlp.fc.weight, h.1.mlp.fc.weight)" "$HP" train $small --plan two.plan --steps 1
expect_error "--adamw-params 'h.*.mlp.fc.weight'" "$HP" train $small --plan two.plan --steps 1
# teams (--muon-balance): a one-layer model of 256 channels, whose owners
# alone leave the busiest rank 1.14x the mean Newton–Schulz work at 2 ranks,
# is iterated by teams of ranks, 128-row blocks each (muon_team nodes on
# every rank): the updated parameters and optimizer state bit for bit
# against 1 rank after 3 steps (FSDP 2, FSDP 4 with 16K units, FSDP 8,
# ZeRO-1), TP 2 the same bits as TP 2 with whole-matrix owners
# (--muon-balance 0); 100-step losses within 1e-5 of 1 rank under FSDP 4,
# across 2 MPI processes and under TP 2; --validate's update check
tm="--layers 1 --heads 4 --channels 256 --batch 8 --seq 32 --optimizer muon --lr 6e-4"
"$HP" train $tm $pv --deterministic --ckpt-dir tv1 >pv.log 2>&1 || fail "teams model, 1 rank: $(tail -2 pv.log)"
for c in "f2:--fsdp 2" "f4:--fsdp 4 --fsdp-unit-bytes 16K" "f8:--fsdp 8" "z1:--zero 1 --dp 2"; do
  # shellcheck disable=SC2086
  "$HP" train $tm $pv --deterministic ${c#*:} --ckpt-dir "tv${c%%:*}" >pv.log 2>&1 || fail "teams ${c#*:}: $(tail -2 pv.log)"
  same_ckpt "teams ${c#*:} vs 1 rank" tv1 "tv${c%%:*}"
  # shellcheck disable=SC2086
  "$HP" train $tm ${c#*:} --steps 1 --val-every 0 --trace "tt${c%%:*}" >pv.log 2>&1 || fail "traced teams ${c#*:}: $(tail -2 pv.log)"
  n=$(python3 -c 'import json,sys
print(sum(any(e.get("name", "").startswith("muon_team[") for e in json.load(open(f))["traceEvents"]) for f in sys.argv[1:]))' "tt${c%%:*}".rank*.json)
  want=$(ls "tt${c%%:*}".rank*.json | wc -l)
  [ "$n" -eq "$want" ] && [ "$want" -ge 2 ] || fail "teams ${c#*:}: $n of $want ranks ran muon_team"
done
"$HP" train $tm $pv --tp 2 --ckpt-dir tvt >pv.log 2>&1 || fail "teams TP 2: $(tail -2 pv.log)"
"$HP" train $tm $pv --tp 2 --muon-balance 0 --ckpt-dir tvtn >pv.log 2>&1 || fail "TP 2, --muon-balance 0: $(tail -2 pv.log)"
same_ckpt "teams TP 2 vs whole-matrix owners" tvt tvtn
tl="--steps 100 --val-every 0 --warmup 10 --threads 2"
run tone $tm $tl
run tf4 $tm $tl --fsdp 4
run tt2 $tm $tl --tp 2
check_close "teams FSDP 4" tone.jsonl tf4.jsonl 100
check_close "teams TP 2" tone.jsonl tt2.jsonl 100
timeout 600 "${MPIRUN[@]}" "$HP" train $tm $tl --fsdp 2 --metrics tm2.jsonl >tm2.log 2>&1 || fail "teams across 2 processes failed: $(tail -3 tm2.log)"
check_close "teams FSDP 2, 2 processes" tone.jsonl tm2.jsonl 100
"$HP" train $tm --fsdp 2 --steps 2 --validate >tval.log 2>&1 || fail "--validate with teams failed: $(tail -2 tval.log)"
w=$(sed -n 's/.*worst Muon update error \([^ ]*\).*/\1/p' tval.log)
awk -v w="$w" 'BEGIN { exit !(w != "" && w + 0 <= 1e-3) }' || fail "--validate with teams: worst Muon update error '$w'"
expect_error "--muon-balance must be 0 (never) or >= 1, got 0.5" "$HP" train $tm --fsdp 2 --steps 1 --muon-balance 0.5
finish
