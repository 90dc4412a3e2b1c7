# An error only one process sees at set-up (issue 11, defect 2: an unwritable
# --metrics path is opened by rank 0's process alone) ends every process at
# once: the processes agree on their set-up before the first step, so the
# others do not wait in their first collective for the comm timeout (300 s by
# default), and the failed process's message travels with the vote, so the
# root cause is printed whichever process mpirun lets print before it ends
# the job. `timeout 120` only guards against the hang coming back; the run
# itself takes a few seconds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 2 --threads 2"
timeout 120 "${MPIRUN[@]}" "$HP" train $small --dp 2 --metrics /nonexistent/dir/m.jsonl >out.txt 2>err.txt
rc=$?
[ "$rc" != 124 ] || fail "the processes hung after rank 0's set-up error"
[ "$rc" != 0 ] || fail "the run exited 0"
# the root cause is printed whichever process the launcher lets print first: rank 0's own error, or
# the other process's, which carries it ("another process failed to set up the run: ...")
grep -q "/nonexistent/dir/m.jsonl: cannot open the metrics file for writing" err.txt || fail "no process named the root cause: $(cat err.txt)"
if grep -q "hyperpar: another process failed to set up the run" err.txt; then
  grep -q "another process failed to set up the run: /nonexistent/dir/m.jsonl: cannot open the metrics file" err.txt ||
    fail "the other process's error lacks the root cause: $(cat err.txt)"
fi
# a good run under the same launcher still trains (the vote passes)
timeout 300 "${MPIRUN[@]}" "$HP" train $small --dp 2 --metrics ok.jsonl >out.txt 2>err.txt || fail "good run failed: $(tail -2 err.txt)"
[ "$(grep -c '"loss"' ok.jsonl)" = 2 ] || fail "good run: $(cat ok.jsonl)"
finish
