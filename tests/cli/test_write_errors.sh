# Every write is checked (issue 11, defect 6): a full disk is an error naming
# the file, never a silent loss and never a half-written checkpoint; with
# --on-write-error warn a failed metrics or trace write is one warning and the
# run goes on. /dev/full stands in for a full disk where a file path will do;
# checkpoints, traces and exports go to a tiny tmpfs mounted in a user and
# mount namespace of the test's own (tests/cli/full_disk.sh), skipped with the
# reason printed where the machine does not allow one.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
small="--layers 1 --heads 2 --channels 32 --max-seq 32 --batch 2 --seq 16 --steps 4 --val-steps 1 --threads 1"

# metrics: the first record's write fails (ENOSPC)
expect_error "/dev/full: cannot write the metrics: No space left on device" "$HP" train $small --metrics /dev/full
# the same as a warning, once, and the run finishes
if "$HP" train $small --metrics /dev/full --on-write-error warn >out.txt 2>err.txt; then
  [ "$(grep -c . err.txt)" = 1 ] || fail "warn: expected one warning line: $(cat err.txt)"
  grep -q "^hyperpar: warning: /dev/full: cannot write the metrics: No space left on device; no more metrics are written" err.txt ||
    fail "warn: $(cat err.txt)"
  grep -q "trained 4 steps" out.txt || fail "warn: the run did not finish: $(cat out.txt)"
else
  fail "warn: the run failed: $(cat err.txt)"
fi
expect_error "--on-write-error must be fail or warn, got 'ignore'" "$HP" train $small --on-write-error ignore
# resuming with metrics on a device: nothing to cut, the write still fails
"$HP" train $small --ckpt-dir ck --stop-at 2 >/dev/null 2>&1 || fail "a checkpoint for the resume"
expect_error "/dev/full: cannot write the metrics: No space left on device" "$HP" train --resume ck --metrics /dev/full
# stdout on a full disk: the program's own output lost is an error too
if "$HP" train $small >/dev/full 2>err.txt; then fail "stdout on /dev/full: exit 0"; fi
grep -q "^hyperpar: stdout: cannot write the output: No space left on device" err.txt || fail "stdout: $(cat err.txt)"
# the JSON files of plan and bench
expect_error "/dev/full: cannot write the JSON report" "$HP" plan $small --json /dev/full
"$HP" bench --model small --steps 1 --threads 1 --json /dev/full >/dev/null 2>err.txt && fail "bench --json /dev/full: exit 0"
grep -q "/dev/full: cannot write the output: No space left on device" err.txt || fail "bench --json: $(cat err.txt)"

# a tiny tmpfs: checkpoints, traces, exports
if ! unshare -rm true 2>unshare.txt; then
  echo "SKIP: full-disk checks of checkpoints, traces and exports: no user and mount namespace here ($(head -1 unshare.txt))"
else
  unshare -rm bash "$here/full_disk.sh" "$HP" || fail "the full-disk checks failed (above)"
fi
finish
