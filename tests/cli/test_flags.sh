# Every flag is validated at start with its name in the message, and output
# paths before the first step (issue 11, defect 11): NaN or negative values
# were accepted (or refused later naming a config field, not the flag),
# --init silently ignored conflicting shape flags, sample took --threads 1000,
# --dp 1000 on batch 2 spawned 1000 rank-threads, and a bad --ckpt-dir was
# found only at the first save.
. "$(dirname "$0")/lib.sh"
S=(--layers 1 --channels 32 --heads 2 --batch 2 --seq 16 --max-seq 16 --threads 1 --steps 2 --val-steps 1)
for f in grad-clip val-fraction lr beta1 eps comm-timeout min-lr-frac; do
  expect_error "hyperpar train: --$f: expected a finite number, got 'nan'" "$HP" train "${S[@]}" --$f nan
done
expect_error "hyperpar train: --lr: expected a finite number, got 'inf'" "$HP" train "${S[@]}" --lr inf
expect_error "hyperpar train: --lr: expected a finite number, got '1e39'" "$HP" train "${S[@]}" --lr 1e39
printf 'grad-clip = nan\n' > nan.cfg
expect_error "nan.cfg:1: key 'grad-clip': expected a finite number, got 'nan'" "$HP" train "${S[@]}" --config nan.cfg
expect_error "hyperpar train: --grad-clip must be >= 0, got -1" "$HP" train "${S[@]}" --grad-clip -1
expect_error "hyperpar train: --val-fraction must be in [0, 1), got -0.5" "$HP" train "${S[@]}" --val-fraction -0.5
expect_error "hyperpar train: --val-fraction must be in [0, 1), got 1" "$HP" train "${S[@]}" --val-fraction 1
expect_error "hyperpar train: --val-every must be >= 0" "$HP" train "${S[@]}" --val-every -1
expect_error "hyperpar train: --ckpt-every must be >= 0" "$HP" train "${S[@]}" --ckpt-every -1
expect_error "hyperpar train: --stop-at must be >= 0" "$HP" train "${S[@]}" --stop-at -1
expect_error "hyperpar train: --warmup must be >= 0" "$HP" train "${S[@]}" --warmup -3
expect_error "hyperpar train: --beta2 must be in [0, 1), got 1" "$HP" train "${S[@]}" --beta2 1
expect_error "hyperpar train: --log-every must be >= 1" "$HP" train "${S[@]}" --log-every 0
# ranks: refused before any thread is spawned
expect_error "hyperpar train: --dp 1000 is more than --batch 2" "$HP" train "${S[@]}" --dp 1000
expect_error "hyperpar train: --tp 4 is more than --heads 2" "$HP" train "${S[@]}" --tp 4
expect_error "hyperpar train: --dp 64 x --tp 128 is 8192 ranks, above the limit of 4096" \
  "$HP" train "${S[@]}" --dp 64 --tp 128 --batch 64 --heads 128 --channels 128
# --init sets the shape: a shape flag that disagrees is an error; one that agrees is fine
"$HP" train "${S[@]}" --ckpt-dir ck >/dev/null 2>err.txt || fail "the run to export: $(cat err.txt)"
"$HP" export --ckpt ck --llmc model.bin >/dev/null 2>err.txt || fail "export: $(cat err.txt)"
expect_error "hyperpar train: --layers 3 conflicts with --init model.bin, whose model has layers 1" \
  "$HP" train --init model.bin --layers 3 --steps 1 --threads 1
expect_error "hyperpar train: --channels 64 conflicts with --init model.bin, whose model has channels 32" \
  "$HP" train --init model.bin --channels 64 --steps 1 --threads 1
printf 'vocab = 512\n' > v.cfg
expect_error "hyperpar train: --vocab 512 conflicts with --init model.bin" "$HP" train --init model.bin --config v.cfg --steps 1
expect_error "hyperpar plan: --max-seq 32 conflicts with --init model.bin, whose model has max-seq 16" \
  "$HP" plan --init model.bin --max-seq 32 --batch 2 --seq 16 --dp 2
"$HP" train --init model.bin --layers 1 --heads 2 --batch 2 --seq 16 --steps 1 --threads 1 --val-steps 1 >/dev/null 2>err.txt ||
  fail "--init with agreeing shape flags: $(cat err.txt)"
# sample
expect_error "hyperpar sample: --threads must be in 1..256, got 1000" "$HP" sample --ckpt ck --threads 1000
expect_error "hyperpar sample: --temperature: expected a finite number, got 'nan'" "$HP" sample --ckpt ck --temperature nan
expect_error "hyperpar sample: --temperature must be >= 0 (0: greedy), got -1" "$HP" sample --ckpt ck --temperature -1 --threads 1
# output paths: checked before the first step, nothing left behind
touch afile
ls -A | grep -v "^before.txt$\|^after.txt$" > before.txt
expect_error "afile/ck: afile exists and is not a directory" \
  "$HP" train "${S[@]}" --ckpt-dir afile/ck --metrics m1.jsonl
expect_error "afile: exists and is not a directory" \
  "$HP" train "${S[@]}" --ckpt-dir afile --metrics m2.jsonl
grep -q "afile: afile" err.txt && fail "the path is named twice: $(cat err.txt)"
expect_error "afile/t: the trace file prefix cannot be created: afile is not a directory" \
  "$HP" train "${S[@]}" --trace afile/t --metrics m3.jsonl
ls -A | grep -v "^before.txt$\|^after.txt$" > after.txt
diff before.txt after.txt >/dev/null || fail "a refused run left files behind: $(diff before.txt after.txt | tr '\n' ' ')"
# a checkpoint directory that does not exist yet (parents included) is fine, and made at the first save
"$HP" train "${S[@]}" --ckpt-dir new/sub/ck >/dev/null 2>err.txt || fail "a new --ckpt-dir: $(cat err.txt)"
[ -d new/sub/ck/step_000002 ] || fail "no checkpoint in the new --ckpt-dir"
finish
