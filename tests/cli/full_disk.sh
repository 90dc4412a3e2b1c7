# Run by test_write_errors.sh inside `unshare -rm` (a user and mount namespace):
# a 320 KB tmpfs holds one checkpoint of the tiny model (~270 KB) but not two.
# A save that runs out of space is an error naming the file, leaves no
# temporary behind and the previous checkpoint and `latest` as they were; a
# trace, metrics or export into the full disk is an error naming the file.
. "$(dirname "$0")/lib.sh"
small="--layers 1 --heads 2 --channels 32 --max-seq 32 --batch 2 --seq 16 --steps 6 --val-steps 1 --threads 1"
mkdir full
if ! mount -t tmpfs -o size=320k tmpfs full 2>mount.txt; then
  echo "SKIP: full-disk checks: cannot mount a tmpfs in this namespace ($(head -1 mount.txt))"
  exit 0
fi
"$HP" train $small --ckpt-dir full/ck --ckpt-every 2 >out.txt 2>err.txt && fail "the second save did not run out of space"
grep -q "full/ck/step_000004.tmp-[A-Za-z0-9]*/[a-z]*.safetensors.*No space left on device" err.txt || fail "save: $(cat err.txt)"
[ "$(grep -c . err.txt)" = 1 ] || fail "save: not one line: $(cat err.txt)"
[ "$(ls -A full/ck | tr '\n' ' ')" = "latest step_000002 " ] || fail "save left: $(ls -A full/ck | tr '\n' ' ')"
[ "$(cat full/ck/latest)" = step_000002 ] || fail "latest: $(cat full/ck/latest)"
"$HP" export --ckpt full/ck --llmc w.bin >/dev/null 2>&1 || fail "the previous checkpoint does not load"
# fill what is left
head -c 1M /dev/zero >full/fill 2>/dev/null
expect_error "full/t.rank0.json: write failed: No space left on device" "$HP" train $small --steps 2 --trace full/t
[ -z "$(ls full | grep '\.tmp-')" ] || fail "trace left a temporary: $(ls full)"
"$HP" train $small --steps 2 --trace full/t --on-write-error warn >out.txt 2>err.txt || fail "trace warn: $(cat err.txt)"
grep -q "^hyperpar: warning: full/t.rank0.json: write failed: No space left on device; no more traces are written" err.txt ||
  fail "trace warn: $(cat err.txt)"
expect_error "full/m.jsonl: cannot write the metrics: No space left on device" "$HP" train $small --steps 2 --metrics full/m.jsonl
expect_error "full/w.bin: write failed: No space left on device" "$HP" export --ckpt full/ck --llmc full/w.bin
[ -z "$(ls full | grep '\.tmp-')" ] || fail "export left a temporary: $(ls full)"
expect_error "full/w5.bin: write failed: No space left on device" "$HP" export --ckpt full/ck --llmc full/w5.bin --llmc-dtype bf16
[ -z "$(ls full | grep '\.tmp-\|w5')" ] || fail "bf16 export left a file: $(ls full)"
umount full
finish
