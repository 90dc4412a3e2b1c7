# Checkpoint directory hygiene (issue 11, defect 7, and the duplicate metrics
# records of 12): a second run writing into a checkpoint directory is refused
# naming the first one's pid, and a dead run's lock is taken over; leftovers
# of an interrupted save are cleaned up at start-up; a missing or dangling
# `latest` falls back to the newest complete step_*; --keep-last keeps the K
# newest; a resume drops the metrics records written after its step. (The
# crash at each step of a save: test_crash_ckpt.sh.)
. "$(dirname "$0")/lib.sh"
small="--layers 1 --heads 2 --channels 32 --max-seq 32 --batch 2 --seq 16 --val-steps 1 --val-every 0 --threads 1"
clean() { [ -z "$(ls -A "$1" | grep -v -E '^(latest|step_[0-9]+)$')" ] || fail "$2: left in $1: $(ls -A "$1" | tr '\n' ' ')"; }

# ---- the lock ----
"$HP" train $small --steps 100000000 --ckpt-dir ck >a.out 2>&1 &
a=$!
for _ in $(seq 600); do [ "$(cat ck/lock 2>/dev/null)" = "$a" ] && break; sleep 0.2; done
[ "$(cat ck/lock 2>/dev/null)" = "$a" ] || fail "the first run's lock file does not hold its pid $a"
expect_error "ck: another run (pid $a) is writing checkpoints into this directory" "$HP" train $small --steps 2 --ckpt-dir ck
expect_error "another run (pid $a)" "$HP" train $small --steps 2 --ckpt-dir ck/
kill -9 "$a"
wait "$a" 2>/dev/null
[ -f ck/lock ] || fail "kill -9 should leave the lock file"
"$HP" train $small --steps 2 --ckpt-dir ck >out.txt 2>&1 || fail "taking over a dead run's lock failed: $(cat out.txt)"
grep -q "ck: took over the lock of pid $a, which is no longer running" out.txt || fail "no note of the take-over: $(cat out.txt)"
[ ! -e ck/lock ] || fail "the lock file is left after the run"
# reading is not writing: sample and export need no lock
"$HP" train $small --steps 100000000 --ckpt-dir ck >a.out 2>&1 &
a=$!
for _ in $(seq 600); do [ "$(cat ck/lock 2>/dev/null)" = "$a" ] && break; sleep 0.2; done
"$HP" export --ckpt ck --llmc w.bin >out.txt 2>&1 || fail "export while another run holds the lock: $(cat out.txt)"
kill -9 "$a"
wait "$a" 2>/dev/null
rm -rf ck

# ---- retention ----
"$HP" train $small --steps 5 --ckpt-every 1 --ckpt-dir ck --keep-last 2 >/dev/null 2>&1 || fail "keep-last run failed"
[ "$(ls ck | tr '\n' ' ')" = "latest step_000004 step_000005 " ] || fail "keep-last 2: $(ls ck | tr '\n' ' ')"
"$HP" train --resume ck --steps 7 >/dev/null 2>&1 || fail "keep-last resume failed" # inherits --keep-last 2
[ "$(ls ck | tr '\n' ' ')" = "latest step_000006 step_000007 " ] || fail "keep-last after resume: $(ls ck | tr '\n' ' ')"
expect_error "--keep-last must be >= 0, got -1" "$HP" train $small --ckpt-dir ck2 --keep-last -1
expect_error "--keep-last needs --ckpt-dir" "$HP" train $small --keep-last 2 --run-dir none

# ---- leftovers of interrupted saves, cleaned at start-up ----
mkdir -p ck/step_000009.tmp-AbC123 ck/step_000003.del-XyZ789 ck/step_000007.old-Qq1Ww2
echo x >ck/step_000009.tmp-AbC123/model.safetensors
echo x >ck/latest.tmp-Zz9Zz9
"$HP" train $small --steps 2 --ckpt-dir ck --overwrite >out.txt 2>&1 || fail "start-up with leftovers: $(cat out.txt)"
grep -q "ck: recovered from an interrupted save: 0 checkpoints moved back, 4 temporaries removed" out.txt ||
  fail "no recovery note: $(cat out.txt)"
clean ck "start-up"
# a save that died between its renames: step_000007 moved aside, not back yet
mv ck/step_000007 ck/step_000007.old-Rr5Tt6
echo step_000007 >ck/latest
"$HP" train --resume ck --steps 8 >out.txt 2>&1 || fail "resume after a crash between the renames: $(cat out.txt)"
grep -q "resumed at step 7 from ck/step_000007.old-Rr5Tt6 " out.txt || fail "resumed from the wrong checkpoint: $(cat out.txt)"
grep -q "1 checkpoint moved back" out.txt || fail "no roll-back note: $(cat out.txt)"
clean ck "roll-back"

# ---- latest missing or dangling: the newest complete step_* ----
rm -rf ck
"$HP" train $small --steps 6 --ckpt-every 2 --ckpt-dir ck >/dev/null 2>&1 || fail "run for latest"
rm ck/latest
"$HP" train --resume ck --steps 7 >out.txt 2>&1 || fail "resume without latest: $(cat out.txt)"
grep -q "resumed at step 6 from ck/step_000006 " out.txt || fail "without latest: $(cat out.txt)"
[ "$(cat ck/latest)" = step_000007 ] || fail "latest after the resume: $(cat ck/latest)"
echo step_000099 >ck/latest
rm -rf ck/step_000007
"$HP" train --resume ck --steps 7 >out.txt 2>&1 || fail "resume with a dangling latest: $(cat out.txt)"
grep -q "resumed at step 6 from ck/step_000006 " out.txt || fail "dangling latest: $(cat out.txt)"
rm -rf ck/step_00000* ck/latest
expect_error "ck: no checkpoint: no 'latest' file and no complete step_* directory" "$HP" train --resume ck
rm -rf ck

# ---- metrics: a resume drops what the crashed run wrote after its step ----
"$HP" train $small --steps 6 --metrics full.jsonl >/dev/null 2>&1 || fail "uninterrupted run"
"$HP" train $small --steps 6 --metrics m.jsonl --ckpt-dir ck --stop-at 3 >/dev/null 2>&1 || fail "first part"
sed -n '4,5p' full.jsonl >>m.jsonl # as if the run had gone on to step 5, then crashed
printf '{"step": 6, "lo' >>m.jsonl
"$HP" train --resume ck >out.txt 2>&1 || fail "resume: $(cat out.txt)"
grep -q "m.jsonl: dropped 3 lines written after step 3 (the run resumed from there)" out.txt || fail "no note: $(cat out.txt)"
diff <(losses full.jsonl) <(losses m.jsonl) >/dev/null || fail "metrics after the resume: $(losses m.jsonl | tr '\n' ' ')"
finish
