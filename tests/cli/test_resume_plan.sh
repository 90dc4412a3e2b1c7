# Resume under a new plan (issue 21, items 1, 2 and 10; issue 22, item 6):
# plan flags given on the command line replace the checkpoint's plan as a
# whole, for every pair of 1 rank / DP / TP / FSDP / HSDP / ZeRO; a resumed
# run writes where it resumed from, never over a newer checkpoint or another
# run's without --overwrite; retention and the fallback without 'latest'
# keep to the run's lineage; a run directory keeps its last checkpoint and
# sample/export/resume accept the run directory.
. "$(dirname "$0")/lib.sh"
tiny="--layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --max-seq 16 --threads 2 --val-steps 1 --val-every 0 --run-dir none"

# name -> flags; the mesh the train header shows for it
plans=(one dp tp fsdp hsdp zero)
declare -A flags=([one]="--dp 1" [dp]="--dp 2" [tp]="--tp 2" [fsdp]="--fsdp 2" [hsdp]="--hsdp 2,1" [zero]="--zero 1 --dp 2")
declare -A says=([one]="now under 1 rank" [dp]="now under dp 2 " [tp]="now under tp 2 " [fsdp]="now under fsdp 2 "
                 [hsdp]="now under hsdp 2,1 " [zero]="now under zero-1 x dp 2 ")
# the losses of steps 3 and 4 with no interruption, on one rank
"$HP" train $tiny --steps 4 --metrics ref.jsonl >/dev/null 2>&1 || fail "reference run failed"
for a in "${plans[@]}"; do
  # shellcheck disable=SC2086
  "$HP" train $tiny --steps 4 --stop-at 2 --ckpt-dir "ck_$a" ${flags[$a]} >"a_$a.out" 2>&1 ||
    fail "$a: first half failed: $(tail -1 "a_$a.out")"
  for b in "${plans[@]}"; do
    [ "$a" = "$b" ] && continue
    rm -rf "ck_$a.$b" && cp -r "ck_$a" "ck_$a.$b"
    # shellcheck disable=SC2086
    if ! "$HP" train --resume "ck_$a.$b" ${flags[$b]} --metrics "m_$a.$b.jsonl" >"r_$a.$b.out" 2>&1; then
      fail "resume $a -> $b failed: $(tail -1 "r_$a.$b.out")"; continue
    fi
    grep -q "resumed at step 2 from ck_$a.$b/step_000002 (saved under " "r_$a.$b.out" ||
      fail "$a -> $b: no line saying what resumed: $(head -3 "r_$a.$b.out")"
    grep -qF "${says[$b]}" "r_$a.$b.out" || fail "$a -> $b: not said to run ${says[$b]}: $(grep resumed "r_$a.$b.out")"
    grep -q "the plan given now" "r_$a.$b.out" || fail "$a -> $b: not said that the plan given now replaced the checkpoint's"
    # the new plan's rank count, nothing of the old plan's mixed in
    case $b in
      one) grep -q "mesh" "r_$a.$b.out" && fail "$a -> 1 rank: still a mesh: $(grep mesh "r_$a.$b.out")" ;;
      *) grep -q "(2 ranks, 2 here)" "r_$a.$b.out" || fail "$a -> $b: not 2 ranks: $(grep mesh "r_$a.$b.out")" ;;
    esac
    [ -d "ck_$a.$b/step_000004" ] || fail "$a -> $b: the checkpoint did not go where it resumed from"
    # the same training: losses of steps 3 and 4 within float noise of the uninterrupted 1-rank run
    python3 - "ref.jsonl" "m_$a.$b.jsonl" <<'EOF' || fail "$a -> $b: losses differ from the uninterrupted run"
import json, sys
ref = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
got = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2])) if "loss" in r}
assert sorted(got) == [3, 4], got
for s in got:
    assert abs(got[s] - ref[s]) <= 1e-4 * abs(ref[s]), (s, got[s], ref[s])
EOF
  done
done
# without plan flags the checkpoint's plan is kept, and said so
"$HP" train --resume ck_fsdp --steps 5 >keep.out 2>&1 || fail "resume with the checkpoint's plan failed: $(tail -1 keep.out)"
grep -q "now under fsdp 2 (the checkpoint's plan)" keep.out || fail "the kept plan is not said: $(grep resumed keep.out)"

# a renamed checkpoint directory: the resumed run writes into the new name, never recreates the old
"$HP" train $tiny --steps 4 --stop-at 2 --ckpt-dir old_name >/dev/null 2>&1 || fail "run to rename failed"
mv old_name new_name
"$HP" train --resume new_name >ren.out 2>&1 || fail "resume of a renamed directory failed: $(tail -1 ren.out)"
[ -e old_name ] && fail "the resumed run recreated the old directory name"
[ -d new_name/step_000004 ] || fail "the resumed run did not write into the renamed directory"

