# Under mpirun (issue 11): progress goes to a log as plain lines every
# --log-every steps, not as terminal redraws (Open MPI hands each process a
# pseudo-terminal even when mpirun's own output is a file); rank 0's process
# locks the checkpoint directory alone and the run resumes from it; a metrics
# write that fails on rank 0's process (a full disk) ends every process at
# once ("another process failed at step 1: " and its error), not at the comm timeout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 1 --heads 2 --channels 32 --max-seq 32 --batch 4 --seq 16 --steps 10 --val-steps 1 --val-every 0 --threads 2"
timeout 300 "${MPIRUN[@]}" "$HP" train $small --dp 2 --log-every 4 --ckpt-dir ck --stop-at 8 --metrics m.jsonl \
  >out.txt 2>err.txt || fail "the run failed: $(tail -3 err.txt)"
if grep -q $'\r' out.txt || grep -q $'\033' out.txt; then fail "terminal redraws in the log: $(head -c 300 out.txt | od -c | head -5)"; fi
got=$(grep -o '^step [0-9]*/10' out.txt | tr '\n' ' ')
[ "$got" = "step 1/10 step 4/10 step 8/10 " ] || fail "step lines with --log-every 4: '$got'"
[ "$(ls -A ck | tr '\n' ' ')" = "latest step_000008 " ] || fail "checkpoint directory: $(ls -A ck | tr '\n' ' ')"
timeout 300 "${MPIRUN[@]}" "$HP" train --resume ck >out.txt 2>err.txt || fail "the resume failed: $(tail -3 err.txt)"
grep -q "resumed at step 8 " out.txt || fail "resume: $(cat out.txt)"
[ "$(grep -c '"loss"' m.jsonl)" = 10 ] || fail "metrics: $(cat m.jsonl)"
[ "$(ls -A ck | tr '\n' ' ')" = "latest step_000008 step_000010 " ] || fail "after the resume: $(ls -A ck | tr '\n' ' ')"
# a failed metrics write on rank 0's process only
timeout 120 "${MPIRUN[@]}" "$HP" train $small --dp 2 --steps 1000 --metrics /dev/full >out.txt 2>err.txt
rc=$?
[ "$rc" != 124 ] || fail "the processes hung after rank 0's metrics write failed"
[ "$rc" != 0 ] || fail "the run exited 0 with its metrics on a full disk"
# the root cause whichever process mpirun lets print first (the other process's error carries it)
grep -q "/dev/full: cannot write the metrics: No space left on device" err.txt || fail "no process named the root cause: $(cat err.txt)"
if grep -q "hyperpar: another process failed at step 1" err.txt; then
  grep -q "hyperpar: another process failed at step 1: /dev/full: cannot write the metrics" err.txt || fail "the other process: $(cat err.txt)"
fi
finish
