# Crash injection (issue 11): a save is killed (SIGKILL, through the test
# hook HP_FAULT_AT of io/fault) at each of its steps — every file created,
# written, fsynced and renamed, every directory fsync, the renames of the
# checkpoint directory, the update of `latest`, the removals of retention —
# and then:
#   - the checkpoint a resume finds is the newest committed one (the previous
#     save when the kill fell before `latest` was renamed, else the new one),
#     and its weights are bit-identical to the same step of an uninterrupted
#     run (hyperpar export of both, compared byte for byte);
#   - the resumed run's losses equal the uninterrupted run's, each step once
#     in the metrics file (the killed run's records after the resumed step
#     are dropped);
#   - afterwards the directory holds only step_* and latest (no .tmp-,
#     .old-, .del- or lock), and latest names a complete checkpoint.
# Scenario "new": a save to a new name with --keep-last 1 (its retention
# deletes the older one); "replace": a save over an existing step_000004
# (moved aside, then deleted); "recover": the recovery of the worst crash
# (between the two renames of "replace") killed at each of its own steps.
# Prints the counts (kill trials, crash points, data lost) at the end.
. "$(dirname "$0")/lib.sh"
small="--layers 1 --heads 2 --channels 32 --max-seq 32 --batch 2 --seq 16 --steps 8 --val-steps 1 --val-every 0 --threads 1"

# The uninterrupted run: checkpoints at 2, 4, 6, 8, their weights exported.
"$HP" train $small --ckpt-dir ref --ckpt-every 2 --metrics ref.jsonl >/dev/null 2>&1 || fail "reference run failed"
for s in 2 4 6; do
  "$HP" export --ckpt ref/step_00000$s --llmc ref$s.bin >/dev/null 2>&1 || fail "export of reference step $s failed"
done
losses ref.jsonl | head -6 >ref6.txt

TRIALS=0 LOST=0 POINTS=0
lost() { fail "$*"; LOST=$((LOST + 1)); }

# killed_run POINT N CMD...: runs CMD with HP_FAULT_AT=POINT#N; it must die by SIGKILL there.
killed_run() {
  local point="$1" n="$2"; shift 2
  local rc=0
  { (HP_FAULT_AT="$point#$n" exec "$@") >kill.out 2>&1; } 2>/dev/null || rc=$? # no "Killed" notice
  [ "$rc" -eq 137 ] || fail "$point#$n: the run was not killed there (exit $rc)"
}

# check_after LABEL STEP: the checks after a kill, then a resume to step 6 and
# the checks of a clean directory.
check_after() {
  local label="$1" want="$2"
  TRIALS=$((TRIALS + 1))
  rm -f w.bin
  if ! "$HP" export --ckpt ck --llmc w.bin >exp.out 2>&1; then lost "$label: no checkpoint found: $(cat exp.out)"; return; fi
  cmp -s w.bin ref$want.bin || lost "$label: the checkpoint found is not step $want's weights, bit for bit"
  if ! "$HP" train --resume ck --stop-at 6 >res.out 2>&1; then lost "$label: resume failed: $(tail -1 res.out)"; return; fi
  grep -q "resumed at step $want " res.out || lost "$label: resumed at '$(grep -o 'resumed at step [0-9]*' res.out)', expected step $want"
  losses m.jsonl >got.txt
  diff -q got.txt ref6.txt >/dev/null || lost "$label: the metrics' losses differ from the uninterrupted run's (each step once): $(tr '\n' ' ' <got.txt)"
  local bad
  bad=$(ls -A ck | grep -v -E '^(latest|step_[0-9]+)$' | tr '\n' ' ')
  [ -z "$bad" ] || fail "$label: left in the checkpoint directory: $bad"
  [ -f "ck/$(cat ck/latest)/state.json" ] || fail "$label: latest names '$(cat ck/latest)', not a complete checkpoint"
}

# points FILE CMD...: the crash points CMD passes, in order, one per line.
points() {
  local file="$1"; shift
  rm -f "$file"
  (HP_FAULT_LOG="$PWD/$file" exec "$@") >/dev/null 2>&1 || fail "listing the crash points: $* failed"
}

# ---- new: a save of step 4 next to step 2, with retention ----
base_new() { rm -rf ck m.jsonl; "$HP" train $small --ckpt-dir ck --stop-at 2 --metrics m.jsonl >/dev/null 2>&1 || fail "new: base run failed"; }
base_new
points new.txt "$HP" train --resume ck --stop-at 4 --keep-last 1
committed=$(grep -n '^rename:latest$' new.txt | cut -d: -f1)
[ -n "$committed" ] || fail "new: the save does not rename latest"
i=0
while read -r p; do
  i=$((i + 1))
  n=$(head -n "$i" new.txt | grep -cxF -- "$p")
  base_new
  killed_run "$p" "$n" "$HP" train --resume ck --stop-at 4 --keep-last 1
  want=2; [ "$i" -gt "$committed" ] && want=4
  check_after "new $p#$n" "$want"
done <new.txt
POINTS=$((POINTS + i))

# ---- replace: a save of step 4 over an existing step_000004 ----
base_replace() { rm -rf ck m.jsonl; "$HP" train $small --ckpt-dir ck --ckpt-every 2 --stop-at 4 --metrics m.jsonl >/dev/null 2>&1 || fail "replace: base run failed"; }
base_replace
points replace.txt "$HP" train --resume ck/step_000002 --stop-at 4 --overwrite
grep -qx 'ckpt:rename-aside' replace.txt || fail "replace: the save does not move the old checkpoint aside"
i=0
while read -r p; do
  i=$((i + 1))
  n=$(head -n "$i" replace.txt | grep -cxF -- "$p")
  base_replace
  killed_run "$p" "$n" "$HP" train --resume ck/step_000002 --stop-at 4 --overwrite
  check_after "replace $p#$n" 4
done <replace.txt
POINTS=$((POINTS + i))

# ---- recover: the recovery after a kill between the renames, itself killed ----
crash_between() { base_replace; killed_run ckpt:rename-in 1 "$HP" train --resume ck/step_000002 --stop-at 4 --overwrite; }
crash_between
ls ck | grep -q '\.old-' || fail "recover: no checkpoint moved aside after a kill at ckpt:rename-in"
[ -e ck/step_000004 ] && fail "recover: step_000004 is there after a kill at ckpt:rename-in"
points recover_all.txt "$HP" train --resume ck --stop-at 6
sed '/^ckpt:mkdtemp$/,$d' recover_all.txt >recover.txt # the recovery: what comes before the first save
grep -qx 'recover:rename-back' recover.txt || fail "recover: the recovery does not move the old checkpoint back"
i=0
while read -r p; do
  i=$((i + 1))
  n=$(head -n "$i" recover.txt | grep -cxF -- "$p")
  crash_between
  killed_run "$p" "$n" "$HP" train --resume ck --stop-at 6
  check_after "recover $p#$n" 4
done <recover.txt
POINTS=$((POINTS + i))

echo "crash injection: $TRIALS kill trials at $POINTS crash points ($(wc -l <new.txt) new, $(wc -l <replace.txt) replace, $(wc -l <recover.txt) recover); data lost in $LOST"
[ "$TRIALS" -ge 100 ] || fail "only $TRIALS kill trials ran"
finish