# never over a newer checkpoint without --overwrite
"$HP" train $tiny --steps 6 --ckpt-every 1 --ckpt-dir nw >/dev/null 2>&1 || fail "6-step run failed"
expect_error "nw/step_000006 is newer than step 2" "$HP" train --resume nw/step_000002
grep -qF -- "--overwrite" err.txt || fail "the refusal does not name --overwrite: $(cat err.txt)"
[ -d nw/step_000006 ] && [ -d nw/step_000004 ] || fail "a refused resume touched the newer checkpoints"
# a fresh run (another seed) pointed at a finished run's directory is refused
expect_error "already holds another run's checkpoints (up to step_000006)" "$HP" train $tiny --steps 6 --seed 7 --ckpt-dir nw
# --ckpt-dir elsewhere is fine
"$HP" train --resume nw/step_000002 --ckpt-dir branch >/dev/null 2>&1 || fail "resume into another directory failed"
[ -d branch/step_000006 ] || fail "resume into another directory wrote nothing there"

# lineage: 10 steps keeping 4, then a branch from step 7 with another lr writing 8 and 9 (--overwrite) and keeping 2
"$HP" train $tiny --steps 10 --ckpt-every 1 --keep-last 4 --ckpt-dir lin >/dev/null 2>&1 || fail "10-step run failed"
[ "$(ls -d lin/step_* | wc -l)" -eq 4 ] || fail "keep-last 4 kept $(ls -d lin/step_* | wc -l)"
expect_error "lin/step_000010 is newer than step 7" "$HP" train --resume lin/step_000007 --lr 0.01 --stop-at 9 --keep-last 2
"$HP" train --resume lin/step_000007 --lr 0.01 --stop-at 9 --keep-last 2 --overwrite >lin.out 2>&1 ||
  fail "branch with --overwrite failed: $(tail -1 lin.out)"
run_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1/state.json"; }
first=$(run_of lin/step_000010) second=$(run_of lin/step_000009)
[ -n "$first" ] && [ "$first" != "$second" ] || fail "the branch and the first run share a run id ($first)"
[ "$(run_of lin/step_000008)" = "$second" ] || fail "step 8 is not the branch's"
# retention kept the branch's 2 newest (8, 9), did not count or delete the other lineage's step 10, and deleted 7
[ -d lin/step_000008 ] && [ -d lin/step_000009 ] || fail "the branch's checkpoints are missing: $(ls lin)"
[ -d lin/step_000010 ] || fail "retention deleted another lineage's step 10"
[ -e lin/step_000007 ] && fail "retention kept step 7 beyond the branch's 2 newest"
python3 - lin/step_000009/state.json "$first" <<'EOF' || fail "step 9 does not record its lineage"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["lineage"] == [{"run": sys.argv[2], "until": 7}], s["lineage"]
assert s["saved_ns"] > 0
EOF
[ "$(cat lin/latest)" = "step_000009" ] || fail "latest names $(cat lin/latest)"
# without 'latest' the fallback keeps to the lineage saved last: step 9, not the old run's step 10
rm lin/latest
"$HP" train --resume lin --steps 10 --overwrite --run-dir none >fb.out 2>&1 || fail "resume without latest failed: $(tail -1 fb.out)"
grep -q "resumed at step 9 from lin/step_000009 " fb.out || fail "the fallback did not pick the branch's step 9: $(grep resumed fb.out)"

# a run directory keeps the last checkpoint; its output ends with how to sample; sample, export and resume take it
"$HP" train --layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --max-seq 16 --threads 2 --val-steps 1 --steps 3 \
  --run-dir rd >rd.out 2>&1 || fail "run with a run directory failed: $(tail -1 rd.out)"
[ -f rd/ckpt/step_000003/state.json ] || fail "the run directory has no checkpoint: $(ls rd)"
tail -1 rd.out | grep -q "sample from it: .*hyperpar.* sample --ckpt rd" || fail "the output does not end with how to sample: $(tail -1 rd.out)"
"$HP" sample --ckpt rd --tokens 5 --prompt "ab" >/dev/null 2>s.err || fail "sample of a run directory failed: $(cat s.err)"
"$HP" export --ckpt rd --llmc rd.bin >/dev/null 2>e.err || fail "export of a run directory failed: $(cat e.err)"
"$HP" train --resume rd --steps 5 --run-dir rd2 >rr.out 2>&1 || fail "resume of a run directory failed: $(tail -1 rr.out)"
[ -d rd/ckpt/step_000005 ] || fail "the resumed run did not go on in the run directory's checkpoints"
"$HP" train --layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --max-seq 16 --threads 2 --val-steps 1 --steps 2 \
  --run-dir rn --ckpt-dir none >/dev/null 2>&1 || fail "--ckpt-dir none failed"
[ -e rn/ckpt ] && fail "--ckpt-dir none wrote a checkpoint"
expect_error "kept no checkpoints" "$HP" sample --ckpt rn --tokens 2
# a run directory holding another run's records is refused, naming its last step and --overwrite
expect_error "rd holds a run recorded up to step 3, past step 0" "$HP" train --layers 1 --heads 2 --channels 32 --batch 4 \
  --seq 16 --max-seq 16 --threads 2 --val-steps 1 --steps 2 --run-dir rd --ckpt-dir none
grep -qF -- "--overwrite" err.txt || fail "the run directory's refusal does not name --overwrite"
"$HP" train --layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --max-seq 16 --threads 2 --val-steps 1 --steps 2 \
  --run-dir rn --ckpt-dir none --overwrite >/dev/null 2>&1 || fail "--overwrite of a run directory failed"
finish
